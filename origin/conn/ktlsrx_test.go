package conn_test

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"segorigin/internal/ktlstest"
	"segorigin/origin/conn"
	"segorigin/origin/ktls"
)

// holdConn passes its first write (the ClientHello) through and holds
// every later one until flush, which sends them in one write(2): the
// client's Finished and what follows it leave in one TCP segment.
type holdConn struct {
	net.Conn
	mu     sync.Mutex // protects writes and held
	writes int
	held   []byte
}

func (h *holdConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.writes++
	if h.writes == 1 {
		return h.Conn.Write(p)
	}
	h.held = append(h.held, p...)
	return len(p), nil
}

func (h *holdConn) flush() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, err := h.Conn.Write(h.held)
	h.held = nil
	return err
}

// dialTLS13 dials addr and runs a TLS 1.3 client handshake over the
// socket (wrapped by wrap, when given), logging the client's secrets to
// keys; it returns the socket and the client.
func dialTLS13(addr string, base *tls.Config, keys *ktls.KeyLog, wrap func(net.Conn) net.Conn) (net.Conn, *tls.Conn, error) {
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, nil, err
	}
	cfg := base.Clone()
	cfg.MinVersion = tls.VersionTLS13
	if keys != nil {
		cfg.KeyLogWriter = keys
	}
	under := raw
	if wrap != nil {
		under = wrap(raw)
	}
	c := tls.Client(under, cfg)
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := c.Handshake(); err != nil {
		raw.Close()
		return nil, nil, err
	}
	return raw, c, nil
}

// pipelinedClient runs a TLS 1.3 handshake whose Finished leaves in one
// segment with the records of reqs, then reads until EOF.
func pipelinedClient(base *tls.Config, reqs ...string) (dial func(string), result <-chan clientResult) {
	ch := make(chan clientResult, 1)
	return func(addr string) {
		var h *holdConn
		_, c, err := dialTLS13(addr, base, nil, func(raw net.Conn) net.Conn { h = &holdConn{Conn: raw}; return h })
		if err != nil {
			ch <- clientResult{err: err}
			return
		}
		defer c.Close()
		for _, r := range reqs {
			c.Write([]byte(r)) // held
		}
		if err := h.flush(); err != nil {
			ch <- clientResult{err: err}
			return
		}
		b, err := io.ReadAll(c)
		ch <- clientResult{data: b, err: err}
	}, ch
}

// serveEcho reads until it has want bytes and answers them back
// upper-cased... kept exact: it writes back what it read, then closes.
func serveEcho(t *testing.T, tc tlsConn, want int) {
	t.Helper()
	buf := make([]byte, want)
	if _, err := io.ReadFull(tc, buf); err != nil {
		t.Fatalf("server read %q: %v", buf, err)
	}
	if _, err := tc.Write(buf); err != nil {
		t.Fatalf("server write: %v", err)
	}
	if err := tc.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// TestKTLSPipelinedWithFinished: requests the client sends in the same
// segment as its Finished reach the server whole and once, whichever path
// reads them: the kernel's receive side (here its stand-in, which reads
// the socket: only what crypto/tls left there), crypto/tls after a
// transmit-only hand-over, or userspace TLS.
func TestKTLSPipelinedWithFinished(t *testing.T) {
	reqs := []string{"GET /a HTTP/1.1\r\nHost: x\r\n\r\n", "GET /b HTTP/1.1\r\nHost: x\r\n\r\n"}
	want := reqs[0] + reqs[1]
	for _, tt := range []struct {
		name     string
		mode     conn.KTLSMode
		emulate  bool
		refuseRX bool
		path     func(*conn.TLSStats) int64
	}{
		{"ktls", conn.KTLSAlways, true, false, func(s *conn.TLSStats) int64 { return s.PathKTLSBoth.Load() }},
		{"ktls_tx", conn.KTLSAlways, true, true, func(s *conn.TLSStats) int64 { return s.PathKTLSTX.Load() }},
		{"userspace", conn.KTLSOff, false, false, func(s *conn.TLSStats) int64 { return s.PathUserspace.Load() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, ccfg := newKTLSTest(t, tt.mode)
			var emu *ktlstest.KTLSEmulator
			if tt.emulate {
				emu = ktlstest.EmulateKTLS(s)
				emu.RefuseRX = tt.refuseRX
			}
			dial, res := pipelinedClient(ccfg, reqs...)
			tc := acceptTLS(t, s, dial)
			serveEcho(t, tc, len(want))
			r := <-res
			if r.err != nil || string(r.data) != want {
				t.Fatalf("client read %q, %v; want %q echoed and a clean close_notify", r.data, r.err, want)
			}
			if got := tt.path(s.Stats()); got != 1 {
				t.Errorf("connections on path %s = %d, want 1", tt.name, got)
			}
			if tt.name == "ktls" {
				if rx := emu.RXInfos(); len(rx) != 1 || rx[0].Seq != 0 || emu.Opened.Load() < 1 {
					t.Errorf("receive side handed over %+v, %d records opened; want one at seq 0, some opened", rx, emu.Opened.Load())
				}
			}
		})
	}
}

// TestKTLSRXDerivation: a request a stock client sends after the
// handshake opens with the receive keys and sequence number handed over
// (TLS 1.3: 0; TLS 1.2: 1, the client's Finished was 0), for every
// version and cipher a Go client negotiates; one higher fails.
func TestKTLSRXDerivation(t *testing.T) {
	const msg = "GET /seg.m4s HTTP/1.1\r\nHost: x\r\n\r\n"
	for _, tt := range derivationCases {
		for _, shift := range []uint64{0, 1} {
			name := tt.name
			if shift > 0 {
				name += "/off-by-one"
			}
			t.Run(name, func(t *testing.T) {
				s, ccfg := newKTLSTest(t)
				emu := ktlstest.EmulateKTLS(s)
				emu.RXSeqShift = shift
				dial, res := goClient(ccfg, tt.version, tt.suite, msg)
				tc := acceptTLS(t, s, dial)
				if shift == 0 {
					serveEcho(t, tc, len(msg))
					if r := <-res; r.err != nil || string(r.data) != msg {
						t.Fatalf("client read %q, %v; want %q", r.data, r.err, msg)
					}
				} else {
					n, err := tc.Read(make([]byte, 100))
					tc.Close()
					<-res
					if err == nil {
						t.Fatalf("Read with the sequence one off = %d, nil; want a bad record error", n)
					}
				}
				rx := emu.RXInfos()
				if len(rx) != 1 || rx[0].Cipher != tt.cipher || rx[0].Version != tt.version || rx[0].Seq != rxSeq(tt.version) {
					t.Fatalf("receive side handed over %+v, want one %v at seq %d", rx, tt.cipher, rxSeq(tt.version))
				}
			})
		}
	}
}

func rxSeq(version uint16) uint64 {
	if version == tls.VersionTLS12 {
		return 1
	}
	return 0
}

// clientRecords seals a TLS 1.3 client's records by hand, from its key
// log, following its own KeyUpdates: crypto/tls has no call that sends a
// KeyUpdate.
type clientRecords struct {
	raw    net.Conn
	suite  uint16
	secret []byte
	sealer *ktlstest.Sealer
}

func newClientRecords(t *testing.T, raw net.Conn, c *tls.Conn, keys *ktls.KeyLog) *clientRecords {
	w := &clientRecords{raw: raw, suite: c.ConnectionState().CipherSuite, secret: keys.ClientTrafficSecret()}
	w.rekey(t)
	return w
}

func (w *clientRecords) rekey(t *testing.T) {
	in, err := ktls.TLS13(w.suite, w.secret, 0)
	if err == nil {
		w.sealer, err = ktlstest.NewSealer(in)
	}
	if err != nil {
		t.Error(err)
	}
}

func (w *clientRecords) write(t *testing.T, typ uint8, p []byte) {
	rec, err := w.sealer.Seal(nil, typ, p)
	if err == nil {
		_, err = w.raw.Write(rec)
	}
	if err != nil {
		t.Error(err)
	}
}

// keyUpdate sends a KeyUpdate and moves to the next secret.
func (w *clientRecords) keyUpdate(t *testing.T, requested bool) {
	req := byte(0)
	if requested {
		req = 1
	}
	w.write(t, ktls.RecordHandshake, []byte{24, 0, 0, 1, req})
	next, err := ktls.NextTrafficSecret(w.suite, w.secret)
	if err != nil {
		t.Error(err)
		return
	}
	w.secret = next
	w.rekey(t)
}

// TestKTLSRXKeyUpdate: a client's KeyUpdate on a kTLS-both connection
// (RFC 8446 §4.6.3). Where the kernel takes new keys (Linux 6.14) the
// request after it is read, and with update_requested the server's own
// KeyUpdate reaches the client, which reads the response under the new
// keys. Where it does not (before 6.14), reading ends cleanly (io.EOF)
// and the client reads a clean close_notify under the old keys.
func TestKTLSRXKeyUpdate(t *testing.T) {
	const before, after = "GET /1 HTTP/1.1\r\n\r\n", "GET /2 HTTP/1.1\r\n\r\n"
	for _, tt := range []struct {
		name             string
		rekey, requested bool
	}{
		{"rekey", true, false},
		{"rekey/update_requested", true, true},
		{"no-rekey", false, false},
		{"no-rekey/update_requested", false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, ccfg := newKTLSTest(t)
			ktlstest.EmulateKTLS(s).Rekey = tt.rekey
			res := make(chan clientResult, 1)
			dial := func(addr string) {
				var keys ktls.KeyLog
				raw, c, err := dialTLS13(addr, ccfg, &keys, nil)
				if err != nil {
					res <- clientResult{err: err}
					return
				}
				defer raw.Close() // no close_notify: crypto/tls's keys are stale
				w := newClientRecords(t, raw, c, &keys)
				w.write(t, ktls.RecordApplicationData, []byte(before))
				w.keyUpdate(t, tt.requested)
				w.write(t, ktls.RecordApplicationData, []byte(after))
				b, err := io.ReadAll(c)
				res <- clientResult{data: b, err: err}
			}
			tc := acceptTLS(t, s, dial)
			buf := make([]byte, len(before))
			if _, err := io.ReadFull(tc, buf); err != nil || string(buf) != before {
				t.Fatalf("first request: %q, %v", buf, err)
			}
			st := s.Stats()
			var wantData string
			if tt.rekey {
				if _, err := io.ReadFull(tc, buf); err != nil || string(buf) != after {
					t.Fatalf("request after the KeyUpdate: %q, %v", buf, err)
				}
				tc.Write([]byte("answer"))
				wantData = "answer"
			} else if n, err := tc.Read(buf); err != io.EOF {
				t.Fatalf("Read after a KeyUpdate the kernel cannot follow = %d, %v; want io.EOF", n, err)
			}
			tc.Close()
			r := <-res
			if r.err != nil || string(r.data) != wantData {
				t.Fatalf("client read %q, %v; want %q and a clean close_notify", r.data, r.err, wantData)
			}
			wantRX, wantTX, wantNo := int64(0), int64(0), int64(1)
			if tt.rekey {
				wantRX, wantNo = 1, 0
				if tt.requested {
					wantTX = 1
				}
			}
			if st.ControlKeyUpdate.Load() != 1 || st.RekeysRX.Load() != wantRX || st.RekeysTX.Load() != wantTX || st.RekeyUnsupported.Load() != wantNo {
				t.Errorf("key_update %d, rekeys rx %d tx %d, unsupported %d; want 1, %d, %d, %d", st.ControlKeyUpdate.Load(),
					st.RekeysRX.Load(), st.RekeysTX.Load(), st.RekeyUnsupported.Load(), wantRX, wantTX, wantNo)
			}
		})
	}
}

// TestKTLSRXAlerts: the client's close_notify ends reading cleanly
// (io.EOF); any other alert ends it with an error; both are counted by
// kind.
func TestKTLSRXAlerts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		alert   []byte
		wantEOF bool
		counter func(*conn.TLSStats) int64
	}{
		{"close_notify", []byte{1, 0}, true, func(s *conn.TLSStats) int64 { return s.ControlCloseNotify.Load() }},
		{"fatal", []byte{2, 80}, false, func(s *conn.TLSStats) int64 { return s.ControlAlert.Load() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, ccfg := newKTLSTest(t)
			ktlstest.EmulateKTLS(s)
			done := make(chan struct{})
			dial := func(addr string) {
				defer close(done)
				var keys ktls.KeyLog
				raw, c, err := dialTLS13(addr, ccfg, &keys, nil)
				if err != nil {
					return
				}
				defer raw.Close()
				newClientRecords(t, raw, c, &keys).write(t, ktls.RecordAlert, tt.alert)
				io.Copy(io.Discard, raw)
			}
			tc := acceptTLS(t, s, dial)
			n, err := tc.Read(make([]byte, 10))
			if (err == io.EOF) != tt.wantEOF || err == nil {
				t.Errorf("Read after a %s alert = %d, %v; want io.EOF %v", tt.name, n, err, tt.wantEOF)
			}
			if !tt.wantEOF && errors.Is(err, io.EOF) {
				t.Errorf("fatal alert read as a clean end: %v", err)
			}
			if got := tt.counter(s.Stats()); got != 1 {
				t.Errorf("%s records counted %d, want 1", tt.name, got)
			}
			tc.Close()
			<-done
		})
	}
}

// TestKTLSRXRefused: where the kernel seals but refuses TLS_RX, the
// connection stays on the transmit-only path, counted, and its requests
// are read through crypto/tls.
func TestKTLSRXRefused(t *testing.T) {
	s, ccfg := newKTLSTest(t)
	ktlstest.EmulateKTLS(s).RefuseRX = true
	const msg = "GET / HTTP/1.1\r\n\r\n"
	dial, res := pipelinedClient(ccfg, msg)
	tc := acceptTLS(t, s, dial)
	serveEcho(t, tc, len(msg))
	if r := <-res; r.err != nil || !bytes.Equal(r.data, []byte(msg)) {
		t.Fatalf("client read %q, %v; want %q", r.data, r.err, msg)
	}
	st := s.Stats()
	if st.KTLSRXFailed.Load() != 1 || st.PathKTLSTX.Load() != 1 || st.PathKTLSBoth.Load() != 0 {
		t.Errorf("rx failed %d, path ktls_tx %d, ktls %d; want 1, 1, 0", st.KTLSRXFailed.Load(), st.PathKTLSTX.Load(), st.PathKTLSBoth.Load())
	}
}

// TestKTLSSessionTickets: TLS 1.3 session tickets stay on over kTLS. The
// ticket is sealed with the server's application keys before the hand-over,
// so the kernel's first record is sequence 1 (0 for a client that takes
// no tickets); a second connection resumes, and both read their response
// and a clean close_notify.
func TestKTLSSessionTickets(t *testing.T) {
	s, ccfg := newKTLSTest(t)
	emu := ktlstest.EmulateKTLS(s)
	ccfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	const msg = "GET /seg.m4s HTTP/1.1\r\n\r\n"
	for i, wantResume := range []bool{false, true} {
		dial, res := goClient(ccfg, tls.VersionTLS13, 0, msg)
		tc := acceptTLS(t, s, dial)
		serveEcho(t, tc, len(msg))
		r := <-res
		if r.err != nil || string(r.data) != msg || r.resumed != wantResume {
			t.Fatalf("connection %d: client read %q, %v, resumed %v; want %q, resumed %v", i, r.data, r.err, r.resumed, msg, wantResume)
		}
	}
	for i, in := range emu.Infos() {
		if in.Version != tls.VersionTLS13 || in.Seq != 1 {
			t.Errorf("hand-over %d: %#x at seq %d, want TLS 1.3 at seq 1 (after the ticket)", i, in.Version, in.Seq)
		}
	}
	if st := s.Stats(); st.PathKTLSBoth.Load() != 2 {
		t.Errorf("kTLS-both connections %d, want 2", st.PathKTLSBoth.Load())
	}
}
