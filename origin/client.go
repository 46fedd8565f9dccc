package origin

import (
	"fmt"
	"net"
	"net/netip"

	"github.com/valyala/fasthttp"

	"segorigin/origin/clientaddr"
)

// Client address header modes (Config.ClientIPHeader).
const (
	ClientIPHeaderXFF       = "X-Forwarded-For"
	ClientIPHeaderForwarded = "Forwarded"
	ClientIPHeaderNone      = "none"
)

// clientIdentity is how the server tells who a request is from: the
// trusted proxies and which header they write.
type clientIdentity struct {
	trusted *clientaddr.Trusted
	header  string // ClientIPHeaderXFF, ClientIPHeaderForwarded or ClientIPHeaderNone
}

func newClientIdentity(cfg Config) (clientIdentity, error) {
	tr, err := clientaddr.ParseTrusted(cfg.TrustedProxies)
	if err != nil {
		return clientIdentity{}, fmt.Errorf("trusted-proxies: %w", err)
	}
	if cfg.ClientIPHeader == "" {
		cfg.ClientIPHeader = ClientIPHeaderXFF
	}
	switch cfg.ClientIPHeader {
	case ClientIPHeaderXFF, ClientIPHeaderForwarded, ClientIPHeaderNone:
	default:
		return clientIdentity{}, fmt.Errorf("client-ip-header: %q, want %s, %s or %s",
			cfg.ClientIPHeader, ClientIPHeaderXFF, ClientIPHeaderForwarded, ClientIPHeaderNone)
	}
	return clientIdentity{trusted: tr, header: cfg.ClientIPHeader}, nil
}

// addr is the address a request is attributed to: token IP binding,
// logs and metrics use it. It starts from the connection's peer (the
// PROXY header's source when the listener takes PROXY protocol) and, when
// that peer is a trusted proxy, walks the configured forwarding header
// right to left to the first untrusted hop.
func (id *clientIdentity) addr(ctx *fasthttp.RequestCtx) netip.Addr {
	peer := peerAddr(ctx.RemoteAddr())
	if id.header == ClientIPHeaderNone || !id.trusted.Contains(peer) {
		return peer
	}
	if id.header == ClientIPHeaderForwarded {
		return id.trusted.FromForwarded(peer, ctx.Request.Header.PeekAll("Forwarded"))
	}
	return id.trusted.FromXFF(peer, ctx.Request.Header.PeekAll("X-Forwarded-For"))
}

// ip is addr as text, "" when unknown.
func (id *clientIdentity) ip(ctx *fasthttp.RequestCtx) string {
	if a := id.addr(ctx); a.IsValid() {
		return a.String()
	}
	return ""
}

// peerAddr is a connection's remote address as a netip.Addr (IPv4-mapped
// addresses unmapped), invalid when it is not an IP address.
func peerAddr(a net.Addr) netip.Addr {
	switch a := a.(type) {
	case *net.TCPAddr:
		ip, _ := netip.AddrFromSlice(a.IP)
		return ip.Unmap()
	case interface{ AddrPort() netip.AddrPort }:
		return a.AddrPort().Addr().Unmap()
	}
	return netip.Addr{}
}
