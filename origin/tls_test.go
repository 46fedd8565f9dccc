package origin_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/conn/conntest"
)

// tlsMode is how a test talks HTTPS: the version the client pins, the
// TLS 1.2 suite it offers (0: Go's default list), and the server's kTLS
// setting, with the kernel optionally replaced by the emulator.
type tlsMode struct {
	name    string
	version uint16
	suite   uint16
	ktls    origin.KTLSMode
	emulate bool
}

// tlsModes are the ways the conformance suite runs over HTTPS. On this
// kernel "auto" means userspace TLS (no kTLS; nothing attempted), "always"
// attempts the real setsockopt and falls back, and the emulated modes push
// every response through the hand-over with the kernel replaced by a
// userspace sealer, and every request through its opener, so a wrong
// key, IV or sequence number breaks the stock client's reads or the
// server's.
var tlsModes = []tlsMode{
	{name: "TLS1.2", version: tls.VersionTLS12, ktls: origin.KTLSAuto},
	{name: "TLS1.3", version: tls.VersionTLS13, ktls: origin.KTLSAuto},
	{name: "TLS1.3-ktls-always", version: tls.VersionTLS13, ktls: origin.KTLSAlways},
	{name: "TLS1.2-ktls-emulated-AES256", version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, ktls: origin.KTLSAlways, emulate: true},
	{name: "TLS1.2-ktls-emulated-ChaCha20", version: tls.VersionTLS12, suite: tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, ktls: origin.KTLSAlways, emulate: true},
	{name: "TLS1.3-ktls-emulated", version: tls.VersionTLS13, ktls: origin.KTLSAlways, emulate: true},
}

func (m *tlsMode) clientConfig() *tls.Config {
	cfg := &tls.Config{RootCAs: testCert().Pool, MinVersion: m.version, MaxVersion: m.version, NextProtos: []string{"http/1.1"}}
	if m.suite != 0 {
		cfg.CipherSuites = []uint16{m.suite}
	}
	return cfg
}

// startServerTLS runs a server whose one listener is HTTPS in mode m.
func startServerTLS(t *testing.T, root string, mod func(*origin.Config), m tlsMode) *testServer {
	t.Helper()
	return startServerMode(t, root, mod, &m)
}

// checkTLSPaths: the counters agree with the mode. No body went out by
// plain sendfile; without a kTLS kernel every body was copied (pooled
// buffer, one record per write); emulated modes handed every connection
// over.
func checkTLSPaths(t *testing.T, ts *testServer, m tlsMode) {
	t.Helper()
	st := ts.srv.Stats()
	tr, tl := st.Transport, st.TLS
	if n := tr.SendfileResponses; n != 0 {
		t.Errorf("%s: SendfileResponses = %d over TLS, want 0", m.name, n)
	}
	kernel := kernelHasKTLS(ts) && m.ktls != origin.KTLSOff && !m.emulate
	if !kernel && tr.KTLSResponses != 0 {
		t.Errorf("%s: KTLSResponses = %d without a kTLS kernel", m.name, tr.KTLSResponses)
	}
	if !kernel && tr.CopyBytes > 0 && tr.CopyResponses == 0 {
		t.Errorf("%s: CopyBytes %d but no CopyResponses", m.name, tr.CopyBytes)
	}
	hs := tl.Handshakes
	switch {
	case m.emulate:
		// Both directions: requests were read as the kernel would open
		// them (the emulator reads the socket).
		if tl.KTLSOffloaded != hs || tl.PathKTLSBoth != hs {
			t.Errorf("%s: KTLSOffloaded = %d, on path ktls %d, of %d handshakes; want all", m.name, tl.KTLSOffloaded, tl.PathKTLSBoth, hs)
		}
	case m.ktls == origin.KTLSAlways && !kernel:
		if tl.KTLSULPFailed != hs || tl.KTLSOffloaded != 0 {
			t.Errorf("%s: KTLSULPFailed = %d of %d handshakes, KTLSOffloaded %d; want all, 0", m.name, tl.KTLSULPFailed, hs, tl.KTLSOffloaded)
		}
	case m.ktls == origin.KTLSAuto && !kernel:
		if n := tl.KTLSULPFailed + tl.KTLSOffloaded + tl.KTLSUnsupported; n != 0 {
			t.Errorf("%s: %d hand-over attempts after a failed probe, want 0", m.name, n)
		}
	}
	checkTLSTransport(t, ts, m, kernel)
}

// checkTLSTransport: every handshaken connection is counted where it was
// served. The emulator's connections stay on their goroutine (only the
// kernel's own receive side can be read by a loop), with both directions
// handed over; every other goes to the event loops (the default engine),
// crypto/tls sealing and opening on the loop without a kTLS kernel, the
// kernel with one; with -engine fasthttp all stay on their goroutines.
func checkTLSTransport(t *testing.T, ts *testServer, m tlsMode, kernel bool) {
	t.Helper()
	// A connection is counted where it went just after its handshake:
	// one the client closed at once may still be on its way (up to 5 s).
	tl := ts.srv.Stats().TLS
	transports := func() int64 {
		return tl.TransportLoopKTLS + tl.TransportLoopUserspace + tl.TransportStreamKTLS + tl.TransportStreamKTLSTX + tl.TransportStreamUserspace
	}
	stream := ts.cfg.Engine == origin.EngineFastHTTP
	for i := 0; i < 100 && transports() != tl.Handshakes; i++ {
		time.Sleep(50 * time.Millisecond)
		tl = ts.srv.Stats().TLS
	}
	hs := tl.Handshakes
	if n := transports(); n != hs {
		t.Errorf("%s: %d connections counted by transport, of %d handshakes", m.name, n, hs)
	}
	if n := tl.HandOffDetach + tl.HandOffEngine + tl.HandOffLimit; n != 0 {
		t.Errorf("%s: %d failed hand-overs to the loops, want 0", m.name, n)
	}
	switch {
	case m.emulate && tl.TransportStreamKTLS != hs:
		t.Errorf("%s: %d connections on stream_ktls, of %d handshakes; want all", m.name, tl.TransportStreamKTLS, hs)
	case !m.emulate && !kernel && stream && tl.TransportStreamUserspace != hs:
		t.Errorf("%s: %d connections on stream_userspace, of %d handshakes; want all", m.name, tl.TransportStreamUserspace, hs)
	case !m.emulate && !kernel && !stream && tl.TransportLoopUserspace != hs:
		t.Errorf("%s: %d connections on loop_userspace, of %d handshakes; want all", m.name, tl.TransportLoopUserspace, hs)
	case !m.emulate && kernel && !stream && tl.TransportLoopKTLS != hs:
		// A kTLS kernel (4.17 and later opens records): every
		// connection is served by the event loops.
		t.Errorf("%s: %d connections on loop_ktls, of %d handshakes; want all", m.name, tl.TransportLoopKTLS, hs)
	}
}

// kernelHasKTLS: the server's start-up probe found kTLS.
func kernelHasKTLS(ts *testServer) bool {
	for i, a := range ts.srv.BodyPaths() {
		if a == "ktls" {
			return ts.srv.BodyPaths()[i+1] == true
		}
	}
	return false
}

// TestTLSCopyPathCounted: over HTTPS on this kernel the copy path serves
// every body shape, byte-exact, and the counters say so (on a kTLS kernel
// the kTLS counters do).
func TestTLSCopyPathCounted(t *testing.T) {
	for _, m := range tlsModes[:2] {
		t.Run(m.name, func(t *testing.T) {
			ts := startServerTLS(t, "", nil, m)
			writeSynth(t, ts.root, "w1/seg.m4s", 2<<20)
			writeSynth(t, ts.root, "w2/big.mp4", 8<<20)
			c := ts.dial()
			mustBody(t, c.do("GET", "/w1/seg.m4s"), synthBytes("seg.m4s", 0, 2<<20), "W1 2 MiB")
			r := c.do("GET", "/w2/big.mp4", "Range: bytes=1048576-1310719")
			mustStatus(t, r, 206, "W2 256 KiB range")
			mustBody(t, r, synthBytes("big.mp4", 1<<20, 256<<10), "W2 256 KiB range")
			mp := c.do("GET", "/w2/big.mp4", "Range: bytes=0-99,4000000-4000099")
			mustStatus(t, mp, 206, "multipart")
			tr := func() origin.TransportStats { return ts.srv.Stats().Transport }
			want := int64(2<<20 + 256<<10 + len(mp.body))
			if kernelHasKTLS(ts) {
				waitFor(t, 5*time.Second, "three kTLS responses counted", func() bool { return tr().KTLSResponses >= 3 })
				if tr().KTLSResponses != 3 || tr().KTLSBytes != want {
					t.Errorf("kTLS kernel: KTLSResponses %d, KTLSBytes %d; want 3, %d", tr().KTLSResponses, tr().KTLSBytes, want)
				}
				return
			}
			// Counted after the last byte is handed to the kernel, which may
			// be after the client read it.
			waitFor(t, 5*time.Second, "three copy responses counted", func() bool { return tr().CopyResponses >= 3 })
			if tr().CopyResponses != 3 || tr().CopyBytes != want || tr().KTLSResponses != 0 {
				t.Errorf("CopyResponses %d, CopyBytes %d, KTLSResponses %d; want 3, %d, 0",
					tr().CopyResponses, tr().CopyBytes, tr().KTLSResponses, want)
			}
		})
	}
}

// TestTLSFallbackServes: -ktls=always on this kernel: each connection's
// setsockopt(TCP_ULP) is refused (ENOENT), counted, and the response is
// still exact.
func TestTLSFallbackServes(t *testing.T) {
	m := tlsModes[2]
	ts := startServerTLS(t, "", nil, m)
	writeSynth(t, ts.root, "seg.m4s", 300_000)
	for i := range 3 {
		r := ts.get("/seg.m4s", "Range: bytes=1000-")
		mustBody(t, r, synthBytes("seg.m4s", 1000, 299_000), fmt.Sprintf("connection %d", i))
	}
	tl := ts.srv.Stats().TLS
	if kernelHasKTLS(ts) {
		t.Skipf("this kernel has kTLS: %d connections offloaded", tl.KTLSOffloaded)
	}
	if tl.Handshakes != 3 || tl.KTLSULPFailed != 3 || tl.KTLSOffloaded != 0 {
		t.Errorf("Handshakes %d, KTLSULPFailed %d, KTLSOffloaded %d; want 3, 3, 0",
			tl.Handshakes, tl.KTLSULPFailed, tl.KTLSOffloaded)
	}
	// Counted after the last byte is handed to the kernel, which may be
	// after the client read it.
	copies := func() int64 { return ts.srv.Stats().Transport.CopyResponses }
	waitFor(t, 5*time.Second, "three copy responses counted", func() bool { return copies() >= 3 })
	if n := copies(); n != 3 {
		t.Errorf("CopyResponses = %d, want 3", n)
	}
}

// TestTLSEmulatedKTLSKeepAlive: through the emulated kernel, the
// header and the body of a response arrive in one stream of records the
// stock client decrypts, and the next keep-alive responses continue the
// sequence (five of 100 kB: at least 35 records sealed).
func TestTLSEmulatedKTLSKeepAlive(t *testing.T) {
	for _, m := range tlsModes[3:] {
		t.Run(m.name, func(t *testing.T) {
			ts := startServerTLS(t, "", nil, m)
			writeSynth(t, ts.root, "seg.m4s", 100_000)
			c := ts.dial()
			for i := range 5 {
				mustBody(t, c.do("GET", "/seg.m4s"), synthBytes("seg.m4s", 0, 100_000), fmt.Sprintf("request %d", i))
			}
			c.conn.Close()
			if n := ts.emu.Records.Load(); n < 5*7 {
				t.Errorf("emulator sealed %d records for 5 responses of 100 kB, want >= 35", n)
			}
		})
	}
}

// TestTLSAbortReleasesFile: over HTTPS too, clients that vanish mid-body
// or stop reading end their responses (write timeout), release the file,
// and give their connection slot back.
func TestTLSAbortReleasesFile(t *testing.T) {
	ts := startServerTLS(t, "", func(c *origin.Config) {
		c.CacheFiles = 0
		c.WriteTimeout = 300 * time.Millisecond
	}, tlsModes[1])
	writeSynth(t, ts.root, "big.mp4", 64<<20)
	var idle []net.Conn
	for i := range 10 {
		raw, err := net.Dial("tcp", ts.addr)
		if err != nil {
			t.Fatal(err)
		}
		raw.(*net.TCPConn).SetReadBuffer(8192)
		cfg := ts.tls.Clone()
		cfg.ServerName = "127.0.0.1"
		c := tls.Client(raw, cfg)
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "GET /big.mp4 HTTP/1.1\r\nHost: t\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			io.ReadFull(c, make([]byte, 32<<10))
			raw.(*net.TCPConn).SetLinger(0)
			raw.Close()
			continue
		}
		idle = append(idle, raw)
	}
	st := ts.srv.Stats
	waitFor(t, 15*time.Second, "every aborted response to release its file", func() bool {
		return ts.srv.CacheStats().OpenFiles == 0 && st().Transport.Aborted == 10
	})
	for _, c := range idle {
		c.Close()
	}
	waitFor(t, 15*time.Second, "every connection slot back", func() bool { return st().ConnsOpen == 0 })
}

// TestTLSPolicy: TLS 1.2 minimum, AEAD suites only, ALPN http/1.1.
func TestTLSPolicy(t *testing.T) {
	ts := startServerTLS(t, "", nil, tlsModes[1])
	writeFile(t, ts.root, "x.m3u8", "#EXTM3U\n")
	dial := func(cfg *tls.Config) (*tls.Conn, error) {
		return tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ts.addr, cfg)
	}
	base := tlsModes[1].clientConfig()
	tests := []struct {
		name string
		mod  func(*tls.Config)
		ok   bool
	}{
		{"TLS 1.1 refused", func(c *tls.Config) { c.MinVersion, c.MaxVersion = tls.VersionTLS10, tls.VersionTLS11 }, false},
		{"CBC suite refused", func(c *tls.Config) {
			c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
			c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256}
		}, false},
		{"TLS 1.2 ECDHE-ECDSA-AES256-GCM", func(c *tls.Config) {
			c.MinVersion, c.MaxVersion = tls.VersionTLS12, tls.VersionTLS12
			c.CipherSuites = []uint16{tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384}
		}, true},
		{"ALPN http/1.1", func(c *tls.Config) { c.NextProtos = []string{"h2", "http/1.1"} }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := base.Clone()
			tt.mod(cfg)
			c, err := dial(cfg)
			if (err == nil) != tt.ok {
				t.Fatalf("handshake error %v, want ok=%v", err, tt.ok)
			}
			if err == nil {
				if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
					t.Errorf("ALPN = %q, want http/1.1", p)
				}
				c.Close()
			}
		})
	}
	// Plain HTTP to the HTTPS port: a failed handshake, counted, not served.
	c, err := net.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /x.m3u8 HTTP/1.1\r\nHost: t\r\n\r\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	c.Close()
	if bytes.Contains(b, []byte("EXTM3U")) {
		t.Errorf("plain HTTP on the HTTPS port was served")
	}
	waitFor(t, 5*time.Second, "HandshakeErrors >= 3", func() bool { return ts.srv.Stats().TLS.HandshakeErrors >= 3 })
}

// TestTLSCertificateReload: a changed certificate file is picked up by
// the poll, a broken one leaves the previous pair in service, and
// ReloadCertificates (SIGHUP) reloads at once.
func TestTLSCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	a, b := conntest.NewCert(t, "cert-a"), conntest.NewCert(t, "cert-b")
	a.Write(t, certFile, keyFile)
	ts := startServerTLS(t, "", func(c *origin.Config) {
		c.TLS.CertFile, c.TLS.KeyFile = certFile, keyFile
		c.TLS.ReloadEvery = 20 * time.Millisecond
	}, tlsModes[1])
	pool := x509.NewCertPool()
	pool.AddCert(a.Leaf)
	pool.AddCert(b.Leaf)
	ts.tls.RootCAs = pool
	served := func() string {
		t.Helper()
		c := ts.dial()
		defer c.conn.Close()
		return c.conn.(*tls.Conn).ConnectionState().PeerCertificates[0].Subject.CommonName
	}
	if got := served(); got != "cert-a" {
		t.Fatalf("serving %q at start, want cert-a", got)
	}
	st := func() origin.TLSStats { return ts.srv.Stats().TLS }
	b.Write(t, certFile, keyFile)
	waitFor(t, 5*time.Second, "the poll to load cert-b", func() bool { return st().CertReloads == 1 })
	if got := served(); got != "cert-b" {
		t.Fatalf("serving %q after the files changed, want cert-b", got)
	}
	// A key that does not match the certificate: cert-b stays.
	a.WriteKey(t, keyFile)
	waitFor(t, 5*time.Second, "the failed reload", func() bool { return st().CertReloadFails >= 1 })
	if got := served(); got != "cert-b" {
		t.Fatalf("serving %q after a broken reload, want cert-b", got)
	}
	if err := ts.srv.ReloadCertificates(); err == nil {
		t.Errorf("ReloadCertificates with a mismatched key: no error")
	}
	a.Write(t, certFile, keyFile)
	if err := ts.srv.ReloadCertificates(); err != nil {
		t.Fatalf("ReloadCertificates: %v", err)
	}
	if got := served(); got != "cert-a" {
		t.Fatalf("serving %q after ReloadCertificates, want cert-a", got)
	}
}

// TestTLSDevCertificate: -tls-dev serves a self-signed certificate for
// localhost and 127.0.0.1 without any file.
func TestTLSDevCertificate(t *testing.T) {
	ts := startServerTLS(t, "", func(c *origin.Config) {
		c.TLS = origin.TLSConfig{Dev: true, KTLS: origin.KTLSAuto}
	}, tlsModes[1])
	writeFile(t, ts.root, "x.m3u8", "#EXTM3U\n")
	cfg := ts.tls.Clone()
	cfg.InsecureSkipVerify = true // self-signed: checked by hand below
	c, err := tls.Dial("tcp", ts.addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	leaf := c.ConnectionState().PeerCertificates[0]
	c.Close()
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("dev certificate does not verify for %s: %v", host, err)
		}
	}
	ts.tls.RootCAs = pool
	mustBody(t, ts.get("/x.m3u8"), []byte("#EXTM3U\n"), "GET over -tls-dev")
	if err := ts.srv.ReloadCertificates(); err != nil {
		t.Errorf("ReloadCertificates with -tls-dev: %v, want nil (nothing to reload)", err)
	}
}

func TestTLSConfigValidation(t *testing.T) {
	root := t.TempDir()
	tests := []struct {
		name string
		tls  origin.TLSConfig
		want string
	}{
		{"cert without key", origin.TLSConfig{CertFile: "c.pem"}, "give both"},
		{"dev and files", origin.TLSConfig{Dev: true, CertFile: "c.pem", KeyFile: "k.pem"}, "excludes"},
		{"bad ktls mode", origin.TLSConfig{Dev: true, KTLS: "sometimes"}, "ktls"},
		{"missing files", origin.TLSConfig{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}, "no such file"},
	}
	for _, tt := range tests {
		cfg := origin.DefaultConfig()
		cfg.Root, cfg.Watch, cfg.TLS = root, false, tt.tls
		_, err := origin.New(cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: New error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
	// An HTTPS listener on a server without a certificate.
	cfg := origin.DefaultConfig()
	cfg.Root, cfg.Watch = root, false
	srv, err := origin.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Run(t.Context(), time.Second, origin.TLSListener(ln)); err == nil || !strings.Contains(err.Error(), "no certificate") {
		t.Errorf("Run with an HTTPS listener and no certificate: %v", err)
	}
}

// testCert is the certificate of every HTTPS test server but the reload
// tests', made once per test binary.
var testCert = sync.OnceValue(func() *conntest.Cert {
	p, err := conntest.MakeCert("segorigin test")
	if err != nil {
		panic(err)
	}
	return p
})

// writeTestCert writes testCert's files into a fresh temp dir.
func writeTestCert(t testing.TB) (certFile, keyFile string) {
	t.Helper()
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	testCert().Write(t, certFile, keyFile)
	return certFile, keyFile
}

// TestTLSPlainHTTPRequest: a plain HTTP request sent to the HTTPS port
// (a CDN whose origin protocol is set to http on port 443) gets a plain
// 400 that says why, on every TLS mode, and the connection then closes;
// it is counted apart from other failed handshakes. A stray byte stream
// that is not HTTP still gets nothing.
func TestTLSPlainHTTPRequest(t *testing.T) {
	for _, m := range tlsModes {
		t.Run(m.name, func(t *testing.T) {
			ts := startServerTLS(t, "", nil, m)
			nc, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			nc.SetDeadline(time.Now().Add(5 * time.Second))
			if _, err := io.WriteString(nc, "GET /a.txt HTTP/1.1\r\nHost: t\r\nUser-Agent: x\r\n\r\n"); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(nc)
			if err != nil {
				t.Fatalf("reading the answer: %v (got %q)", err, got)
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(got)), nil)
			if err != nil {
				t.Fatalf("answer %q: %v", got, err)
			}
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != 400 || !strings.Contains(string(body), "HTTPS port") || !resp.Close {
				t.Errorf("answer %d %q (close %v), want 400 naming the HTTPS port, then close", resp.StatusCode, body, resp.Close)
			}
			if st := ts.srv.Stats().TLS; st.PlainHTTP != 1 || st.HandshakeErrors != 1 {
				t.Errorf("PlainHTTP %d, HandshakeErrors %d; want 1, 1", st.PlainHTTP, st.HandshakeErrors)
			}

			junk, err := net.Dial("tcp", ts.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer junk.Close()
			junk.SetDeadline(time.Now().Add(5 * time.Second))
			io.WriteString(junk, "\x00\x01\x02\x03\x04\x05\x06\x07")
			if got, _ := io.ReadAll(junk); len(got) != 0 {
				t.Errorf("a byte stream neither TLS nor HTTP got %q, want nothing", got)
			}
		})
	}
}
