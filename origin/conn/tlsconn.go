package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"segorigin/origin/ktls"
)

// tlsConn is every HTTPS connection fasthttp serves. Requests are always
// read through crypto/tls. Responses are written through crypto/tls too
// (userspace TLS), unless the kTLS hand-over succeeded after the
// handshake: then plaintext goes to the socket and the kernel seals it,
// so the sendfile body path works as on plain TCP.
//
//	fasthttp ─► tlsConn ─Read─► tls.Conn ─► recordConn ─► TCP (RX: ciphertext)
//	                    ─Write─► tls.Conn ─► recordConn ─► TCP (userspace TLS)
//	                    ─Write─► OffloadedTX = TCP, kernel seals (kTLS)
//
// All methods but Close run on the connection's fasthttp worker; Close may
// come from another goroutine (shutdown).
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
}

// offloaded is a connection's transmit side after the hand-over.
type offloaded struct {
	tx     OffloadedTX
	kernel *TCP // the socket, when the kernel seals (sendfile allowed); nil for an emulator
}

// recordConn is the net.Conn under tls.Server. Until the hand-over it
// watches what crypto/tls writes (HandshakeScanner: the TLS 1.2 server
// random and record count); after it, it refuses every write, so crypto/tls
// can never put userspace ciphertext into a socket the kernel seals: a
// KeyUpdate answer or an alert fails the connection instead.
type recordConn struct {
	net.Conn
	keys  *ktls.KeyLog // the secrets of this connection; nil when no hand-over is attempted
	stats *TLSStats

	sealed atomic.Bool // the kernel owns the transmit direction
	denied atomic.Bool // crypto/tls tried to write since: the connection must end

	scanning atomic.Bool // the handshake is being watched (set at accept, cleared at hand-over)
	mu       sync.Mutex  // protects scan (Close may write from another goroutine)
	scan     ktls.HandshakeScanner
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
	return r.Conn.Write(p)
}

func (st *TLS) newTLSConn(c net.Conn) *tlsConn {
	rc := &recordConn{Conn: c, stats: st.stats}
	tc, _ := c.(*TCP)
	if tc != nil && st.attempt {
		rc.keys = new(ktls.KeyLog)
		rc.scanning.Store(true)
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
		c.tls.log.Debug("TLS handshake failed", "client", c.RemoteAddr().String(), "err", err)
		c.hsErr = io.EOF
		return c.hsErr
	}
	c.tls.stats.Handshakes.Add(1)
	if c.rec.keys != nil {
		c.handOver()
	}
	return nil
}

// Handshake is fasthttp's connTLSer hook (and anyone else's): it runs our
// handshake, with the hand-over.
func (c *tlsConn) Handshake() error { return c.handshake() }

func (c *tlsConn) Read(p []byte) (int, error) {
	if err := c.handshake(); err != nil {
		return 0, err
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
	return c.Conn.Write(p)
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
		return c.Conn.Close()
	}
	c.rec.SetWriteDeadline(time.Now().Add(closeNotifyTimeout))
	o.tx.CloseNotify() // best effort: the peer may be gone
	return c.rec.Conn.Close()
}

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
		err = o.tx.CloseNotify()
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

// handOver gives the transmit direction to the kernel, or leaves the
// connection on userspace TLS (counted by reason) if anything is missing
// or refused. It runs right after the handshake, before any response:
// everything crypto/tls wrote has reached the socket.
func (c *tlsConn) handOver() {
	defer c.rec.keys.Clear()
	c.rec.scanning.Store(false)
	c.rec.mu.Lock()
	scan := c.rec.scan
	c.rec.mu.Unlock()

	st := c.ConnectionState()
	info, err := txInfo(st, c.rec.keys, &scan)
	if err == nil && !c.tls.kernelTakes(info.Cipher) {
		err = fmt.Errorf("the kernel refused %v at start", info.Cipher)
	}
	if err != nil {
		c.tls.stats.KTLSUnsupported.Add(1)
		c.tls.log.Debug("kTLS: connection stays in user space", "version", tls.VersionName(st.Version),
			"cipher", tls.CipherSuiteName(st.CipherSuite), "err", err)
		return
	}
	var buf [64]byte
	b, err := info.AppendBinary(buf[:0])
	clear(info.Key)
	if err != nil {
		c.tls.stats.KTLSUnsupported.Add(1)
		return
	}
	defer clear(buf[:])

	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return
	}
	c.rec.sealed.Store(true)
	tx, kernel, err := c.tls.offload(c.tcp, b)
	if err != nil {
		c.rec.sealed.Store(false)
		c.countHandOverFailure(err, info.Cipher)
		return
	}
	o := &offloaded{tx: tx}
	if kernel {
		o.kernel = c.tcp
	}
	c.off.Store(o)
	c.tls.stats.KTLSOffloaded.Add(1)
}

func (c *tlsConn) countHandOverFailure(err error, cipher ktls.Cipher) {
	var se *setsockoptError
	if errors.As(err, &se) && se.opt == "TCP_ULP" {
		c.tls.stats.KTLSULPFailed.Add(1)
	} else {
		c.tls.stats.KTLSTXFailed.Add(1)
	}
	if c.tls.failLog.Allow() {
		c.tls.log.Warn("kTLS hand-over failed: connection stays on userspace TLS (logged once per 10s)",
			"cipher", cipher.String(), "err", err)
	}
}

// txInfo builds what the kernel needs for the server's transmit direction
// from the key log and what the scanner saw.
func txInfo(st tls.ConnectionState, keys *ktls.KeyLog, scan *ktls.HandshakeScanner) (ktls.Info, error) {
	if _, ok := ktls.CipherOf(st.Version, st.CipherSuite); !ok {
		return ktls.Info{}, ktls.ErrUnsupported
	}
	switch st.Version {
	case tls.VersionTLS13:
		secret := keys.ServerTrafficSecret()
		if secret == nil {
			return ktls.Info{}, errors.New("no SERVER_TRAFFIC_SECRET_0 in the key log")
		}
		defer clear(secret)
		// Sequence 0: session tickets are off on this connection
		// (configForClient), so nothing was sealed with these keys yet.
		return ktls.TLS13(st.CipherSuite, secret, 0)
	case tls.VersionTLS12:
		master, random := keys.MasterSecret(), scan.ServerRandom()
		seq, sawCCS := scan.RecordsAfterCCS()
		if master == nil || random == nil || !sawCCS || !scan.Complete() {
			return ktls.Info{}, errors.New("TLS 1.2 master secret, server random or ChangeCipherSpec not seen")
		}
		defer clear(master)
		return ktls.TLS12(st.CipherSuite, ktls.Server, master, keys.ClientRandom(), random, seq)
	}
	return ktls.Info{}, ktls.ErrUnsupported
}

// setsockoptError names the option the kernel refused.
type setsockoptError struct {
	opt string // "TCP_ULP" or "TLS_TX"
	err error
}

func (e *setsockoptError) Error() string { return "setsockopt " + e.opt + ": " + e.err.Error() }
func (e *setsockoptError) Unwrap() error { return e.err }
