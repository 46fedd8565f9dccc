package origin_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/valyala/fasthttp"

	"segorigin/origin"
	"segorigin/origin/accesslog"
)

// BenchmarkServe measures keep-alive GETs over loopback, segorigin beside
// Go's net/http FileServer and fasthttp.FS on the same files in the same
// run (compare with benchstat, or read the ratio from ns/op):
//
//	go test -run '^$' -bench BenchmarkServe -benchtime 2000x ./origin
//
// Workloads follow ARCHITECTURE.md "Workloads": W1 2 MiB segments, W2 256 KiB spans of a
// large file, W3 64 KiB parts, W4 1 KiB playlists. Client and servers
// share the process and the two cores, so this is the whole request cost,
// not the server's alone: loadtest/compare.sh separates server CPU.
func BenchmarkServe(b *testing.B) {
	root := b.TempDir()
	files := map[string]int64{"w1.m4s": 2 << 20, "w2.mp4": 64 << 20, "w3.m4s": 64 << 10, "w4.m3u8": 1 << 10}
	for name, size := range files {
		if err := writeSynthB(filepath.Join(root, name), size); err != nil {
			b.Fatal(err)
		}
	}
	servers := []struct {
		name  string
		start func(b *testing.B, root string) string
	}{
		{"segorigin", startSegorigin},
		{"segorigin-nocache", startSegoriginNoCache},
		{"segorigin-accesslog", startSegoriginAccessLog},
		{"nethttp", startNetHTTP},
		{"fasthttpfs", startFastHTTPFS},
	}
	workloads := []struct {
		name, target, rng string
		bytes             int64
	}{
		{"W1", "/w1.m4s", "", 2 << 20},
		{"W2", "/w2.mp4", "bytes=%d-%d", 256 << 10},
		{"W3", "/w3.m4s", "", 64 << 10},
		{"W4", "/w4.m3u8", "", 1 << 10},
	}
	for _, w := range workloads {
		for _, srv := range servers {
			b.Run(w.name+"/"+srv.name, func(b *testing.B) {
				addr := srv.start(b, root)
				c, err := net.Dial("tcp", addr)
				if err != nil {
					b.Fatal(err)
				}
				defer c.Close()
				br := bufio.NewReaderSize(c, 64<<10)
				do := func(i int) {
					req := "GET " + w.target + " HTTP/1.1\r\nHost: b\r\n"
					if w.rng != "" {
						off := int64(i%255) * (256 << 10)
						req += "Range: " + fmt.Sprintf(w.rng, off, off+256<<10-1) + "\r\n"
					}
					if _, err := io.WriteString(c, req+"\r\n"); err != nil {
						b.Fatal(err)
					}
					if n, err := discardResponse(br); err != nil || n != w.bytes {
						b.Fatalf("response %d: %d bytes, %v; want %d", i, n, err, w.bytes)
					}
				}
				for i := range 255 { // warm the page cache and the server's caches
					do(i)
				}
				b.SetBytes(w.bytes)
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					do(i)
				}
			})
		}
	}
}

func writeSynthB(path string, size int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	return f.Truncate(size) // content is irrelevant to the cost; sparse is fine
}

// discardResponse reads one response and discards its body, returning the
// body length.
func discardResponse(br *bufio.Reader) (int64, error) {
	var cl int64 = -1
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return 0, err
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			cl, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	if cl < 0 {
		return 0, fmt.Errorf("no Content-Length")
	}
	n, err := br.Discard(int(cl))
	return int64(n), err
}

func startSegorigin(b *testing.B, root string) string {
	return startSegoriginWith(b, root, 4096)
}

// startSegoriginNoCache: the fd cache off (-cache-files 0), to show what it
// saves.
func startSegoriginNoCache(b *testing.B, root string) string {
	return startSegoriginWith(b, root, 0)
}

// startSegoriginAccessLog: every response logged (JSON, to a discarding
// writer), to show what the access log costs.
func startSegoriginAccessLog(b *testing.B, root string) string {
	return startSegoriginWith(b, root, 4096, func(c *origin.Config) {
		c.AccessLog, c.AccessLogFormat = io.Discard, accesslog.JSON
	})
}

func startSegoriginWith(b *testing.B, root string, cacheFiles int, mods ...func(*origin.Config)) string {
	return startServerMode(b, root, func(c *origin.Config) {
		c.CacheFiles = cacheFiles
		for _, m := range mods {
			m(c)
		}
		c.Logger = nil
	}, nil).addr
}

func startNetHTTP(b *testing.B, root string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	hs := &http.Server{Handler: http.FileServer(http.Dir(root))}
	go hs.Serve(ln) // ends when Close closes the listener
	b.Cleanup(func() { hs.Close() })
	return ln.Addr().String()
}

func startFastHTTPFS(b *testing.B, root string) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	fs := &fasthttp.FS{Root: root, AcceptByteRange: true, Compress: false}
	s := &fasthttp.Server{Handler: fs.NewRequestHandler()}
	go s.Serve(ln) // ends when Shutdown closes the listener
	b.Cleanup(func() { s.Shutdown() })
	return ln.Addr().String()
}
