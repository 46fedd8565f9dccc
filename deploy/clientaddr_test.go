package deploy_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
	"segorigin/origin/token"
)

// stream module of Debian's libnginx-mod-stream (installed by .ci/deps).
const streamModule = "/usr/lib/nginx/modules/ngx_stream_module.so"

// TestShieldClientAddress runs one origin behind the shield of
// nginx-shield.conf, both its HTTP cache (which appends the viewer to
// X-Forwarded-For) and its layer 4 pass-through (proxy_protocol on), with
// -trusted-proxies naming the shield. A token bound to the viewer's address
// (ip=127.0.0.1, where this test connects to the shield from) must pass,
// whichever way it comes; one bound to an address the viewer forges in
// X-Forwarded-For must not; -max-conns-per-ip must count the
// viewer, not the shield; the origin's access log must name the viewer.
func TestShieldClientAddress(t *testing.T) {
	testreq.Slow(t, "an origin in a network namespace behind nginx (root, nginx)")
	requireTools(t)
	if _, err := os.Stat(streamModule); err != nil {
		t.Fatalf("nginx's stream module is not at %s (%v): run `make test` or `bash .ci/deps`, which installs libnginx-mod-stream", streamModule, err)
	}
	dir := t.TempDir()
	topo := newTopology(t, 1)
	keyFile := filepath.Join(dir, "keys")
	key := token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	if err := os.WriteFile(keyFile, []byte(fmt.Sprintf("k1 %x\n", key.Secret)), 0o600); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "media")
	if err := os.MkdirAll(filepath.Join(root, "vod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "vod", "seg.ts"), []byte("segment bytes"), 0o644); err != nil {
		t.Fatal(err)
	}
	// More than the socket buffers and the stream proxy's hold: a
	// download of it that is not read stays in progress.
	if err := os.WriteFile(filepath.Join(root, "vod", "big.ts"), make([]byte, 64<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	accessLog := filepath.Join(dir, "access.log")
	o := &origin{
		name: "o1", bin: testproc.Build(t, "./cmd/segorigin"), ns: topo.netns[0], root: root, owner: t,
		addr: fmt.Sprintf("%s:%d", topo.hosts[0], originPort),
		args: []string{
			"-trusted-proxies", topo.gateway + "/32", "-proxy-protocol", "optional",
			"-auth-key-file", keyFile, "-max-conns-per-ip", "2", "-access-log", accessLog,
		},
	}
	o.start(t)
	streamPort := freePort(t)
	sh := startShieldWith(t, filepath.Join(dir, "shield"), []string{o.addr}, func(c *shieldConfig) {
		c.StreamModule = streamModule
		c.StreamListen = fmt.Sprintf("127.0.0.1:%d", streamPort)
	})
	l4 := fmt.Sprintf("127.0.0.1:%d", streamPort)

	now := time.Now()
	signed := 0
	// sign mints a fresh token each call (its exp differs), so that each
	// URL is a miss in the shield's cache and reaches the origin.
	sign := func(ip string) string {
		signed++
		tok, err := token.Sign(key, token.Claims{Expiry: now.Add(time.Hour + time.Duration(signed)*time.Second), ACL: []string{"/vod/*"}, IP: ip})
		if err != nil {
			t.Fatal(err)
		}
		return "/t/" + token.PathSegment(tok) + "/vod/seg.ts"
	}
	viewer, forged := sign("127.0.0.1"), sign("198.51.100.9")
	spoof := "X-Forwarded-For: 198.51.100.9"
	shieldHost := strings.TrimPrefix(sh.base, "http://")
	for _, tt := range []struct {
		name, addr, target string
		hdrs               []string
		want               int
	}{
		{"shield cache: the viewer's token", shieldHost, viewer, nil, 200},
		{"shield cache: a token for a forged X-Forwarded-For", shieldHost, forged, []string{spoof}, 403},
		{"PROXY pass-through: the viewer's token", l4, viewer, nil, 200},
		{"PROXY pass-through: a token for a forged X-Forwarded-For", l4, forged, []string{spoof}, 403},
	} {
		c := dialHTTP(t, tt.addr)
		if got := c.get(t, tt.target, tt.hdrs...); got != tt.want {
			t.Errorf("%s: status %d, want %d", tt.name, got, tt.want)
		}
		c.conn.Close()
	}

	// -max-conns-per-ip 2 counts the requests in progress under the
	// viewer a PROXY header names, as nginx's limit_conn does: two
	// downloads the viewer does not read fill it, and a third request is
	// answered 503 (never reset at accept).
	big := "/vod/big.ts"
	held := []*httpConn{startDownload(t, l4, sign("127.0.0.1")[:len(viewer)-len("/vod/seg.ts")]+big),
		startDownload(t, l4, sign("127.0.0.1")[:len(viewer)-len("/vod/seg.ts")]+big)}
	if got := dialHTTP(t, l4).get(t, viewer); got != 503 {
		t.Errorf("a third request from one viewer with two downloads in progress, -max-conns-per-ip 2: status %d, want 503", got)
	}
	// The same viewer through the shield cache is the same client: the
	// shield's X-Forwarded-For names it.
	if got := dialHTTP(t, shieldHost).get(t, sign("127.0.0.1")); got != 503 {
		t.Errorf("the same viewer through the shield cache: status %d, want 503", got)
	}
	held[0].conn.Close()
	servedConn(t, l4, viewer).conn.Close()

	// The access log names the viewer, never the shield.
	logged, err := os.ReadFile(accessLog)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(logged), "127.0.0.1") || strings.Contains(string(logged), topo.gateway) {
		t.Errorf("origin access log names %s (the shield) or not 127.0.0.1 (the viewer):\n%s", topo.gateway, logged)
	}
	// Neither log holds a usable token: the shield's log keeps the path
	// with the carrier redacted, as the origin's does.
	seg := strings.Split(viewer, "/")[2]
	shieldLogged, err := os.ReadFile(sh.accessLog)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"origin": logged, "shield": shieldLogged} {
		if strings.Contains(string(data), seg) {
			t.Errorf("%s access log holds the signed token %s:\n%s", name, seg, data)
		}
	}
	if !strings.Contains(string(shieldLogged), `"GET /t/.../vod/seg.ts HTTP/1.1"`) {
		t.Errorf("shield access log lacks the redacted request \"GET /t/.../vod/seg.ts HTTP/1.1\":\n%s", shieldLogged)
	}
}

// servedConn dials addr until a GET of target is answered 200 (the
// origin releases a closed connection's place in its limits a moment after
// the close) and returns that connection, open.
func servedConn(t *testing.T, addr, target string) *httpConn {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		c := dialHTTP(t, addr)
		got := c.get(t, target)
		if got == 200 {
			return c
		}
		c.conn.Close()
		if time.Now().After(deadline) {
			t.Fatalf("GET %s via %s: status %d for 5s, want 200", target, addr, got)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// httpConn is one client connection speaking HTTP/1.1.
type httpConn struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialHTTP(t *testing.T, addr string) *httpConn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(15 * time.Second))
	return &httpConn{conn: c, br: bufio.NewReader(c)}
}

// startDownload sends a GET of target and reads only the response's
// header: the rest is still being sent, so the request stays in progress
// at the origin until the connection closes.
func startDownload(t *testing.T, addr, target string) *httpConn {
	t.Helper()
	c := dialHTTP(t, addr)
	req, err := http.NewRequest("GET", "http://shield"+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := req.Write(c.conn); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s via %s: %v, %v; want 200", target, addr, resp, err)
	}
	return c
}

// get sends a GET ("Name: value" headers) and returns the status, or 0
// when the connection ends without a response.
func (c *httpConn) get(t *testing.T, target string, hdrs ...string) int {
	t.Helper()
	req, err := http.NewRequest("GET", "http://shield"+target, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hdrs {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Add(name, value)
	}
	if req.Write(c.conn) != nil {
		return 0
	}
	resp, err := http.ReadResponse(c.br, req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Logf("GET %s: body: %v", target, err)
	}
	return resp.StatusCode
}
