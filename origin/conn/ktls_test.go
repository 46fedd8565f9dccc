package conn_test

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"segorigin/internal/ktlstest"
	"segorigin/internal/testreq"
	"segorigin/origin/conn"
	"segorigin/origin/ktls"
)

// newKTLSTest is an HTTPS side with a development certificate whose
// connections always try the hand-over (mode KTLSAlways unless given),
// and a client configuration that trusts it. Tests drive connections by
// hand (acceptTLS); no server runs.
func newKTLSTest(t *testing.T, mode ...conn.KTLSMode) (*conn.TLS, *tls.Config) {
	t.Helper()
	m := conn.KTLSAlways
	if len(mode) > 0 {
		m = mode[0]
	}
	s, err := conn.NewTLS(conn.TLSParams{
		Config: conn.TLSConfig{Dev: true, KTLS: m},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(conn.Leaf(s))
	return s, &tls.Config{RootCAs: pool, ServerName: "localhost"}
}

// tlsConn is what the HTTPS listener yields.
type tlsConn interface {
	net.Conn
	Handshake() error
}

// acceptTLS listens on loopback, runs dial in a goroutine, and returns the
// server side of the one connection as a server's HTTPS listener yields
// it (a gate's listener under s).
func acceptTLS(t *testing.T, s *conn.TLS, dial func(addr string)) tlsConn {
	t.Helper()
	gl, addr := gateListener(t)
	wl := s.Wrap(gl)
	go dial(addr)
	c, err := wl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	tc := c.(tlsConn)
	t.Cleanup(func() { tc.Close() })
	tc.SetDeadline(time.Now().Add(10 * time.Second))
	return tc
}

// goClient dials with a stock crypto/tls client pinned to one version and
// suite, writes send, and returns what it reads until EOF (and the error,
// if any).
func goClient(base *tls.Config, version, suite uint16, send ...string) (dial func(string), result <-chan clientResult) {
	ch := make(chan clientResult, 1)
	return func(addr string) {
		cfg := base.Clone()
		cfg.MinVersion, cfg.MaxVersion = version, version
		if version == tls.VersionTLS12 {
			cfg.CipherSuites = []uint16{suite}
		}
		c, err := tls.Dial("tcp", addr, cfg)
		if err != nil {
			ch <- clientResult{err: err}
			return
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		for _, p := range send {
			c.Write([]byte(p))
		}
		b, err := io.ReadAll(c)
		cs := c.ConnectionState()
		ch <- clientResult{data: b, err: err, suite: cs.CipherSuite, resumed: cs.DidResume}
	}, ch
}

type clientResult struct {
	data    []byte
	err     error
	suite   uint16
	resumed bool
}

// handOverAndSend runs the handshake (which hands over to the emulator),
// writes msg as application data and closes with close_notify, all
// through the emulated kernel.
func handOverAndSend(t *testing.T, s *conn.TLS, tc tlsConn, msg string) {
	t.Helper()
	if err := tc.Handshake(); err != nil {
		t.Fatalf("Handshake: %v", err)
	}
	if !conn.HandedOver(tc) {
		t.Fatalf("no hand-over after the handshake (stats %+v)", s.Stats().KTLSUnsupported.Load())
	}
	if _, err := tc.Write([]byte(msg)); err != nil {
		t.Fatalf("Write: %v", err)
	}
	if err := tc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

var derivationCases = []struct {
	name    string
	version uint16
	suite   uint16
	cipher  ktls.Cipher
	seq     uint64 // the first record's sequence number at hand-over
}{
	// TLS 1.2: the server's Finished was record 0 under the new keys.
	{"TLS1.2/AES-128-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, ktls.AES128GCM, 1},
	{"TLS1.2/AES-256-GCM", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, ktls.AES256GCM, 1},
	{"TLS1.2/ChaCha20-Poly1305", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, ktls.ChaCha20Poly1305, 1},
	// TLS 1.3: the Finished used the handshake keys; no ticket was sent.
	// A stock Go client with AES hardware gets AES-128-GCM; the other two
	// TLS 1.3 suites are checked with openssl (TestKTLSDerivationOpenSSL).
	{"TLS1.3/AES-128-GCM", tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256, ktls.AES128GCM, 0},
}

// TestKTLSDerivation: after a real handshake between a stock tls.Client
// and our server, the emulated kernel seals one application-data record
// and a close_notify with exactly the crypto_info that would go to
// setsockopt; the client reads the plaintext and a clean end of stream.
func TestKTLSDerivation(t *testing.T) {
	for _, tt := range derivationCases {
		t.Run(tt.name, func(t *testing.T) {
			s, ccfg := newKTLSTest(t)
			emu := ktlstest.EmulateKTLS(s)
			dial, res := goClient(ccfg, tt.version, tt.suite)
			tc := acceptTLS(t, s, dial)
			const msg = "segment bytes sealed as the kernel would"
			handOverAndSend(t, s, tc, msg)
			r := <-res
			if r.err != nil || string(r.data) != msg {
				t.Fatalf("client read %q, %v; want %q and a clean close_notify", r.data, r.err, msg)
			}
			if r.suite != tt.suite {
				t.Fatalf("negotiated %s, want %s", tls.CipherSuiteName(r.suite), tls.CipherSuiteName(tt.suite))
			}
			infos := emu.Infos()
			if len(infos) != 1 || infos[0].Cipher != tt.cipher || infos[0].Seq != tt.seq || infos[0].Version != tt.version {
				t.Fatalf("handed over %+v, want one %v at seq %d", infos, tt.cipher, tt.seq)
			}
			if n := emu.Records.Load(); n != 2 {
				t.Errorf("emulator sealed %d records, want 2 (data, close_notify)", n)
			}
			if got := s.Stats().KTLSOffloaded.Load(); got != 1 {
				t.Errorf("KTLSOffloaded = %d, want 1", got)
			}
		})
	}
}

// TestKTLSDerivationOffByOne: the same hand-over with the sequence number
// one too high fails in the stock client with bad record MAC, so the
// tests above do check the sequence.
func TestKTLSDerivationOffByOne(t *testing.T) {
	for _, tt := range derivationCases {
		t.Run(tt.name, func(t *testing.T) {
			s, ccfg := newKTLSTest(t)
			emu := ktlstest.EmulateKTLS(s)
			emu.SeqShift = 1
			dial, res := goClient(ccfg, tt.version, tt.suite)
			tc := acceptTLS(t, s, dial)
			handOverAndSend(t, s, tc, "never readable")
			r := <-res
			if r.err == nil || !strings.Contains(r.err.Error(), "bad record MAC") {
				t.Fatalf("client read %q, %v; want a bad record MAC error", r.data, r.err)
			}
		})
	}
}

// TestKTLSDerivationOpenSSL: the TLS 1.3 suites a Go client never
// negotiates with a Go server (AES-256-GCM, ChaCha20-Poly1305), and TLS
// 1.2, decrypted by openssl s_client.
func TestKTLSDerivationOpenSSL(t *testing.T) {
	openssl := testreq.Tool(t, "openssl", "the Debian package openssl, which .ci/deps installs")
	for _, tt := range []struct {
		name   string
		args   []string
		cipher ktls.Cipher
		shift  uint64
	}{
		{"TLS1.3/AES-256-GCM", []string{"-tls1_3", "-ciphersuites", "TLS_AES_256_GCM_SHA384"}, ktls.AES256GCM, 0},
		{"TLS1.3/ChaCha20-Poly1305", []string{"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"}, ktls.ChaCha20Poly1305, 0},
		{"TLS1.2/ECDHE-ECDSA-CHACHA20-POLY1305", []string{"-tls1_2", "-cipher", "ECDHE-ECDSA-CHACHA20-POLY1305"}, ktls.ChaCha20Poly1305, 0},
		{"TLS1.3/ChaCha20-Poly1305/off-by-one", []string{"-tls1_3", "-ciphersuites", "TLS_CHACHA20_POLY1305_SHA256"}, ktls.ChaCha20Poly1305, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, _ := newKTLSTest(t)
			emu := ktlstest.EmulateKTLS(s)
			emu.SeqShift = tt.shift
			out := make(chan []byte, 1)
			dial := func(addr string) {
				args := append([]string{"s_client", "-connect", addr, "-quiet", "-no_ticket"}, tt.args...)
				cmd := exec.Command(openssl, args...)
				cmd.Stdin = strings.NewReader("") // -quiet ignores stdin EOF
				b, _ := cmd.CombinedOutput()
				out <- b
			}
			tc := acceptTLS(t, s, dial)
			const msg = "hello from the emulated kernel"
			handOverAndSend(t, s, tc, msg)
			got := string(<-out)
			if infos := emu.Infos(); len(infos) != 1 || infos[0].Cipher != tt.cipher {
				t.Fatalf("handed over %+v, want %v", infos, tt.cipher)
			}
			if tt.shift == 0 && !strings.Contains(got, msg) {
				t.Fatalf("openssl s_client output lacks %q:\n%s", msg, got)
			}
			if tt.shift != 0 && (strings.Contains(got, msg) || !strings.Contains(strings.ToLower(got), "bad record mac")) {
				t.Fatalf("off-by-one: openssl output should report bad record mac:\n%s", got)
			}
		})
	}
}

// TestKTLSKeyUpdateFailsConnection: after a transmit-only hand-over (the
// kernel refused TLS_RX) a client's KeyUpdate asking for ours makes
// crypto/tls try to write; the write is refused, the connection fails at
// once, and the client sees only what the kernel sealed (a clean
// close_notify with the old keys), never a userspace record.
func TestKTLSKeyUpdateFailsConnection(t *testing.T) {
	s, ccfg := newKTLSTest(t)
	ktlstest.EmulateKTLS(s).RefuseRX = true
	var keys ktls.KeyLog
	res := make(chan clientResult, 1)
	dial := func(addr string) {
		raw, c, err := dialTLS13(addr, ccfg, &keys, nil)
		if err != nil {
			res <- clientResult{err: err}
			return
		}
		defer c.Close()
		// KeyUpdate(update_requested), sealed with the client's first
		// application traffic key at sequence 0, written under crypto/tls.
		in, err := ktls.TLS13(c.ConnectionState().CipherSuite, keys.ClientTrafficSecret(), 0)
		if err == nil {
			var sl *ktlstest.Sealer
			if sl, err = ktlstest.NewSealer(in); err == nil {
				var rec []byte
				rec, err = sl.Seal(nil, ktls.RecordHandshake, []byte{24, 0, 0, 1, 1})
				if err == nil {
					_, err = raw.Write(rec)
				}
			}
		}
		if err != nil {
			res <- clientResult{err: err}
			return
		}
		b, err := io.ReadAll(c)
		res <- clientResult{data: b, err: err}
	}
	tc := acceptTLS(t, s, dial)
	if err := tc.Handshake(); err != nil || !conn.HandedOver(tc) {
		t.Fatalf("Handshake: %v, hand-over %v", err, conn.HandedOver(tc))
	}
	start := time.Now()
	n, err := tc.Read(make([]byte, 100))
	if !errors.Is(err, conn.ErrWriteAfterOffload) {
		t.Fatalf("Read after KeyUpdate = %d, %v; want conn.ErrWriteAfterOffload", n, err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Read took %v to fail; want at once", d)
	}
	if _, err := tc.Write([]byte("x")); !errors.Is(err, conn.ErrWriteAfterOffload) {
		t.Errorf("Write after the refused KeyUpdate = %v, want conn.ErrWriteAfterOffload", err)
	}
	tc.Close()
	r := <-res
	if r.err != nil || len(r.data) != 0 {
		t.Fatalf("client read %q, %v; want a clean close_notify and nothing else", r.data, r.err)
	}
	if got := s.Stats().KTLSWriteDenied.Load(); got != 1 {
		t.Errorf("KTLSWriteDenied = %d, want 1", got)
	}
}

// TestKTLSFallbackOnThisKernel: with the real setsockopt path, a kernel
// without kTLS refuses TCP_ULP; the connection carries on in user space,
// counted, and its bytes are right. (On a kTLS kernel the hand-over
// succeeds instead, and the test says so.)
func TestKTLSFallbackOnThisKernel(t *testing.T) {
	s, ccfg := newKTLSTest(t)
	dial, res := goClient(ccfg, tls.VersionTLS13, 0)
	tc := acceptTLS(t, s, dial)
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	const msg = "served by userspace TLS after the kernel said no"
	if _, err := tc.Write([]byte(msg)); err != nil {
		t.Fatal(err)
	}
	tc.Close()
	r := <-res
	if r.err != nil || string(r.data) != msg {
		t.Fatalf("client read %q, %v; want %q", r.data, r.err, msg)
	}
	st := s.Stats()
	if on, _ := s.KTLSStatus(); on {
		if st.KTLSOffloaded.Load() != 1 {
			t.Fatalf("kTLS kernel: KTLSOffloaded = %d, want 1", st.KTLSOffloaded.Load())
		}
		t.Skip("this kernel has kTLS: the hand-over succeeded (fallback not exercised)")
	}
	if conn.HandedOver(tc) || st.KTLSULPFailed.Load() != 1 || st.KTLSOffloaded.Load() != 0 {
		t.Fatalf("hand-over %v, KTLSULPFailed %d, KTLSOffloaded %d; want none, 1, 0",
			conn.HandedOver(tc), st.KTLSULPFailed.Load(), st.KTLSOffloaded.Load())
	}
	if _, reason := s.KTLSStatus(); !strings.Contains(reason, "TCP_ULP") {
		t.Errorf("probe reason %q does not name TCP_ULP", reason)
	}
}

// TestTLSCopyPathNoAllocs: the userspace TLS body path reads into a pooled
// buffer and writes whole records: no allocation per span once warm.
func TestTLSCopyPathNoAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets do not hold under -race")
	}
	s, ccfg := newKTLSTest(t, conn.KTLSOff)
	f := fileOf(t, pattern(256<<10))
	dial := func(addr string) {
		// Handshake, then drain the raw socket with one buffer: the
		// client allocates nothing while the server's allocations are
		// counted (AllocsPerRun counts every goroutine).
		raw, err := net.Dial("tcp", addr)
		if err != nil {
			return
		}
		defer raw.Close()
		if err := tls.Client(raw, ccfg.Clone()).Handshake(); err != nil {
			return
		}
		buf := make([]byte, 64<<10)
		for {
			if _, err := raw.Read(buf); err != nil {
				return
			}
		}
	}
	tc := acceptTLS(t, s, dial)
	if err := tc.Handshake(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64<<10)
	const length = 256 << 10
	send := func() {
		if n, err := conn.CopySpan(tc, f, 0, length, buf); err != nil || n != length {
			t.Fatalf("CopySpan = %d, %v", n, err)
		}
	}
	send()
	if a := testing.AllocsPerRun(20, send); a > 0 {
		t.Errorf("copy path over TLS: %.1f allocations per 256 KiB span, want 0", a)
	}
}
