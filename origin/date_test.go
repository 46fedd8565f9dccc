package origin

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"
)

// TestDateClampAllocs: the Last-Modified clamp adds no allocation to a
// request when it must read the Date fasthttp writes (a file modified in
// the future: every request) over one for a file older than the Date (the
// common path: one atomic load).
func TestDateClampAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation budgets do not hold under -race (sync.Pool drops items)")
	}
	root := t.TempDir()
	old, future := filepath.Join(root, "old.m3u8"), filepath.Join(root, "future.m3u8")
	for _, p := range []string{old, future} {
		if err := os.WriteFile(p, []byte("#EXTM3U\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	then := time.Now().Add(time.Hour)
	if err := os.Chtimes(future, then, then); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Root = root
	cfg.Settle = 0 // written just now, complete
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var allocs [2]float64
	for i, path := range []string{"/old.m3u8", "/future.m3u8"} {
		var req fasthttp.Request
		req.SetRequestURI(path)
		req.Header.SetHost("127.0.0.1:8080")
		var ctx fasthttp.RequestCtx
		ctx.Init(&req, nil, nil)
		serve := func() {
			s.h.handle(&ctx)
			if ctx.Response.StatusCode() != fasthttp.StatusOK {
				t.Fatalf("GET %s: status %d", path, ctx.Response.StatusCode())
			}
			ctx.Response.CloseBodyStream()
			ctx.Response.Reset()
		}
		serve() // warm the cache and the pools
		allocs[i] = testing.AllocsPerRun(200, serve)
	}
	if allocs[1] > allocs[0] {
		t.Errorf("allocations per request: %.1f with a future mtime, want no more than %.1f with an old one", allocs[1], allocs[0])
	}
}

// TestParseDateLine: the clamp finds the Date in the header fasthttp
// serialises; a change of its format must fail here, not silently disable
// the clamp.
func TestParseDateLine(t *testing.T) {
	var d dateClamp
	got, ok := d.current()
	if !ok {
		t.Fatalf("current: no Date line in an empty fasthttp response header")
	}
	if now := time.Now(); got.After(now) || got.Year() != now.Year() {
		t.Errorf("current = %v, want a time at or before %v", got, now)
	}
	if _, ok := parseDateLine([]byte("HTTP/1.1 200 OK\r\nServer: x\r\n\r\n")); ok {
		t.Errorf("parseDateLine found a Date in a header without one")
	}
}
