package conn

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"

	"segorigin/origin/clientaddr"
)

// ProxyMode says whether a gate's connections may start with a PROXY
// protocol header (GateConfig.Proxy).
type ProxyMode string

const (
	ProxyOff      ProxyMode = "off"      // no PROXY headers: every byte is the client's
	ProxyOptional ProxyMode = "optional" // trusted peers may send one
	ProxyRequired ProxyMode = "required" // trusted peers must send one
)

// Errors ending a connection at its PROXY header; the serving loop sees
// them from the first Read and closes the connection.
var (
	ErrProxyUntrusted = errors.New("conn: PROXY header from a peer that is not a trusted proxy")
	ErrProxyMissing   = errors.New("conn: trusted proxy sent no PROXY header where one is required")
)

// peerAddr is a TCP peer's address, IPv4-mapped addresses unmapped.
func peerAddr(tc *net.TCPConn) netip.Addr {
	if a, ok := tc.RemoteAddr().(*net.TCPAddr); ok {
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	}
	return netip.Addr{}
}

// Read reads from the connection; the first call first takes the PROXY
// header, when the gate expects one.
func (c *TCP) Read(b []byte) (int, error) {
	if c.proxyPending {
		c.proxyPending = false
		if err := c.takeProxyHeader(); err != nil {
			// Wrapping net.ErrClosed tells the HTTP server to close the
			// connection without an error response or a log line of its
			// own: the refusal was counted, and logged rate-limited.
			c.proxyErr = fmt.Errorf("%w (%w)", err, net.ErrClosed)
		}
	}
	if c.proxyErr != nil {
		return 0, c.proxyErr
	}
	return c.TCPConn.Read(b)
}

// RemoteAddr is the client: the source a trusted proxy's PROXY header
// named, else the peer.
func (c *TCP) RemoteAddr() net.Addr {
	if c.remote != nil {
		return c.remote
	}
	return c.TCPConn.RemoteAddr()
}

// takeProxyHeader looks at the connection's first bytes without consuming
// them (peekProxy) and decides (decideProxy): a trusted proxy's header is
// consumed, to exactly its length, and names the client; a header from
// anyone else, a malformed one, or none where one is required ends the
// connection. Anything else is left for the HTTP (or TLS) reader
// untouched.
func (c *TCP) takeProxyHeader() error {
	buf := make([]byte, clientaddr.MaxProxyHeader)
	h, n, perr := c.peekProxy(buf)
	consume, remote, err := c.ln.decideProxy(c.trusted, c.TCPConn.RemoteAddr(), h, n, perr)
	if err != nil || consume == 0 {
		return err
	}
	if _, err := io.ReadFull(c.TCPConn, buf[:consume]); err != nil {
		return fmt.Errorf("conn: consuming the PROXY header: %w", err)
	}
	if remote != nil {
		c.remote = remote
	}
	return nil
}

// TakeProxy decides on the first bytes b of a connection that Admit let
// in, for an engine that reads the socket itself: consume is how many
// bytes of b are a trusted proxy's PROXY header (0: none, b is the
// client's), remote the client it names (nil: the peer is the client). An
// error closes the connection; clientaddr.ErrIncomplete (and b shorter
// than clientaddr.MaxProxyHeader) means: ask again with more bytes.
func (l *Listener) TakeProxy(trusted bool, peer net.Addr, b []byte) (consume int, remote *net.TCPAddr, err error) {
	h, n, perr := clientaddr.ParseProxy(b)
	if errors.Is(perr, clientaddr.ErrIncomplete) && len(b) < clientaddr.MaxProxyHeader {
		return 0, nil, perr
	}
	return l.decideProxy(trusted, peer, h, n, perr)
}

// decideProxy is the PROXY protocol rule, given what the first bytes
// parsed as (h, n, perr from clientaddr.ParseProxy).
func (l *Listener) decideProxy(trusted bool, peer net.Addr, h clientaddr.ProxyHeader, n int, perr error) (consume int, remote *net.TCPAddr, err error) {
	g := l.gate
	st := g.stats
	notProxy := errors.Is(perr, clientaddr.ErrNotProxy)
	switch {
	case !trusted && notProxy:
		return 0, nil, nil
	case !trusted && (perr == nil || errors.Is(perr, clientaddr.ErrMalformedProxy) || errors.Is(perr, clientaddr.ErrIncomplete)):
		st.ProxyUntrusted.Add(1)
		g.logProxy("PROXY header from an untrusted peer: closing", peer, perr)
		return 0, nil, ErrProxyUntrusted
	case notProxy && g.cfg.Proxy == ProxyRequired:
		st.ProxyMissing.Add(1)
		g.logProxy("trusted proxy sent no PROXY header (-proxy-protocol required): closing", peer, nil)
		return 0, nil, ErrProxyMissing
	case notProxy:
		st.ProxyAbsent.Add(1)
		return 0, nil, nil
	case errors.Is(perr, clientaddr.ErrMalformedProxy):
		st.ProxyMalformed.Add(1)
		g.logProxy("malformed PROXY header: closing", peer, perr)
		return 0, nil, perr
	case perr != nil:
		return 0, nil, perr // EOF, timeout, reset: nothing to count
	}
	if h.Local {
		st.ProxyLocal.Add(1)
		return n, nil, nil
	}
	src := h.Source.Addr()
	st.ProxyAccepted.Add(1)
	return n, &net.TCPAddr{IP: src.AsSlice(), Port: int(h.Source.Port())}, nil
}

func (g *Gate) logProxy(msg string, peer net.Addr, err error) {
	if g.proxyLog.Allow() {
		g.log.Warn(msg, "peer", peer.String(), "err", err)
	}
}
