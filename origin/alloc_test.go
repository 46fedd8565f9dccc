package origin_test

import (
	"bytes"
	"fmt"
	"io"
	"testing"

	"segorigin/origin"
)

// TestServeAllocatesNothing: a keep-alive request of the workloads that
// small responses dominate (ARCHITECTURE.md "Workloads": W3 64 KiB parts,
// W4 1 KiB playlists, W6 304 revalidations) allocates nothing on the server once warm, access
// log off, with size-mtime ETags and with content ETags once known.
// AllocsPerRun counts every goroutine, so the client below writes a
// prepared request and reads the response into a fixed buffer.
func TestServeAllocatesNothing(t *testing.T) {
	if origin.RaceEnabled {
		// make test runs the allocation tests again without -race.
		t.Skip("allocation budgets do not hold under -race (sync.Pool drops items); `make unit` checks them without it")
	}
	t.Run("size-mtime", func(t *testing.T) { testServeAllocatesNothing(t, nil) })
	t.Run("etag-content", func(t *testing.T) { testServeAllocatesNothing(t, contentETag) })
	t.Run("access rules", func(t *testing.T) {
		testServeAllocatesNothing(t, func(c *origin.Config) {
			c.Access = "deny 10.0.0.0/8; allow 127.0.0.0/8; deny all; valid_referers none *.example.com"
		})
	})
}

func testServeAllocatesNothing(t *testing.T, mod func(*origin.Config)) {
	root := t.TempDir()
	writeSynth(t, root, "w3/part0000.m4s", 64<<10)
	writeSynth(t, root, "w4/p00.m3u8", 1<<10)
	ts := startServer(t, root, mod)
	etag3, etag4 := ts.get("/w3/part0000.m4s").header("ETag"), ts.get("/w4/p00.m3u8").header("ETag")
	tests := []struct {
		name, target, header string
		status               string
	}{
		{"W3 64 KiB (sendfile)", "/w3/part0000.m4s", "", "200"},
		{"W4 inline 1 KiB", "/w4/p00.m3u8", "", "200"},
		{"W6 304 of 1 KiB", "/w4/p00.m3u8", "If-None-Match: " + etag4 + "\r\n", "304"},
		{"W6 304 of 64 KiB", "/w3/part0000.m4s", "If-None-Match: " + etag3 + "\r\n", "304"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ts.dial()
			req := []byte(fmt.Sprintf("GET %s HTTP/1.1\r\nHost: b\r\n%s\r\n", tt.target, tt.header))
			// The first response tells the length of every later one: the
			// Date header has a fixed width.
			r := c.do("GET", tt.target, stringsTrimCRLF(tt.header)...)
			mustStatus(t, r, map[string]int{"200": 200, "304": 304}[tt.status], tt.name)
			buf := make([]byte, 128<<10)
			if _, err := c.conn.Write(req); err != nil {
				t.Fatal(err)
			}
			n, err := readResponse(c, buf)
			if err != nil {
				t.Fatal(err)
			}
			one := func() {
				if _, err := c.conn.Write(req); err != nil {
					t.Fatal(err)
				}
				if _, err := io.ReadFull(c.conn, buf[:n]); err != nil {
					t.Fatal(err)
				}
			}
			for range 50 {
				one()
			}
			if !bytes.HasPrefix(buf, []byte("HTTP/1.1 "+tt.status)) {
				t.Fatalf("response %q, want status %s", buf[:min(n, 40)], tt.status)
			}
			if a := testing.AllocsPerRun(500, one); a != 0 {
				t.Errorf("%s: %.2f allocations per request, want 0", tt.name, a)
			}
		})
	}
}

// readResponse reads one whole response of known framing (Content-Length
// or none) from c's raw connection into buf and returns its length. The
// client's bufio.Reader must hold nothing (c.do read its response whole).
func readResponse(c *client, buf []byte) (int, error) {
	if c.br.Buffered() > 0 {
		return 0, fmt.Errorf("client buffer holds %d bytes", c.br.Buffered())
	}
	n := 0
	for {
		k, err := c.conn.Read(buf[n:])
		n += k
		if err != nil {
			return n, err
		}
		end := bytes.Index(buf[:n], []byte("\r\n\r\n"))
		if end < 0 {
			continue
		}
		cl := 0
		if i := bytes.Index(buf[:end], []byte("Content-Length: ")); i >= 0 {
			fmt.Sscanf(string(buf[i+len("Content-Length: "):end]), "%d", &cl)
		}
		if bytes.HasPrefix(buf, []byte("HTTP/1.1 304")) {
			cl = 0 // RFC 9110 §8.6: a 304's Content-Length is the 200's; no body follows
		}
		if n >= end+4+cl {
			return end + 4 + cl, nil
		}
	}
}

func stringsTrimCRLF(h string) []string {
	if h == "" {
		return nil
	}
	return []string{h[:len(h)-2]}
}
