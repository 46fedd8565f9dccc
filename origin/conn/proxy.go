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
	ErrProxyOverLimit = errors.New("conn: client named by the PROXY header is over max-conns-per-ip")
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
// them (peekProxy) and decides: a trusted proxy's header is consumed, to
// exactly its length, and names the client; a header from anyone else, a
// malformed one, or none where one is required ends the connection.
// Anything else is left for the HTTP (or TLS) reader untouched.
func (c *TCP) takeProxyHeader() error {
	g := c.ln.gate
	st := g.stats
	buf := make([]byte, clientaddr.MaxProxyHeader)
	h, n, perr := c.peekProxy(buf)
	notProxy := errors.Is(perr, clientaddr.ErrNotProxy)
	switch {
	case !c.trusted && notProxy:
		return nil
	case !c.trusted && (perr == nil || errors.Is(perr, clientaddr.ErrMalformedProxy) || errors.Is(perr, clientaddr.ErrIncomplete)):
		st.ProxyUntrusted.Add(1)
		g.logProxy("PROXY header from an untrusted peer: closing", c.TCPConn.RemoteAddr(), perr)
		return ErrProxyUntrusted
	case notProxy && g.cfg.Proxy == ProxyRequired:
		st.ProxyMissing.Add(1)
		g.logProxy("trusted proxy sent no PROXY header (-proxy-protocol required): closing", c.TCPConn.RemoteAddr(), nil)
		return ErrProxyMissing
	case notProxy:
		st.ProxyAbsent.Add(1)
		return nil
	case errors.Is(perr, clientaddr.ErrMalformedProxy):
		st.ProxyMalformed.Add(1)
		g.logProxy("malformed PROXY header: closing", c.TCPConn.RemoteAddr(), perr)
		return perr
	case perr != nil:
		return perr // EOF, timeout, reset: nothing to count
	}
	if _, err := io.ReadFull(c.TCPConn, buf[:n]); err != nil {
		return fmt.Errorf("conn: consuming the PROXY header: %w", err)
	}
	if h.Local {
		st.ProxyLocal.Add(1)
		return nil
	}
	src := h.Source.Addr()
	if !c.ln.rekey(c, src.String()) {
		st.ConnsRefused.Add(1)
		if g.limitLog.Allow() {
			g.log.Warn("connection limit reached: closing new connection", "client", src.String(),
				"max_conns_per_ip", g.cfg.MaxConnsPerIP, "via", "proxy-protocol")
		}
		return ErrProxyOverLimit
	}
	st.ProxyAccepted.Add(1)
	c.remote = &net.TCPAddr{IP: src.AsSlice(), Port: int(h.Source.Port())}
	return nil
}

func (g *Gate) logProxy(msg string, peer net.Addr, err error) {
	if g.proxyLog.Allow() {
		g.log.Warn(msg, "peer", peer.String(), "err", err)
	}
}
