package clientaddr

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
)

// PROXY protocol errors, from ParseProxy.
var (
	// ErrIncomplete: the bytes so far are a valid start of a header; read
	// more and call again.
	ErrIncomplete = errors.New("clientaddr: PROXY header incomplete")
	// ErrNotProxy: the connection does not start with a PROXY header.
	ErrNotProxy = errors.New("clientaddr: connection does not start with a PROXY header")
	// ErrMalformedProxy: it starts like one but breaks the specification.
	ErrMalformedProxy = errors.New("clientaddr: malformed PROXY header")
)

const (
	// MaxProxyV1 is the longest v1 line, CRLF included (the specification's
	// "107 bytes").
	MaxProxyV1 = 107
	// MaxProxyHeader bounds a v2 header with its TLVs. The format allows
	// 16+65535 bytes; load balancers send far less (AWS NLB's VPC endpoint
	// TLV, Azure's link id, GCP's PSC id: tens of bytes each).
	MaxProxyHeader = 4096
)

var (
	proxyV1Sig = []byte("PROXY ")
	proxyV2Sig = []byte("\r\n\r\n\x00\r\nQUIT\n")
)

// ProxyHeader is what a PROXY header says.
type ProxyHeader struct {
	// Source is the original client's address and port; invalid when
	// Local is set.
	Source netip.AddrPort
	// Local: the proxy speaks for itself (v2 LOCAL, e.g. its health
	// checks; v1 UNKNOWN): the connection's peer is the client.
	Local bool
}

// ParseProxy parses a PROXY protocol header (haproxy.org's
// proxy-protocol.txt, v1 text or v2 binary) at the start of b and returns
// it with its length n, the bytes to consume. It never looks past the
// header, so b may hold request bytes after it.
func ParseProxy(b []byte) (h ProxyHeader, n int, err error) {
	switch {
	case len(b) == 0:
		return h, 0, ErrIncomplete
	case b[0] == 'P':
		return parseProxyV1(b)
	case b[0] == '\r':
		return parseProxyV2(b)
	}
	return h, 0, ErrNotProxy
}

// prefixOf says whether b and sig agree on their common length.
func prefixOf(b, sig []byte) bool {
	m := min(len(b), len(sig))
	return bytes.Equal(b[:m], sig[:m])
}

// parseProxyV1 reads "PROXY TCP4|TCP6 <src> <dst> <sport> <dport>\r\n" or
// "PROXY UNKNOWN ...\r\n".
func parseProxyV1(b []byte) (ProxyHeader, int, error) {
	var h ProxyHeader
	if !prefixOf(b, proxyV1Sig) {
		return h, 0, ErrNotProxy
	}
	end := bytes.Index(b[:min(len(b), MaxProxyV1)], []byte("\r\n"))
	if end < 0 {
		if len(b) >= MaxProxyV1 || bytes.IndexByte(b, '\n') >= 0 {
			return h, 0, ErrMalformedProxy
		}
		return h, 0, ErrIncomplete
	}
	if bytes.IndexByte(b[:end], '\n') >= 0 {
		// A bare LF before the CRLF: malformed, whatever follows, so
		// that a prefix of the header is never refused while the whole
		// of it is taken (UNKNOWN would otherwise ignore it).
		return h, 0, ErrMalformedProxy
	}
	n := end + 2
	f := bytes.Split(b[len(proxyV1Sig):end], []byte(" "))
	if string(f[0]) == "UNKNOWN" {
		// "the receiver must ignore anything presented before the CRLF"
		return ProxyHeader{Local: true}, n, nil
	}
	if len(f) != 5 || (string(f[0]) != "TCP4" && string(f[0]) != "TCP6") {
		return h, 0, ErrMalformedProxy
	}
	src, err1 := netip.ParseAddr(string(f[1]))
	dst, err2 := netip.ParseAddr(string(f[2]))
	sport, ok1 := parsePort(f[3])
	_, ok2 := parsePort(f[4])
	if err1 != nil || err2 != nil || !ok1 || !ok2 || src.Zone() != "" || dst.Zone() != "" ||
		src.Is4() != (string(f[0]) == "TCP4") || dst.Is4() != src.Is4() {
		return h, 0, ErrMalformedProxy
	}
	h.Source = netip.AddrPortFrom(src.Unmap(), sport)
	return h, n, nil
}

// parsePort reads a decimal port without sign or leading zeros.
func parsePort(b []byte) (uint16, bool) {
	if len(b) == 0 || len(b) > 5 || (len(b) > 1 && b[0] == '0') {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b), 10, 16)
	return uint16(v), err == nil
}

// parseProxyV2 reads the binary header: 12-byte signature, version and
// command, family and protocol, a 2-byte length, the addresses, TLVs.
func parseProxyV2(b []byte) (ProxyHeader, int, error) {
	var h ProxyHeader
	if !prefixOf(b, proxyV2Sig) {
		return h, 0, ErrNotProxy
	}
	if len(b) < 16 {
		return h, 0, ErrIncomplete
	}
	verCmd, fam := b[12], b[13]
	n := 16 + int(binary.BigEndian.Uint16(b[14:16]))
	if verCmd>>4 != 2 || verCmd&0xf > 1 || n > MaxProxyHeader {
		return h, 0, ErrMalformedProxy
	}
	if len(b) < n {
		return h, 0, ErrIncomplete
	}
	body := b[16:n]
	if verCmd&0xf == 0 {
		// LOCAL: "the receiver must accept this connection as valid and
		// must use the real connection endpoints and discard the protocol
		// block including the family".
		return ProxyHeader{Local: true}, n, nil
	}
	switch fam {
	case 0x11: // TCP over IPv4
		if len(body) < 12 {
			return h, 0, ErrMalformedProxy
		}
		src := netip.AddrFrom4([4]byte(body[0:4]))
		h.Source = netip.AddrPortFrom(src, binary.BigEndian.Uint16(body[8:10]))
	case 0x21: // TCP over IPv6
		if len(body) < 36 {
			return h, 0, ErrMalformedProxy
		}
		src := netip.AddrFrom16([16]byte(body[0:16])).Unmap()
		h.Source = netip.AddrPortFrom(src, binary.BigEndian.Uint16(body[32:34]))
	case 0x00: // UNSPEC with PROXY: "the receiver should ignore address information"
		return ProxyHeader{Local: true}, n, nil
	default: // UDP and unix sockets cannot arrive on a TCP listener
		return h, 0, ErrMalformedProxy
	}
	return h, n, nil
}
