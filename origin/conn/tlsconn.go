package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"segorigin/origin/ktls"
)

// tlsConn is every HTTPS connection the transport serves. Until the
// handshake ends, and on userspace TLS, it reads and writes through
// crypto/tls. After a kTLS hand-over plaintext goes to the socket and the
// kernel seals it (so the sendfile body path works as on plain TCP); where
// the kernel opens records too, requests are read as plaintext from the
// socket, and control records (alerts, KeyUpdate) are handled here
// (ktlsrx.go).
//
//	transport ─► tlsConn ─Read─► tls.Conn ─► recordConn ─► TCP (ciphertext)
//	                     ─Read─► OffloadedRX, kernel opens (kTLS both)
//	                     ─Write─► tls.Conn ─► recordConn ─► TCP (userspace TLS)
//	                     ─Write─► OffloadedTX, kernel seals (kTLS)
//
// All methods but Close run on the connection's serving goroutine; Close
// may come from another goroutine (shutdown).
type tlsConn struct {
	*tls.Conn
	rec *recordConn
	tcp *TCP // nil when the accepted connection is not TCP
	tls *TLS

	handshook bool  // the handshake was attempted (worker only)
	hsErr     error // and its outcome

	mu     sync.Mutex // protects closed, and orders the hand-over against Close
	closed bool
	off    atomic.Pointer[offloaded] // set once, by a successful hand-over

	// wmu is held by a userspace write of plaintext (Write): a Close from
	// another goroutine that finds it held closes the socket under the
	// write, with no close_notify, rather than wait for it or interleave
	// an alert with records not yet sent.
	wmu sync.Mutex

	rx *kernelRX // the kernel opens this connection's records (serving goroutine only)
}

// offloaded is a connection's transmit side after the hand-over.
type offloaded struct {
	tx     OffloadedTX
	kernel *TCP // the socket, when the kernel seals (sendfile allowed); nil for an emulator
}

// recordConn is the net.Conn under tls.Server. Until the hand-over it
// watches what crypto/tls writes (HandshakeScanner: the TLS 1.2 server
// random and record count) and hands crypto/tls one record per Read
// (ktls.Framer), so that when the handshake returns nothing past the
// client's Finished is buffered in crypto/tls: what the client pipelined
// after it stays in the socket for the kernel to open. After the hand-over
// it refuses every write, so crypto/tls can never put userspace ciphertext
// into a socket the kernel seals: a KeyUpdate answer or an alert fails the
// connection instead.
type recordConn struct {
	net.Conn
	keys    *ktls.KeyLog // the secrets of this connection; nil when no hand-over is attempted
	stats   *TLSStats
	tickets atomic.Int32 // TLS 1.3 session tickets sent (sealed with the application keys)

	framing bool        // reads stop at record boundaries (the handshake of a hand-over; serving goroutine only)
	frame   ktls.Framer // where the stream read so far stands

	sealed atomic.Bool // the kernel owns the transmit direction
	denied atomic.Bool // crypto/tls tried to write since: the connection must end

	scanning atomic.Bool // the handshake is being watched (set at accept, cleared at hand-over)
	mu       sync.Mutex  // protects scan (Close may write from another goroutine)
	scan     ktls.HandshakeScanner

	// gather: crypto/tls's records are appended to out, for one write of
	// them all (tlsConn.writeGathered, which holds tlsConn.wmu meanwhile).
	gather bool
	out    []byte
	// broken: a write of records failed part way, so the stream may end
	// inside a record: nothing more (no close_notify) may follow.
	broken atomic.Bool

	// onLoop: an event loop serves the connection in user space
	// (detachUser): reads are read(2) on loopFD without blocking
	// (readLoop; loopDrained: the socket had no more in this readiness),
	// and every write gathers in out for the loop's Flush. (Loop thread
	// only.)
	onLoop      bool
	loopDrained bool
	loopFD      int
}

// ErrWriteAfterOffload: crypto/tls wanted to write after the kernel took
// over transmission (answering a KeyUpdate, sending an alert).
var ErrWriteAfterOffload = errors.New("origin: TLS write refused: the kernel owns this connection's transmit direction (kTLS)")

// Write passes crypto/tls's records to the socket until the hand-over,
// and refuses them after it. crypto/tls swallows a failed KeyUpdate answer
// ("surface the error at the next write", which never comes: responses
// bypass it), so a refusal also marks the connection denied, which
// tlsConn's Read and Write report, and shuts the read side so a Read
// waiting for the next request ends now.
func (r *recordConn) Write(p []byte) (int, error) {
	if r.sealed.Load() {
		if !r.denied.Swap(true) {
			r.stats.KTLSWriteDenied.Add(1)
			if cr, ok := r.Conn.(interface{ CloseRead() error }); ok {
				cr.CloseRead()
			}
		}
		return 0, ErrWriteAfterOffload
	}
	if r.scanning.Load() {
		r.mu.Lock()
		r.scan.Write(p)
		r.mu.Unlock()
	}
	if r.gather {
		r.out = append(r.out, p...)
		return len(p), nil
	}
	n, err := r.Conn.Write(p)
	if err != nil {
		r.broken.Store(true)
	}
	return n, err
}

// Read hands crypto/tls what arrived, up to the end of the record in
// progress while framing: crypto/tls asks for a header, then for the rest
// of the record, and reads on while more is in the socket (to notice a
// close_notify early); stopping at each record's end costs a read per
// header and per body during the handshake, and leaves the rest in the
// socket.
func (r *recordConn) Read(p []byte) (int, error) {
	if r.onLoop {
		return r.readLoop(p)
	}
	if !r.framing {
		return r.Conn.Read(p)
	}
	n, err := r.Conn.Read(p[:min(len(p), r.frame.Room())])
	for k := 0; k < n; {
		m, _ := r.frame.Advance(p[k:n])
		k += m
	}
	return n, err
}

func (st *TLS) newTLSConn(c net.Conn) *tlsConn {
	rc := &recordConn{Conn: c, stats: st.stats}
	tc, _ := c.(*TCP)
	if tc != nil && st.attempt {
		rc.keys = new(ktls.KeyLog)
		rc.scanning.Store(true)
		rc.framing = true
	}
	return &tlsConn{Conn: tls.Server(rc, st.base), rec: rc, tcp: tc, tls: st}
}

// handshake runs the TLS handshake once, then tries the kTLS hand-over. A
// failed handshake reads as io.EOF to fasthttp: scanners and clients that
// give up are counted, not logged as serving errors.
func (c *tlsConn) handshake() error {
	if c.handshook {
		return c.hsErr
	}
	c.handshook = true
	// fasthttp set the read deadline (ReadTimeout) before its first Read;
	// the server's flights get the same bound (HandshakeTimeout).
	if d := c.tls.hsTimeout; d > 0 {
		c.rec.SetWriteDeadline(time.Now().Add(d))
		defer c.rec.SetWriteDeadline(time.Time{})
	}
	if err := c.Conn.Handshake(); err != nil {
		c.tls.stats.HandshakeErrors.Add(1)
		if re := (tls.RecordHeaderError{}); errors.As(err, &re) && re.Conn != nil && looksLikeHTTP(re.RecordHeader) {
			c.answerPlainHTTP()
		} else {
			c.tls.log.Debug("TLS handshake failed", "client", c.RemoteAddr().String(), "err", err)
		}
		c.hsErr = io.EOF
		return c.hsErr
	}
	c.tls.stats.Handshakes.Add(1)
	if c.rec.keys != nil {
		c.rec.framing = false
		c.handOver()
	}
	switch {
	case c.rx != nil:
		c.tls.stats.PathKTLSBoth.Add(1)
	case c.off.Load() != nil:
		c.tls.stats.PathKTLSTX.Add(1)
	default:
		c.tls.stats.PathUserspace.Add(1)
	}
	return nil
}

// looksLikeHTTP reports whether the first five bytes of a connection
// that should have started a TLS handshake begin a plain HTTP request, as
// net/http's server tells them apart.
func looksLikeHTTP(hdr [5]byte) bool {
	switch string(hdr[:]) {
	case "GET /", "HEAD ", "POST ", "PUT /", "OPTIO", "DELET", "PATCH":
		return true
	}
	return false
}

// plainHTTPAnswer is the answer to a plain HTTP request on the HTTPS
// port: a client (or a CDN whose origin is set to http on port 443)
// learns why, where a bare close says nothing. nginx answers 400 with
// "The plain HTTP request was sent to HTTPS port"; net/http 400 too.
var plainHTTPAnswer = func() []byte {
	const body = "400 Bad Request: a plain HTTP request sent to the HTTPS port\n"
	return []byte("HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n" +
		"Content-Length: " + strconv.Itoa(len(body)) + "\r\nCache-Control: no-store\r\n" +
		"X-Content-Type-Options: nosniff\r\nConnection: close\r\n\r\n" + body)
}()

// plainLinger bounds how long a plain HTTP request's connection reads and
// drops what the client still sends after its 400, so the kernel's reset
// to unread bytes cannot destroy the answer (RFC 9112 §9.6).
const plainLinger = 2 * time.Second

// answerPlainHTTP answers a plain HTTP request on the HTTPS port with a
// plain 400, shuts the write side, and reads what the client still sends
// until it closes or plainLinger passes. It runs on the connection's own
// goroutine, under the handshake's write deadline.
func (c *tlsConn) answerPlainHTTP() {
	c.tls.stats.PlainHTTP.Add(1)
	if c.tls.plainLog.Allow() {
		c.tls.log.Info("plain HTTP request on the HTTPS port: answered 400", "client", c.RemoteAddr().String(),
			"suppressed", c.tls.plainLog.Suppressed())
	}
	raw := c.rec.Conn
	if _, err := raw.Write(plainHTTPAnswer); err != nil {
		return
	}
	cw, ok := raw.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	raw.SetReadDeadline(time.Now().Add(plainLinger))
	var buf [4 << 10]byte
	for {
		if _, err := raw.Read(buf[:]); err != nil {
			return
		}
	}
}

// Handshake is fasthttp's connTLSer hook (and anyone else's): it runs our
// handshake, with the hand-over.
func (c *tlsConn) Handshake() error { return c.handshake() }

func (c *tlsConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	if c.rx != nil {
		return c.readKernel(p)
	}
	n, err := c.Conn.Read(p)
	if c.rec.denied.Load() {
		return 0, ErrWriteAfterOffload // what was read is not served
	}
	return n, err
}

func (c *tlsConn) Write(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
	}
	if o := c.off.Load(); o != nil {
		if c.rec.denied.Load() {
			return 0, ErrWriteAfterOffload
		}
		return o.tx.Write(p)
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if len(p) <= TLSRecordSize {
		return c.Conn.Write(p)
	}
	return c.writeGathered(p)
}

// gatherSize is the plaintext sealed before one write of its records:
// four full records (a copy path's pooled read), about 64 KiB of
// ciphertext.
const gatherSize = 4 * TLSRecordSize

// gatherPool holds the buffers writeGathered seals records into: taken
// for one write, so an idle connection holds none.
var gatherPool = sync.Pool{New: func() any {
	b := make([]byte, 0, gatherSize+4*recordOverhead)
	return &b
}}

// recordOverhead is the most a record adds to its plaintext with the
// suites served (AEAD): a 5-byte header, TLS 1.2's 8-byte explicit nonce
// or TLS 1.3's content type byte, and a 16-byte tag.
const recordOverhead = 5 + 8 + 16

// writeGathered writes p over userspace TLS a gatherSize at a time:
// crypto/tls seals each part's records into a pooled buffer (recordConn
// gathers them) and they leave in one write, not one write per record.
// crypto/tls writes each record with its own system call, so a 64 KiB
// read of a file body would otherwise cost four writes and four small
// TCP pushes. Called with wmu held.
func (c *tlsConn) writeGathered(p []byte) (int, error) {
	bp := gatherPool.Get().(*[]byte)
	defer gatherPool.Put(bp)
	var done int
	for done < len(p) {
		part := p[done:min(len(p), done+gatherSize)]
		c.rec.out, c.rec.gather = (*bp)[:0], true
		_, err := c.Conn.Write(part)
		c.rec.gather = false
		out := c.rec.out
		c.rec.out = nil
		*bp = out[:0]
		if err != nil {
			return done, err
		}
		if _, err := c.rec.Conn.Write(out); err != nil {
			c.rec.broken.Store(true)
			return done, err
		}
		done += len(part)
	}
	return done, nil
}

// Close sends close_notify and closes. After the hand-over crypto/tls
// cannot send it (recordConn refuses), so the kernel seals it as an alert
// record.
func (c *tlsConn) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return net.ErrClosed
	}
	c.closed = true
	o := c.off.Load()
	c.mu.Unlock()
	if o == nil {
		return c.closeUserspace()
	}
	c.rec.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
	o.tx.SendRecord(ktls.RecordAlert, closeNotify[:]) // best effort: the peer may be gone
	return c.rec.Conn.Close()
}

// closeUserspace closes a connection crypto/tls seals: with close_notify
// when its stream is whole and no write is in flight (after a failed
// write, crypto/tls's alert would follow a record cut short, or block for
// its 5 s on a peer that stopped reading), else the socket alone.
func (c *tlsConn) closeUserspace() error {
	if !c.wmu.TryLock() {
		return c.rec.Conn.Close()
	}
	defer c.wmu.Unlock()
	if c.rec.broken.Load() {
		return c.rec.Conn.Close()
	}
	return c.Conn.Close()
}

// closeNotify is the close_notify alert: level warning (1), description
// close_notify (0).
var closeNotify = [2]byte{1, 0}

// CloseWrite ends the transmit direction for a lingering close:
// close_notify (by crypto/tls, or sealed by the kernel after the
// hand-over), then the socket's FIN. Reading goes on until Close.
func (c *tlsConn) CloseWrite() error {
	if c.tcp == nil {
		return errors.New("origin: TLS CloseWrite: not over TCP")
	}
	var err error
	if o := c.off.Load(); o != nil {
		c.rec.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
		err = o.tx.SendRecord(ktls.RecordAlert, closeNotify[:])
	} else if c.rec.broken.Load() {
		err = errors.New("origin: TLS CloseWrite: an earlier write failed; no close_notify")
	} else {
		err = c.Conn.CloseWrite()
	}
	if err != nil {
		return err
	}
	return c.tcp.CloseWrite()
}

// closeNotifyTimeout bounds the close_notify write, as crypto/tls does.
const closeNotifyTimeout = 5 * time.Second

// KernelTLS returns the socket of c when c is HTTPS and the kernel seals
// its records: the sendfile writer may then serve it.
func KernelTLS(c net.Conn) *TCP {
	if t, ok := c.(*tlsConn); ok {
		if o := t.off.Load(); o != nil {
			return o.kernel
		}
	}
	return nil
}

// handOver gives the transmit direction to the kernel, then the receive
// direction where it opens records too, or leaves the connection on
// userspace TLS (counted by reason) if anything is missing or refused. It
// runs right after the handshake, before any response: everything
// crypto/tls wrote has reached the socket, and it read nothing past the
// client's Finished (recordConn's framing).
func (c *tlsConn) handOver() {
	defer c.rec.keys.Clear()
	c.rec.scanning.Store(false)
	c.rec.mu.Lock()
	scan := c.rec.scan
	c.rec.mu.Unlock()

	st := c.ConnectionState()
	keys, err := deriveKeys(st, c.rec.keys, &scan, int(c.rec.tickets.Load()))
	defer keys.clear()
	if err == nil && !c.tls.kernelTakes(keys.tx.Cipher, false) {
		err = fmt.Errorf("the kernel refused %v at start", keys.tx.Cipher)
	}
	var tx, rx []byte
	if err == nil {
		tx, err = keys.tx.AppendBinary(make([]byte, 0, 64))
	}
	if err == nil && c.tls.kernelTakes(keys.rx.Cipher, true) {
		rx, err = keys.rx.AppendBinary(make([]byte, 0, 64))
	}
	defer clear(tx)
	defer clear(rx)
	if err != nil {
		c.tls.stats.KTLSUnsupported.Add(1)
		c.tls.log.Debug("kTLS: connection stays in user space", "version", tls.VersionName(st.Version),
			"cipher", tls.CipherSuiteName(st.CipherSuite), "err", err)
		return
	}

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.rec.sealed.Store(true)
	off, err := c.tls.offload(c.tcp, tx, rx)
	if err != nil {
		c.rec.sealed.Store(false)
		c.countHandOverFailure(err, keys.tx.Cipher, false)
		return
	}
	o := &offloaded{tx: off.TX}
	if off.Kernel {
		o.kernel = c.tcp
	}
	c.off.Store(o)
	c.tls.stats.KTLSOffloaded.Add(1)
	switch {
	case off.RX != nil:
		c.rx = newKernelRX(c, off.RX, st, keys)
	case rx != nil:
		c.countHandOverFailure(off.RXErr, keys.rx.Cipher, true)
	}
}

// countHandOverFailure counts a refused direction (rx: the receive
// direction, after the transmit one took) by what was refused.
func (c *tlsConn) countHandOverFailure(err error, cipher ktls.Cipher, rx bool) {
	var se *setsockoptError
	switch {
	case rx:
		c.tls.stats.KTLSRXFailed.Add(1)
	case errors.As(err, &se) && se.opt == "TCP_ULP":
		c.tls.stats.KTLSULPFailed.Add(1)
	default:
		c.tls.stats.KTLSTXFailed.Add(1)
	}
	if c.tls.failLog.Allow() {
		c.tls.log.Warn("kTLS hand-over failed: that direction stays in user space (logged once per 10s)",
			"cipher", cipher.String(), "receive", rx, "err", err)
	}
}

// handOverKeys are both directions' key material, and the TLS 1.3
// traffic secrets a KeyUpdate derives the next keys from.
type handOverKeys struct {
	tx, rx               ktls.Info
	serverApp, clientApp []byte // TLS 1.3 only
}

func (k *handOverKeys) clear() {
	clear(k.tx.Key)
	clear(k.rx.Key)
	clear(k.serverApp)
	clear(k.clientApp)
}

// deriveKeys builds what the kernel needs for both directions from the
// key log and what the scanner saw. Sequence numbers: TLS 1.3 starts each
// direction's application keys at 0; the server's moves by the tickets it
// sealed, the client's Finished used its handshake keys. TLS 1.2 counts
// from each side's ChangeCipherSpec: the server's records after its own
// (the scanner), and the client's Finished, record 0, was read.
func deriveKeys(st tls.ConnectionState, keys *ktls.KeyLog, scan *ktls.HandshakeScanner, tickets int) (handOverKeys, error) {
	var k handOverKeys
	if _, ok := ktls.CipherOf(st.Version, st.CipherSuite); !ok {
		return k, ktls.ErrUnsupported
	}
	var err error
	switch st.Version {
	case tls.VersionTLS13:
		k.serverApp, k.clientApp = keys.ServerTrafficSecret(), keys.ClientTrafficSecret()
		if k.serverApp == nil || k.clientApp == nil {
			return k, errors.New("no SERVER_TRAFFIC_SECRET_0 or CLIENT_TRAFFIC_SECRET_0 in the key log")
		}
		if k.tx, err = ktls.TLS13(st.CipherSuite, k.serverApp, uint64(tickets)); err == nil {
			k.rx, err = ktls.TLS13(st.CipherSuite, k.clientApp, 0)
		}
		return k, err
	case tls.VersionTLS12:
		master, random := keys.MasterSecret(), scan.ServerRandom()
		seq, sawCCS := scan.RecordsAfterCCS()
		if master == nil || random == nil || !sawCCS || !scan.Complete() {
			return k, errors.New("TLS 1.2 master secret, server random or ChangeCipherSpec not seen")
		}
		defer clear(master)
		if k.tx, err = ktls.TLS12(st.CipherSuite, ktls.Server, master, keys.ClientRandom(), random, seq); err == nil {
			k.rx, err = ktls.TLS12(st.CipherSuite, ktls.Client, master, keys.ClientRandom(), random, 1)
		}
		return k, err
	}
	return k, ktls.ErrUnsupported
}

// setsockoptError names the option the kernel refused.
type setsockoptError struct {
	opt string // "TCP_ULP", "TLS_TX" or "TLS_RX"
	err error
}

func (e *setsockoptError) Error() string { return "setsockopt " + e.opt + ": " + e.err.Error() }
func (e *setsockoptError) Unwrap() error { return e.err }

// RawSocket is the TCP socket under the TLS layer, to ask the kernel
// about the peer without reading from it (stream.PeerClosed); nil
// when the connection is not TCP.
func (c *tlsConn) RawSocket() syscall.RawConn {
	if c.tcp == nil {
		return nil
	}
	return c.tcp.raw
}
