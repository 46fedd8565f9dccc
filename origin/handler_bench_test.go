package origin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkHandle measures the handler alone, in process: route, cache hit,
// preconditions, response headers, the body stream's attach and Close (the
// latency histogram included) and the header's serialisation, without the
// network or the transport. It is the user-space part of a keep-alive GET
// that loadtest/compare.sh's CPU per request cannot resolve under noise.
// The W4 variants turn the request policy's checks on and off: -access
// (W4-access) and gzip (W4-gzip-off: -gzip off; W4-gzip: a client that
// accepts it, answered from the encoding kept with the entry).
//
//	go test -run '^$' -bench BenchmarkHandle -benchmem ./origin
func BenchmarkHandle(b *testing.B) {
	root := b.TempDir()
	for name, size := range map[string]int64{"w4/p00.m3u8": 1 << 10, "w3/part0000.m4s": 64 << 10} {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(p, make([]byte, size), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	// access is a -access list as an origin closed to its CDN has it:
	// the in-process request has no peer, so only "all" speaks of it
	// (origin/access), after every prefix is tried; a referer list is read.
	const access = "deny 10.0.0.0/8; deny 172.16.0.0/12; deny 192.168.0.0/16; allow all; valid_referers none *.example.com"
	ae := []string{"Accept-Encoding: gzip, deflate, br"}
	for _, tc := range []struct {
		name, path string
		fields     []string
		mod        func(*Config)
	}{
		{"W4", "/w4/p00.m3u8", nil, nil}, // -gzip on (the default), a client that does not ask for it
		{"W3", "/w3/part0000.m4s", nil, nil},
		{"W4-etag-content", "/w4/p00.m3u8", nil, func(c *Config) { c.ETag = ETagContent }},
		{"W3-etag-content", "/w3/part0000.m4s", nil, func(c *Config) { c.ETag = ETagContent }},
		{"W4-access", "/w4/p00.m3u8", nil, func(c *Config) { c.Access = access }},
		{"W4-gzip-off", "/w4/p00.m3u8", nil, func(c *Config) { c.Gzip = GzipOff }},
		{"W4-gzip", "/w4/p00.m3u8", ae, nil}, // compressed: the encoding kept with the entry
	} {
		cfg := DefaultConfig()
		cfg.Root = root     // the default -watch: no revalidation stat, as in production
		cfg.Settle = 0      // written just now, complete
		cfg.ColdReaders = 0 // no Run: the first request hashes in place
		cfg.ReadAhead.Readers = 0
		if tc.mod != nil {
			tc.mod(&cfg)
		}
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		b.Run(tc.name, func(b *testing.B) { benchGETWith(b, s, tc.path, tc.fields, nil) })
	}
}

// benchGET runs s.handle on one GET of target per iteration, in process,
// and serialises the response header as an engine would; check, when
// set, looks at each response.
func benchGET(b *testing.B, s *Server, target string, check func(*fasthttp.Response) error) {
	benchGETWith(b, s, target, nil, check)
}

// benchGETWith is benchGET with request header fields ("Name: value").
func benchGETWith(b *testing.B, s *Server, target string, fields []string, check func(*fasthttp.Response) error) {
	var req fasthttp.Request
	req.SetRequestURI(target)
	req.Header.SetHost("127.0.0.1:8080")
	for _, f := range fields {
		k, v, _ := strings.Cut(f, ": ")
		req.Header.Set(k, v)
	}
	var ctx fasthttp.RequestCtx
	ctx.Init(&req, nil, nil)
	var hdr []byte
	b.ReportAllocs()
	for b.Loop() {
		s.h.handle(&ctx)
		if ctx.Response.StatusCode() != fasthttp.StatusOK {
			b.Fatalf("GET %s: status %d", target, ctx.Response.StatusCode())
		}
		if check != nil {
			if err := check(&ctx.Response); err != nil {
				b.Fatalf("GET %s: %v", target, err)
			}
		}
		hdr = ctx.Response.Header.AppendBytes(hdr[:0])
		ctx.Response.CloseBodyStream()
		ctx.Response.Reset()
	}
}

// BenchmarkHandleParallel is BenchmarkHandle/W4 on every P at once: what the
// shared counters, the cache's lock and the histogram cost when two cores
// serve at the same time.
func BenchmarkHandleParallel(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "w4"), 0o755); err != nil {
		b.Fatal(err)
	}
	for _, n := range []string{"p00.m3u8", "p01.m3u8"} {
		if err := os.WriteFile(filepath.Join(root, "w4", n), make([]byte, 1<<10), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.Root = root
	cfg.Settle = 0 // written just now, complete
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		var req fasthttp.Request
		req.SetRequestURI("/w4/p00.m3u8")
		req.Header.SetHost("127.0.0.1:8080")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, nil, nil)
		for pb.Next() {
			s.h.handle(&ctx)
			if ctx.Response.StatusCode() != fasthttp.StatusOK {
				b.Errorf("status %d", ctx.Response.StatusCode())
				return
			}
			ctx.Response.CloseBodyStream()
			ctx.Response.Reset()
		}
	})
}
