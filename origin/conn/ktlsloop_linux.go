//go:build linux

package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/netip"

	"golang.org/x/sys/unix"

	"segorigin/origin/ktls"
)

// LoopConn is an HTTPS connection whose records the kernel seals and
// opens, detached from its goroutine once the handshake is over, for an
// event loop to serve (origin/loop's ConnIO): the loop reads plaintext
// with read(2) through Read, which acts on the control records the
// kernel will not hand to a plain read (a KeyUpdate followed, or the
// connection ending after an alert, a close_notify or a KeyUpdate the
// kernel cannot follow), and sends with sendmsg and sendfile as on plain
// TCP, the kernel sealing. Closing sends the close_notify. Its methods
// run on the loop's thread.
type LoopConn struct {
	adoptedGate
	fd int
	k  kernelRX

	version, suite uint16
	alpn, sni      string
	resumed        bool

	closed bool
}

// Adopted is an HTTPS connection handed to an event loop after its
// handshake (HandOff): a *LoopConn (the kernel seals and opens its
// records) or a *UserLoopConn (crypto/tls does, on the loop's thread).
// It is origin/loop's ConnIO, a *UserLoopConn its Sealer too.
type Adopted interface {
	Read(p []byte) (int, error)
	Closing() bool
	// Admit counts the connection into its gate again on the loop
	// (HandOff gave its place back); false, counted, at the limit.
	Admit() bool
	// Release gives the place Admit took back, once.
	Release()
	// Remote is the client: the one a PROXY header named, or the peer.
	Remote() *net.TCPAddr
	// View is the loop's net.Conn view of the connection as an HTTPS
	// one, for fasthttp (ConnectionState).
	View(v net.Conn) net.Conn
}

// adoptedGate is what a connection handed to an event loop keeps of the
// listener it came through: its place in the gate, and its client.
type adoptedGate struct {
	ln       *Listener    // the gate the connection came through
	peer     netip.Addr   // the socket's peer, for the gate
	remote   *net.TCPAddr // the client (a PROXY header's, or the peer)
	stats    *TLSStats
	admitted bool
	view     *loopTLSView
	state    func() tls.ConnectionState // what the view answers
}

// HandOff runs nc's handshake, unless done (under the read deadline the
// caller set), when nc is HTTPS (a TLS listener's: Wrap), and counts
// where the connection is served. When the
// kernel seals and opens its records and adopt is set, nc's socket goes
// to an event loop: adopt gets a duplicate of its descriptor, which it
// owns from then on (it closes it, also on failure), and the LoopConn
// that reads and closes it; nc is closed without a word, its place in
// the gate given back (the loop's Handler admits it again: Admit).
// handed: nc is gone (on a loop, or lost because adopt failed); else it
// stays where it is, and a failed handshake is its first Read's error.
func HandOff(nc net.Conn, adopt func(fd int, a Adopted) error) (handed bool) {
	c, ok := nc.(*tlsConn)
	if !ok || c.handshake() != nil {
		return false
	}
	st := c.tls
	stats := st.stats
	switch {
	case c.rx == nil && c.off.Load() != nil:
		stats.TransportStreamKTLSTX.Add(1)
		return false
	case c.rx == nil && (adopt == nil || c.tcp == nil):
		stats.TransportStreamUserspace.Add(1)
		return false
	case c.rx == nil:
		return c.handOffUser(adopt)
	case adopt == nil:
		stats.TransportStreamKTLS.Add(1)
		return false
	}
	lc, err := c.detach()
	if err != nil {
		stats.TransportStreamKTLS.Add(1)
		if !errors.Is(err, errNotKernel) {
			stats.HandOffDetach.Add(1)
			st.logHandOff(err)
		}
		return false
	}
	if err := adopt(lc.fd, lc); err != nil {
		stats.HandOffEngine.Add(1)
		st.log.Debug("kTLS: an event loop refused the connection: closed", "client", lc.k.peer, "err", err)
		return true
	}
	stats.TransportLoopKTLS.Add(1)
	return true
}

// errNotKernel: the receive side is a stand-in for the kernel (tests),
// which only its goroutine can read.
var errNotKernel = errors.New("the receive direction is not the kernel's")

func (st *TLS) logHandOff(err error) {
	if st.failLog.Allow() {
		st.log.Warn("TLS: handing a connection to an event loop failed: it stays on its goroutine (logged once per 10s)", "err", err)
	}
}

// detach takes c's socket away from its goroutine: a duplicate of the
// descriptor, with c's receive state moved onto it, and c's own
// descriptor closed (its place in the gate given back). c reads and
// writes nothing after, and its Close does nothing.
func (c *tlsConn) detach() (*LoopConn, error) {
	if _, ok := c.rx.rx.(sockRX); !ok {
		return nil, errNotKernel
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fd, err := c.dupSocket()
	if err != nil {
		return nil, err
	}
	st := c.ConnectionState()
	lc := &LoopConn{adoptedGate: c.gate(), fd: fd, k: *c.rx,
		version: st.Version, suite: st.CipherSuite, alpn: st.NegotiatedProtocol, sni: st.ServerName, resumed: st.DidResume}
	lc.state = lc.connectionState
	lc.k.rx, lc.k.tx = fdRX(fd), fdTX(fd)
	c.rx = nil
	c.closed = true
	c.tcp.Close()
	return lc, nil
}

// dupSocket is a duplicate of c's socket's descriptor, for an event loop
// to own. Called with c.mu held.
func (c *tlsConn) dupSocket() (int, error) {
	if c.closed {
		return -1, net.ErrClosed
	}
	fd := -1
	var derr error
	if err := c.tcp.raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, fmt.Errorf("detaching the socket: %w", err)
	}
	if derr != nil {
		return -1, fmt.Errorf("detaching the socket: dup: %w", derr)
	}
	return fd, nil
}

// gate is c's place in its listener's gate, for the loop that adopts it.
func (c *tlsConn) gate() adoptedGate {
	g := adoptedGate{ln: c.tcp.ln, peer: peerAddr(c.tcp.TCPConn), stats: c.tls.stats}
	g.remote, _ = c.tcp.RemoteAddr().(*net.TCPAddr)
	return g
}

// Read reads plaintext from the socket as read(2) does (EAGAIN: nothing
// yet), acting on control records first; an error or io.EOF once one
// ended the connection.
func (lc *LoopConn) Read(p []byte) (int, error) { return lc.k.read(p) }

// Closing sends close_notify, sealed by the kernel, once, without
// waiting: false when the socket has no room for it yet (try again once
// it has); an error other than that ends the attempt (the peer is gone).
func (lc *LoopConn) Closing() bool {
	if lc.closed {
		return true
	}
	if err := sendRecord(lc.fd, ktls.RecordAlert, closeNotify[:]); err == unix.EAGAIN {
		return false
	}
	lc.closed = true
	lc.k.forget()
	return true
}

// Admit counts the connection into its gate again on the loop (HandOff
// gave its place back); false, counted, when the limit is reached.
func (g *adoptedGate) Admit() bool {
	_, ok := g.ln.Admit(g.peer)
	g.admitted = ok
	if !ok {
		g.stats.HandOffLimit.Add(1)
	}
	return ok
}

// Release gives the connection's place in its gate back, once, if Admit
// took one.
func (g *adoptedGate) Release() {
	if g.admitted {
		g.admitted = false
		g.ln.Release()
	}
}

// Remote is the client: the one a PROXY header named, or the peer; nil
// when not TCP.
func (g *adoptedGate) Remote() *net.TCPAddr { return g.remote }

// View is v, the loop's view of the connection for fasthttp, as an HTTPS
// connection: it answers ConnectionState, so the request knows it came
// over HTTPS. v is the same for the connection's life: the view is made
// once.
func (g *adoptedGate) View(v net.Conn) net.Conn {
	if g.view == nil {
		g.view = &loopTLSView{Conn: v, state: g.state}
	}
	return g.view
}

// loopTLSView is a loop's connection as fasthttp recognises a TLS one
// (its connTLSer).
type loopTLSView struct {
	net.Conn
	state func() tls.ConnectionState
}

func (v *loopTLSView) Handshake() error { return nil }

func (v *loopTLSView) ConnectionState() tls.ConnectionState { return v.state() }

// connectionState is what the handshake agreed, kept without crypto/tls.
func (lc *LoopConn) connectionState() tls.ConnectionState {
	return tls.ConnectionState{Version: lc.version, CipherSuite: lc.suite, HandshakeComplete: true,
		DidResume: lc.resumed, NegotiatedProtocol: lc.alpn, ServerName: lc.sni}
}

// fdRX is the receive direction of a socket the kernel opens, by its
// descriptor (an event loop's: non-blocking, read when ready).
type fdRX int

func (f fdRX) Read(p []byte) (int, error) {
	n, err := unix.Read(int(f), p)
	switch {
	case err == unix.EIO:
		return 0, ErrControlRecord
	case err != nil:
		return 0, err
	}
	return n, nil
}

func (f fdRX) ReadControl(buf []byte) (uint8, int, error) { return readControl(int(f), buf) }
func (f fdRX) Rekey(info []byte) error                    { return setCryptoInfo(int(f), ktls.OptRX, "TLS_RX", info) }

// fdTX is the transmit direction of a socket the kernel seals, by its
// descriptor.
type fdTX int

func (f fdTX) Write(p []byte) (int, error)          { return unix.Write(int(f), p) }
func (f fdTX) SendRecord(typ uint8, p []byte) error { return sendRecord(int(f), typ, p) }
func (f fdTX) Rekey(info []byte) error              { return setCryptoInfo(int(f), ktls.OptTX, "TLS_TX", info) }

var (
	_ OffloadedTX = fdTX(0)
	_ OffloadedRX = fdRX(0)
)
