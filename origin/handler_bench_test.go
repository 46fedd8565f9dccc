package origin

import (
	"cmp"
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
	servers := map[string]*Server{}
	for _, mode := range []ETagMode{ETagSizeMtime, ETagContent, "access"} {
		cfg := DefaultConfig()
		if mode == "access" {
			// -access on: the in-process request has no peer, so only
			// "all" speaks of it (origin/access); a referer list is read.
			mode, cfg.Access = ETagSizeMtime, "deny 10.0.0.0/8; allow all; valid_referers none *.example.com"
		}
		cfg.Root = root // the default -watch: no revalidation stat, as in production
		cfg.Settle = 0  // written just now, complete
		cfg.ETag = mode
		cfg.ColdReaders = 0 // no Run: the first request hashes in place
		cfg.ReadAhead.Readers = 0
		s, err := New(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		servers[cmp.Or(cfg.Access, string(mode))] = s
	}
	for _, tc := range []struct{ name, path, mode string }{
		{"W4", "/w4/p00.m3u8", "size-mtime"},
		{"W3", "/w3/part0000.m4s", "size-mtime"},
		{"W4-etag-content", "/w4/p00.m3u8", "content"},
		{"W3-etag-content", "/w3/part0000.m4s", "content"},
		{"W4-access", "/w4/p00.m3u8", "deny 10.0.0.0/8; allow all; valid_referers none *.example.com"},
	} {
		s := servers[tc.mode]
		b.Run(tc.name, func(b *testing.B) { benchGET(b, s, tc.path, nil) })
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
