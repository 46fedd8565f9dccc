package origin_test

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// dialFrom opens a connection to ts from a chosen loopback source address
// (all of 127.0.0.0/8 is local on Linux), so one server sees a trusted and
// an untrusted peer.
func (ts *testServer) dialFrom(src string) *client {
	ts.t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", ts.addr)
	if err != nil {
		ts.t.Fatalf("dial %s from %s: %v", ts.addr, src, err)
	}
	ts.t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: ts.t, conn: c, br: bufio.NewReader(c)}
}

// ipBoundServer serves a file only to requests whose client address is
// 198.51.100.7 (a token with ip=), so the status says which address the
// server attributed the request to.
func ipBoundServer(t *testing.T, mod func(*origin.Config)) (ts *testServer, target string) {
	t.Helper()
	return serverMode{}.ipBoundServer(t, mod)
}

// ipBoundServer is ipBoundServer in mode.
func (mode serverMode) ipBoundServer(t *testing.T, mod func(*origin.Config)) (ts *testServer, target string) {
	t.Helper()
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.authServerCfg(t, now, mod)
	tok := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/*"}, IP: "198.51.100.7"})
	return ts, "/t/" + token.PathSegment(tok) + "/vod/title42/v1/seg1.ts"
}

// TestClientAddressFromTrustedProxy: X-Forwarded-For and Forwarded name the
// client only when the peer is a trusted proxy, read right to left to the
// first untrusted hop; from any other peer they are spoofs and ignored.
func TestClientAddressFromTrustedProxy(t *testing.T) {
	const proxy, stranger = "127.0.0.2", "127.0.0.1"
	for _, tt := range []struct {
		name, header, from string
		hdrs               []string
		want               int
	}{
		{"XFF from trusted proxy", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 198.51.100.7"}, 200},
		{"XFF spoofed by a client, appended by the proxy", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 198.51.100.7, 203.0.113.5"}, 403},
		{"XFF through two trusted hops", origin.ClientIPHeaderXFF, proxy, []string{"X-Forwarded-For: 1.2.3.4, 198.51.100.7", "X-Forwarded-For: 127.0.0.9"}, 200},
		{"XFF from an untrusted peer", origin.ClientIPHeaderXFF, stranger, []string{"X-Forwarded-For: 198.51.100.7"}, 403},
		{"Forwarded from trusted proxy", origin.ClientIPHeaderForwarded, proxy, []string{"Forwarded: for=198.51.100.7;proto=https"}, 200},
		{"Forwarded from an untrusted peer", origin.ClientIPHeaderForwarded, stranger, []string{"Forwarded: for=198.51.100.7"}, 403},
		{"XFF ignored when Forwarded is configured", origin.ClientIPHeaderForwarded, proxy, []string{"X-Forwarded-For: 198.51.100.7"}, 403},
		{"Forwarded ignored when XFF is configured", origin.ClientIPHeaderXFF, proxy, []string{"Forwarded: for=198.51.100.7"}, 403},
		{"headers off", origin.ClientIPHeaderNone, proxy, []string{"X-Forwarded-For: 198.51.100.7"}, 403},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ts, target := ipBoundServer(t, func(c *origin.Config) {
				c.TrustedProxies = []string{"127.0.0.2/32", "127.0.0.9"}
				c.ClientIPHeader = tt.header
			})
			mustStatus(t, ts.dialFrom(tt.from).do("GET", target, tt.hdrs...), tt.want, tt.name)
		})
	}
}

// TestClientAddressInAccessLog: the access log names the client, not the
// proxy.
func TestClientAddressInAccessLog(t *testing.T) {
	var buf syncBuffer
	ts := startServer(t, "", func(c *origin.Config) {
		c.TrustedProxies = []string{"127.0.0.2"}
		c.AccessLog = &buf
	})
	writeFile(t, ts.root, "a.m3u8", "#EXTM3U\n")
	mustStatus(t, ts.dialFrom("127.0.0.2").do("GET", "/a.m3u8", "X-Forwarded-For: 198.51.100.7"), 200, "via proxy")
	mustStatus(t, ts.dialFrom("127.0.0.1").do("GET", "/a.m3u8", "X-Forwarded-For: 198.51.100.8"), 200, "spoofed")
	waitFor(t, 5*time.Second, "two access log lines", func() bool { return strings.Count(buf.String(), "\n") >= 2 })
	log := buf.String()
	if !strings.Contains(log, "198.51.100.7") || strings.Contains(log, "198.51.100.8") || !strings.Contains(log, "127.0.0.1") {
		t.Errorf("access log = %q, want client 198.51.100.7 for the proxied request and 127.0.0.1 (not the spoofed 198.51.100.8) for the other", log)
	}
}

func TestTrustedProxiesRefused(t *testing.T) {
	for _, mod := range []func(*origin.Config){
		func(c *origin.Config) { c.TrustedProxies = []string{"10.0.0.0/33"} },
		func(c *origin.Config) { c.ClientIPHeader = "X-Real-IP" },
	} {
		cfg := origin.DefaultConfig()
		cfg.Root = t.TempDir()
		mod(&cfg)
		if _, err := origin.New(cfg); err == nil {
			t.Errorf("New(%+v): nil error, want refused", cfg.TrustedProxies)
		}
	}
}
