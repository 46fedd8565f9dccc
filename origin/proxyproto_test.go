package origin_test

import (
	"crypto/tls"
	"encoding/binary"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// proxyV2 is a PROXY v2 header for a TCP4 client src:sport.
func proxyV2(src string, sport uint16) []byte {
	b := []byte("\r\n\r\n\x00\r\nQUIT\n\x21\x11\x00\x0c")
	a := netip.MustParseAddr(src).As4()
	b = append(b, a[:]...)
	b = append(b, 127, 0, 0, 1)
	b = binary.BigEndian.AppendUint16(b, sport)
	return binary.BigEndian.AppendUint16(b, 8080)
}

const proxyV1Viewer = "PROXY TCP4 198.51.100.7 127.0.0.1 40000 8080\r\n"

// proxyServer is ipBoundServer with 127.0.0.2 trusted and PROXY headers
// taken in mode.
func proxyServer(t *testing.T, mode string, mod func(*origin.Config)) (*testServer, string) {
	t.Helper()
	return ipBoundServer(t, proxyConfig(mode, mod))
}

// proxyConfig trusts 127.0.0.2 as a proxy and sets -proxy-protocol mode,
// then applies mod.
func proxyConfig(mode string, mod func(*origin.Config)) func(*origin.Config) {
	return func(c *origin.Config) {
		c.TrustedProxies = []string{"127.0.0.2"}
		c.ProxyProtocol = mode
		if mod != nil {
			mod(c)
		}
	}
}

// sendRaw writes raw bytes (a PROXY header, then a request) and returns the
// status, or 0 when the server closed the connection without a response.
func (c *client) sendRaw(t *testing.T, raw ...[]byte) int {
	t.Helper()
	for i, b := range raw {
		if i > 0 {
			// Let the server see each write alone: a header in pieces
			// must wait for the rest, not be taken for a request.
			time.Sleep(20 * time.Millisecond)
		}
		if _, err := c.conn.Write(b); err != nil {
			return 0
		}
	}
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	if err != nil {
		return 0
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode
}

func get(target string) []byte { return []byte("GET " + target + " HTTP/1.1\r\nHost: t\r\n\r\n") }

// TestProxyProtocol: a trusted proxy's PROXY header (v1 or v2) names the
// client, what token IP binding sees; the same header from any other peer
// closes the connection; without one, trusted and untrusted peers are
// themselves.
func TestProxyProtocol(t *testing.T) {
	for _, tt := range []struct {
		name, mode, from string
		raw              func(target string) [][]byte
		want             int
	}{
		{"v1 from trusted proxy", "optional", "127.0.0.2", func(p string) [][]byte { return [][]byte{[]byte(proxyV1Viewer), get(p)} }, 200},
		{"v1 and request in one write", "required", "127.0.0.2", func(p string) [][]byte { return [][]byte{append([]byte(proxyV1Viewer), get(p)...)} }, 200},
		{"v1 split across writes", "required", "127.0.0.2", func(p string) [][]byte {
			return [][]byte{[]byte(proxyV1Viewer[:9]), []byte(proxyV1Viewer[9:20]), []byte(proxyV1Viewer[20:]), get(p)}
		}, 200},
		{"v2 from trusted proxy", "required", "127.0.0.2", func(p string) [][]byte { return [][]byte{proxyV2("198.51.100.7", 4711), get(p)} }, 200},
		{"v2 naming someone else", "required", "127.0.0.2", func(p string) [][]byte { return [][]byte{proxyV2("203.0.113.1", 4711), get(p)} }, 403},
		{"v2 LOCAL: the proxy itself", "required", "127.0.0.2", func(p string) [][]byte {
			return [][]byte{[]byte("\r\n\r\n\x00\r\nQUIT\n\x20\x00\x00\x00"), get(p)}
		}, 403},
		{"v1 from an untrusted peer", "optional", "127.0.0.1", func(p string) [][]byte { return [][]byte{[]byte(proxyV1Viewer), get(p)} }, 0},
		{"v2 from an untrusted peer", "required", "127.0.0.1", func(p string) [][]byte { return [][]byte{proxyV2("198.51.100.7", 1), get(p)} }, 0},
		{"untrusted peer without a header", "required", "127.0.0.1", func(p string) [][]byte { return [][]byte{get(p)} }, 403},
		{"trusted proxy without a header, optional", "optional", "127.0.0.2", func(p string) [][]byte { return [][]byte{get(p)} }, 403},
		{"trusted proxy without a header, required", "required", "127.0.0.2", func(p string) [][]byte { return [][]byte{get(p)} }, 0},
		{"malformed header from trusted proxy", "optional", "127.0.0.2", func(p string) [][]byte {
			return [][]byte{[]byte("PROXY TCP4 198.51.100.7 nonsense 1 2\r\n"), get(p)}
		}, 0},
		{"off: a PROXY line is just a bad request", "off", "127.0.0.2", func(p string) [][]byte { return [][]byte{[]byte(proxyV1Viewer), get(p)} }, 400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, target := proxyServer(t, tt.mode, nil)
			if got := ts.dialFrom(tt.from).sendRaw(t, tt.raw(target)...); got != tt.want {
				t.Errorf("status %d, want %d (0: closed without a response)", got, tt.want)
			}
		})
	}
}

// TestProxyProtocolThenXFF: behind the PROXY header the client is the one
// it names; an X-Forwarded-For from that client (not a trusted proxy) is
// a spoof and ignored.
func TestProxyProtocolThenXFF(t *testing.T) {
	ts, target := proxyServer(t, "required", nil)
	c := ts.dialFrom("127.0.0.2")
	spoof := []byte("GET " + target + " HTTP/1.1\r\nHost: t\r\nX-Forwarded-For: 203.0.113.1\r\n\r\n")
	if got := c.sendRaw(t, []byte(proxyV1Viewer), spoof); got != 200 {
		t.Errorf("PROXY naming the viewer, spoofed XFF: status %d, want 200", got)
	}
	// The connection is still the *conn.TCP underneath: the body leaves by
	// the socket's own paths (this small file inline with its header in
	// one writev, a larger one by sendfile), never the copy path.
	tr := func() origin.TransportStats { return ts.srv.Stats().Transport }
	waitFor(t, 5*time.Second, "the body sent inline or by sendfile", func() bool {
		return tr().InlineResponses+tr().SendfileResponses == 1
	})
	if n := tr().CopyResponses; n != 0 {
		t.Errorf("CopyResponses = %d behind a PROXY header, want 0", n)
	}
}

// TestProxyProtocolPerIPLimit: -max-conns-per-ip counts requests in
// progress under the client a PROXY header names, never at accept; a
// trusted proxy's own requests are its own client's.
func TestProxyProtocolPerIPLimit(t *testing.T) {
	ts, target := proxyServer(t, "optional", func(c *origin.Config) { c.MaxConnsPerIP = 1 })
	writeSynth(t, ts.root, "vod/title42/big.ts", 64<<20) // more than the socket buffers hold
	held := ts.dialFrom("127.0.0.2")
	held.conn.Write([]byte(proxyV1Viewer))
	held.write("GET", strings.Replace(target, "v1/seg1.ts", "big.ts", 1))
	if resp, err := http.ReadResponse(held.br, &http.Request{Method: "GET"}); err != nil || resp.StatusCode != 200 {
		t.Fatalf("a download for 198.51.100.7: %v, %v", resp, err)
	}
	if got := ts.dialFrom("127.0.0.2").sendRaw(t, []byte(proxyV1Viewer), get(target)); got != 503 {
		t.Errorf("a second request for 198.51.100.7 while its download is in progress, max-conns-per-ip 1: status %d, want 503", got)
	}
	other := "PROXY TCP4 198.51.100.8 127.0.0.1 40001 8080\r\n"
	if got := ts.dialFrom("127.0.0.2").sendRaw(t, []byte(other), get(target)); got != 403 {
		t.Errorf("a connection for another client: status %d, want 403 (served, token bound elsewhere)", got)
	}
	for i := range 3 {
		if got := ts.dialFrom("127.0.0.2").sendRaw(t, get(target)); got != 403 {
			t.Errorf("the proxy's own connection %d: status %d, want 403 (served, not the viewer's)", i, got)
		}
	}
	held.conn.Close()
	waitFor(t, 5*time.Second, "the viewer's place released", func() bool {
		return ts.dialFrom("127.0.0.2").sendRaw(t, []byte(proxyV1Viewer), get(target)) == 200
	})
	st := ts.srv.Stats()
	if st.ProxyAccepted < 3 || st.ClientLimited < 1 || st.ConnsRefused != 0 {
		t.Errorf("stats: proxy accepted %d, limited %d, refused at accept %d; want >= 3, >= 1, 0", st.ProxyAccepted, st.ClientLimited, st.ConnsRefused)
	}
}

// TestProxyProtocolTLS: the PROXY header comes before the TLS handshake.
func TestProxyProtocolTLS(t *testing.T) {
	m := tlsModes[1]
	ts, target := serverMode{tls: &m}.ipBoundServer(t, proxyConfig("required", nil))
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.2")}}
	raw, err := d.Dial("tcp", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := raw.Write(proxyV2("198.51.100.7", 1)); err != nil {
		t.Fatal(err)
	}
	cfg := ts.tls.Clone()
	cfg.ServerName = "127.0.0.1"
	tc := tls.Client(raw, cfg)
	if _, err := io.WriteString(tc, string(get(target))); err != nil {
		t.Fatalf("TLS after a PROXY header: %v", err)
	}
	b, _ := io.ReadAll(io.LimitReader(tc, 64))
	if !strings.HasPrefix(string(b), "HTTP/1.1 200") {
		t.Errorf("TLS after a PROXY header: response %q, want 200", b)
	}
}
