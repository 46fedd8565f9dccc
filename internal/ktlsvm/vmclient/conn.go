package main

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"
	_ "unsafe" // go:linkname

	"segorigin/internal/ktlsvm"
	"segorigin/origin/ktls"
)

// crypto/tls offers no setting for the TLS 1.3 cipher suites a client
// proposes (golang/go#29349): it sends all three, and a Go server then
// picks AES-128-GCM. To pin each suite the client replaces the default
// lists, which the standard library keeps reachable by linkname for
// exactly such users (see crypto/tls/defaults.go), for the length of one
// handshake under hsMu.
//
//go:linkname tls13Suites crypto/tls.defaultCipherSuitesTLS13
var tls13Suites []uint16

//go:linkname tls13SuitesNoAES crypto/tls.defaultCipherSuitesTLS13NoAES
var tls13SuitesNoAES []uint16

// hsMu serialises TLS 1.3 handshakes, which read the lists above.
var hsMu sync.Mutex

// connDeadline bounds everything one connection does.
const connDeadline = 60 * time.Second

// dialOpts vary a connection.
type dialOpts struct {
	rcvbuf   int           // SO_RCVBUF before connect (0: the default)
	curves   []tls.CurveID // the client's key exchanges (nil: crypto/tls's)
	wantHRR  bool          // the handshake must have had a HelloRetryRequest
	hold     bool          // hold the client's writes after the ClientHello until conn.flush
	sessions tls.ClientSessionCache
	resume   bool // the handshake must resume a session of sessions
}

// conn is one HTTPS connection of the client. Requests go through tc
// (or, for a KeyUpdate, sealed by the client itself onto raw); responses
// are read through br, and rec watches the records arriving.
type conn struct {
	combo ktlsvm.Combo
	srv   *server
	raw   *net.TCPConn
	rec   *recordTracker
	tc    *tls.Conn
	br    *bufio.Reader
	keys  *ktls.KeyLog
}

// dial connects to s over TLS pinned to combo c, checks what was
// negotiated and the server's certificate, and counts the handshake.
func dial(s *server, c ktlsvm.Combo, o dialOpts) (*conn, error) {
	d := net.Dialer{Timeout: 10 * time.Second}
	if o.rcvbuf > 0 {
		d.Control = func(_, _ string, rc syscall.RawConn) error {
			var serr error
			err := rc.Control(func(fd uintptr) {
				serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, o.rcvbuf)
			})
			return errors.Join(err, serr)
		}
	}
	nc, err := d.Dial("tcp", s.https)
	if err != nil {
		return nil, err
	}
	raw := nc.(*net.TCPConn)
	cn := &conn{combo: c, srv: s, raw: raw, rec: &recordTracker{Conn: raw}, keys: new(ktls.KeyLog)}
	cfg := &tls.Config{
		MinVersion: c.Version, MaxVersion: c.Version,
		ServerName: "localhost",
		NextProtos: []string{"http/1.1"},
		// The chain is checked below against the certificate the server
		// logged at start (-tls-dev makes a new one per process).
		InsecureSkipVerify: true,
		VerifyConnection:   func(st tls.ConnectionState) error { return checkCert(st, s.cert) },
		KeyLogWriter:       cn.keys,
		CurvePreferences:   o.curves,
		ClientSessionCache: o.sessions,
	}
	cn.rec.hold = o.hold
	if c.Version == tls.VersionTLS12 {
		cfg.CipherSuites = []uint16{c.Suite}
	}
	cn.tc = tls.Client(cn.rec, cfg)
	cn.tc.SetDeadline(time.Now().Add(connDeadline))
	if c.Version == tls.VersionTLS13 {
		hsMu.Lock()
		tls13Suites, tls13SuitesNoAES = []uint16{c.Suite}, []uint16{c.Suite}
		err = cn.tc.Handshake()
		hsMu.Unlock()
	} else {
		err = cn.tc.Handshake()
	}
	if err != nil {
		raw.Close()
		return nil, fmt.Errorf("handshake: %w", err)
	}
	s.tally.handshakes.Add(1)
	st := cn.tc.ConnectionState()
	switch {
	case st.Version != c.Version || st.CipherSuite != c.Suite:
		err = fmt.Errorf("negotiated %s %s, want %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite),
			tls.VersionName(c.Version), tls.CipherSuiteName(c.Suite))
	case st.NegotiatedProtocol != "http/1.1":
		err = fmt.Errorf("ALPN %q, want http/1.1", st.NegotiatedProtocol)
	case st.HelloRetryRequest != o.wantHRR:
		err = fmt.Errorf("HelloRetryRequest %v, want %v (key exchange %v)", st.HelloRetryRequest, o.wantHRR, st.CurveID)
	case st.DidResume != o.resume:
		err = fmt.Errorf("resumed %v, want %v", st.DidResume, o.resume)
	}
	if err != nil {
		raw.Close()
		return nil, err
	}
	cn.br = bufio.NewReader(cn.tc)
	return cn, nil
}

func checkCert(st tls.ConnectionState, want []byte) error {
	if len(st.PeerCertificates) == 0 {
		return errors.New("no server certificate")
	}
	if got := sha256.Sum256(st.PeerCertificates[0].Raw); !bytes.Equal(got[:], want) {
		return fmt.Errorf("server certificate sha256 %x, want %x (the one segorigin logged)", got, want)
	}
	return nil
}

// close ends the connection with the client's close_notify.
func (cn *conn) close() { cn.tc.Close() }

// request is one HTTP/1.1 request's bytes.
func request(method, path string, headers ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s HTTP/1.1\r\nHost: localhost\r\n", method, path)
	for _, h := range headers {
		b.WriteString(h + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// response reads one response to a request of method for path and its
// whole body, and counts a file body (a GET answered 200 or 206) on the
// server's tally, on the path the file's size says.
func (cn *conn) response(method, path string) (*http.Response, []byte, error) {
	resp, err := http.ReadResponse(cn.br, &http.Request{Method: method})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: read response: %w", method, err)
	}
	body, err := io.ReadAll(resp.Body)
	if method == http.MethodGet && (resp.StatusCode == http.StatusOK || resp.StatusCode == http.StatusPartialContent) {
		cn.srv.body(path, int64(len(body)))
	}
	if err != nil {
		return resp, body, fmt.Errorf("%s: body after %d bytes: %w", method, len(body), err)
	}
	return resp, body, nil
}

// do sends one request through crypto/tls and reads its response.
func (cn *conn) do(method, path string, headers ...string) (*http.Response, []byte, error) {
	if _, err := io.WriteString(cn.tc, request(method, path, headers...)); err != nil {
		return nil, nil, fmt.Errorf("write request: %w", err)
	}
	return cn.response(method, path)
}

// expectCloseNotify: the server's next (and last) record is a
// close_notify, after which the stream ends: crypto/tls reads it as
// io.EOF with no data, and the last record on the wire has the shape of
// an alert. (crypto/tls also reads a bare TCP close at a record boundary
// as io.EOF; the record shape tells them apart.)
func (cn *conn) expectCloseNotify() error {
	var b [1]byte
	n, err := cn.br.Read(b[:])
	if n != 0 || err != io.EOF {
		return fmt.Errorf("after the response: read %d bytes, %v; want the end of the stream", n, err)
	}
	return cn.rec.endedWithAlert(cn.combo.Version)
}

// recordTracker follows the TLS record framing of what the server sends
// (RFC 8446 §5.1): each record's outer type and length. (The server's
// ktls.HandshakeScanner parses the same framing; the client keeps its own
// so that what judges the server shares no code with it.)
type recordTracker struct {
	net.Conn
	mu       sync.Mutex // protects the fields below (Read and the checks may run on different goroutines)
	hold     bool       // writes after the first are held until flush
	writes   int
	held     []byte
	hdr      [5]byte
	nhdr     int // header bytes of the current record seen
	remain   int // body bytes of the current record still to come
	lastType byte
	lastLen  int
	records  int
}

func (r *recordTracker) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.writes++
	if r.hold && r.writes > 1 {
		r.held = append(r.held, p...)
		r.mu.Unlock()
		return len(p), nil
	}
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// flush sends what was held in one write(2), so that it leaves in one
// TCP segment, and stops holding.
func (r *recordTracker) flush() error {
	r.mu.Lock()
	held := r.held
	r.hold, r.held = false, nil
	r.mu.Unlock()
	_, err := r.Conn.Write(held)
	return err
}

func (r *recordTracker) Read(p []byte) (int, error) {
	n, err := r.Conn.Read(p)
	r.feed(p[:n])
	return n, err
}

func (r *recordTracker) feed(b []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(b) > 0 {
		if r.remain > 0 {
			k := min(r.remain, len(b))
			r.remain -= k
			b = b[k:]
			continue
		}
		k := copy(r.hdr[r.nhdr:], b)
		r.nhdr += k
		b = b[k:]
		if r.nhdr == len(r.hdr) {
			r.lastType, r.lastLen = r.hdr[0], int(r.hdr[3])<<8|int(r.hdr[4])
			r.remain, r.nhdr = r.lastLen, 0
			r.records++
		}
	}
}

// endedWithAlert: the stream stopped at a record boundary and the last
// record was an alert: outer type alert (21) in TLS 1.2; in TLS 1.3,
// where every record says application_data, an inner plaintext of two
// alert bytes and the type byte plus the 16-byte AEAD tag (19 bytes).
func (r *recordTracker) endedWithAlert(version uint16) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case r.records == 0:
		return errors.New("no record received")
	case r.nhdr != 0 || r.remain != 0:
		return fmt.Errorf("the stream ended inside a record (%d header bytes, %d body bytes missing)", r.nhdr, r.remain)
	case version == tls.VersionTLS12 && r.lastType != ktls.RecordAlert:
		return fmt.Errorf("last record type %d length %d, want an alert (21)", r.lastType, r.lastLen)
	case version == tls.VersionTLS13 && (r.lastType != ktls.RecordApplicationData || r.lastLen != 2+1+16):
		return fmt.Errorf("last record type %d length %d, want a sealed alert (23, 19)", r.lastType, r.lastLen)
	}
	return nil
}
