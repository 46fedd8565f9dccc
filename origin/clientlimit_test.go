package origin_test

import (
	"fmt"
	"net"
	"net/http"
	"testing"
	"time"

	"segorigin/origin"
)

// stalledDownload starts a GET of target from src and reads only the
// response header: the server is still sending the body, so the request
// is in progress until conn closes.
func stalledDownload(t *testing.T, ts *testServer, src, target string, headers ...string) net.Conn {
	t.Helper()
	c := ts.dialFrom(src)
	c.write("GET", target, headers...)
	resp, err := http.ReadResponse(c.br, &http.Request{Method: "GET"})
	if err != nil {
		t.Fatalf("stalled download from %s: %v", src, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("stalled download from %s: status %d, want 200", src, resp.StatusCode)
	}
	return c.conn
}

// TestClientLimit: -max-conns-per-ip bounds the requests in progress per
// client, as nginx's limit_conn does: once a client has that many being
// answered, its next request is read and answered 503 with Retry-After
// (limit_conn_status 503; RFC 9110 §15.6.4) on a connection that stays
// usable, never reset at accept; other clients are served; a finished
// download gives its place back. Behind a trusted proxy the client is the
// one X-Forwarded-For names, not the proxy.
func TestClientLimit(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) { testClientLimit(t, engine) })
	}
}

func testClientLimit(t *testing.T, engine origin.Engine) {
	root := t.TempDir()
	writeSynth(t, root, "big.ts", 64<<20) // more than the socket buffers hold
	writeFile(t, root, "a.txt", "AAAA")
	ts := startServer(t, root, func(c *origin.Config) {
		c.Engine = engine
		c.MaxConnsPerIP = 2
		c.TrustedProxies = []string{"127.0.0.9/32"}
	})

	// Direct: two downloads in progress fill the client's place.
	first := stalledDownload(t, ts, "127.0.0.2", "/big.ts")
	stalledDownload(t, ts, "127.0.0.2", "/big.ts")
	c := ts.dialFrom("127.0.0.2")
	r := c.do("GET", "/a.txt")
	mustStatus(t, r, http.StatusServiceUnavailable, "third request from 127.0.0.2")
	if r.header("Retry-After") == "" {
		t.Error("503 over -max-conns-per-ip without Retry-After")
	}
	mustBody(t, r, []byte("503 Service Unavailable\n"), "third request from 127.0.0.2")
	mustBody(t, ts.dialFrom("127.0.0.3").do("GET", "/a.txt"), []byte("AAAA"), "another client")
	first.Close()
	// The same connection that was refused is served once a place is free
	// (once the server has seen the download's connection close).
	refusedAgain := 0
	for i := 0; ; i++ {
		if r = c.do("GET", "/a.txt"); r.StatusCode == http.StatusOK || i == 200 {
			break
		}
		refusedAgain++
		time.Sleep(10 * time.Millisecond)
	}
	mustBody(t, r, []byte("AAAA"), "127.0.0.2 after a download ended, on the refused connection")

	// Through a trusted proxy: counted per viewer.
	xff := func(ip string) string { return "X-Forwarded-For: " + ip }
	stalledDownload(t, ts, "127.0.0.9", "/big.ts", xff("198.51.100.7"))
	stalledDownload(t, ts, "127.0.0.9", "/big.ts", xff("198.51.100.7"))
	mustStatus(t, ts.dialFrom("127.0.0.9").do("GET", "/a.txt", xff("198.51.100.7")), http.StatusServiceUnavailable,
		"a third request for viewer 198.51.100.7 through the proxy")
	for i := range 3 {
		mustBody(t, ts.dialFrom("127.0.0.9").do("GET", "/a.txt", xff(fmt.Sprintf("198.51.100.%d", 10+i))), []byte("AAAA"),
			"another viewer through the same proxy")
	}
	if got, want := ts.srv.Stats().ClientLimited, int64(2+refusedAgain); got != want {
		t.Errorf("ClientLimited = %d, want %d (each 503 above)", got, want)
	}
	if got := ts.srv.Stats().ConnsRefused; got != 0 {
		t.Errorf("ConnsRefused = %d: a connection was refused at accept", got)
	}
}
