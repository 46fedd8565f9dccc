package origin_test

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"segorigin/origin"
)

// BenchmarkHTTPS serves the W1 and W2 shapes over HTTPS (TLS 1.3,
// AES-128-GCM, one keep-alive connection) from segorigin and, beside it,
// from net/http's ServeContent with the same certificate, records and
// client:
//
//   - W1: full GET of 2 MiB segments (16 files, in turn).
//   - W2: Range GET of random 256 KiB spans of one 64 MiB file (206).
//
// Client and server share the process, so ns/op and allocs/op include the
// client's decryption; the comparison is between servers under the same
// client. On this kernel (no kTLS) segorigin's bodies take the copy path.
//
//	go test ./origin -run '^$' -bench HTTPS -benchtime 3s
func BenchmarkHTTPS(b *testing.B) {
	root := b.TempDir()
	for i := range 16 {
		writeSynth(b, root, fmt.Sprintf("w1/seg%02d.m4s", i), 2<<20)
	}
	writeSynth(b, root, "w2/big.mp4", 64<<20)
	servers := []struct {
		name  string
		start func(*testing.B, string) string
	}{
		{"segorigin", startBenchSegorigin},
		{"net-http", startBenchNetHTTP},
	}
	for _, srv := range servers {
		addr := srv.start(b, root)
		b.Run("W1-2MiB/"+srv.name, func(b *testing.B) {
			c := dialBench(b, addr)
			b.SetBytes(2 << 20)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				c.get(b, fmt.Sprintf("/w1/seg%02d.m4s", i%16), "", 200, 2<<20)
			}
		})
		b.Run("W2-256KiB-range/"+srv.name, func(b *testing.B) {
			c := dialBench(b, addr)
			rng := rand.New(rand.NewPCG(1, 2))
			b.SetBytes(256 << 10)
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				off := rng.Int64N(64<<20 - 256<<10)
				c.get(b, "/w2/big.mp4", fmt.Sprintf("Range: bytes=%d-%d\r\n", off, off+256<<10-1), 206, 256<<10)
			}
		})
	}
}

// benchServerTLS is the server side of both peers: the test certificate,
// TLS 1.2+, AEAD suites, full-size records.
func benchServerTLS() *tls.Config {
	p := testCert()
	cert, err := tls.X509KeyPair(p.CertPEM, p.KeyPEM)
	if err != nil {
		panic(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		NextProtos: []string{"http/1.1"}, DynamicRecordSizingDisabled: true}
}

func startBenchSegorigin(b *testing.B, root string) string {
	return startServerMode(b, root, func(c *origin.Config) {
		c.Watch = false
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}, &tlsMode{name: "bench", ktls: origin.KTLSAuto}).addr
}

// startBenchNetHTTP is the baseline: open per request and ServeContent, as
// http.FileServer does.
func startBenchNetHTTP(b *testing.B, root string) string {
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, err := os.Open(filepath.Join(root, filepath.FromSlash(r.URL.Path)))
		if err != nil {
			http.NotFound(w, r)
			return
		}
		defer f.Close()
		st, err := f.Stat()
		if err != nil {
			http.Error(w, "stat", 500)
			return
		}
		http.ServeContent(w, r, st.Name(), st.ModTime(), f)
	})
	ts := httptest.NewUnstartedServer(h)
	ts.TLS = benchServerTLS()
	ts.StartTLS()
	b.Cleanup(ts.Close)
	return ts.Listener.Addr().String()
}

// benchClient is one keep-alive HTTPS connection that checks the status
// and length and drains the body into one reused buffer.
type benchClient struct {
	c   *tls.Conn
	br  *bufio.Reader
	buf []byte
	req []byte
}

func dialBench(b *testing.B, addr string) *benchClient {
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: testCert().Pool, MinVersion: tls.VersionTLS13,
		NextProtos: []string{"http/1.1"}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return &benchClient{c: c, br: bufio.NewReaderSize(c, 64<<10), buf: make([]byte, 64<<10)}
}

func (c *benchClient) get(b *testing.B, path, hdr string, status int, n int64) {
	c.req = append(c.req[:0], "GET "...)
	c.req = append(c.req, path...)
	c.req = append(c.req, " HTTP/1.1\r\nHost: bench\r\n"...)
	c.req = append(c.req, hdr...)
	c.req = append(c.req, "\r\n"...)
	if _, err := c.c.Write(c.req); err != nil {
		b.Fatal(err)
	}
	var cl int64 = -1
	for first := true; ; first = false {
		line, err := c.br.ReadSlice('\n')
		if err != nil {
			b.Fatal(err)
		}
		if first {
			if !bytes.HasPrefix(line, []byte("HTTP/1.1 "+strconv.Itoa(status))) {
				b.Fatalf("GET %s: status line %q, want %d", path, line, status)
			}
			continue
		}
		if len(line) <= 2 {
			break
		}
		if k, v, ok := bytes.Cut(line, []byte(":")); ok && bytes.EqualFold(k, []byte("Content-Length")) {
			cl, _ = strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		}
	}
	if cl != n {
		b.Fatalf("GET %s: Content-Length %d, want %d", path, cl, n)
	}
	for cl > 0 {
		k, err := c.br.Read(c.buf[:min(int64(len(c.buf)), cl)])
		if err != nil {
			b.Fatal(err)
		}
		cl -= int64(k)
	}
}
