package origin_test

import (
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
)

// The nginx directives of docs/migrating-from-nginx.md that no test of
// their own subsystem covers, each as nginx documents it.

// TestMaxRequestsPerConn: nginx's keepalive_requests: "after the maximum
// number of requests are made, the connection is closed" (-max-requests-
// per-conn); the last answer says Connection: close.
func TestMaxRequestsPerConn(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		ts := mode.start(t, "", func(c *origin.Config) { c.MaxRequestsPerConn = 2 })
		writeFile(t, ts.root, "a.m3u8", "#EXTM3U\n")
		c := ts.dial()
		r := c.do("GET", "/a.m3u8")
		mustStatus(t, r, 200, "the first request")
		if r.Close {
			t.Errorf("the first request: Connection: close, want the connection kept")
		}
		r = c.do("GET", "/a.m3u8")
		mustStatus(t, r, 200, "the second request")
		if !r.Close { // net/http reads Connection: close into Close
			t.Errorf("the second request: no Connection: close")
		}
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if n, err := c.br.Read(make([]byte, 1)); n != 0 || err != io.EOF {
			t.Fatalf("after -max-requests-per-conn requests: read %d bytes, %v; want the end of the stream", n, err)
		}
	})
}

// TestServerName: nginx's server_tokens: -server-name sets the Server
// field of every answer, errors included, and an empty one omits it.
func TestServerName(t *testing.T) {
	for _, tc := range []struct{ name, want string }{{"segorigin", "segorigin"}, {"edge-origin/2", "edge-origin/2"}, {"", ""}} {
		everyMode(t, func(t *testing.T, mode serverMode) {
			ts := mode.start(t, "", func(c *origin.Config) { c.ServerName = tc.name })
			writeFile(t, ts.root, "a.m3u8", "#EXTM3U\n")
			c := ts.dial()
			for _, target := range []string{"/a.m3u8", "/missing.m3u8"} {
				r := c.do("GET", target)
				if got, ok := r.Header["Server"]; tc.want == "" && ok || tc.want != "" && (len(got) != 1 || got[0] != tc.want) {
					t.Errorf("-server-name %q, GET %s: Server %q, want %q", tc.name, target, got, tc.want)
				}
			}
		})
	}
}

// TestGzipMinLength: nginx's gzip_min_length: a file shorter than
// -gzip-min-length goes as it is to a client accepting gzip (with Vary:
// Accept-Encoding, the choice having depended on it); one as long is
// compressed.
func TestGzipMinLength(t *testing.T) {
	body := "#EXTM3U\n" + strings.Repeat("#EXTINF:4.0,\nsegment.ts\n", 8) // 208 bytes
	for _, tc := range []struct {
		min      int64
		encoding string
	}{{int64(len(body)) + 1, ""}, {int64(len(body)), "gzip"}} {
		ts := startServer(t, "", func(c *origin.Config) { c.GzipMinLength = tc.min })
		writeFile(t, ts.root, "a.m3u8", body)
		r := ts.get("/a.m3u8", "Accept-Encoding: gzip")
		mustStatus(t, r, 200, "GET")
		mustHeader(t, r, "Content-Encoding", tc.encoding, fmt.Sprintf("a 208-byte playlist, -gzip-min-length %d", tc.min))
		mustHeader(t, r, "Vary", "Accept-Encoding", "a 208-byte playlist")
	}
}
