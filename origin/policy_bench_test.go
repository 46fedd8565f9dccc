package origin

import (
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkPolicyPin is what a request pays for reloadable settings: the
// pin of the policy in force (one atomic load, one user value set) and
// the lookups of a W4 answer's steps (CORS, access, media type, gzip,
// Cache-Control and headers, the rate at render).
//
//	go test -run '^$' -bench BenchmarkPolicyPin -benchmem ./origin
func BenchmarkPolicyPin(b *testing.B) {
	s := newBenchServer(b, b.TempDir(), func(*Config) {})
	var ctx fasthttp.RequestCtx
	ctx.Init(&fasthttp.Request{}, nil, nil)
	b.ReportAllocs()
	for b.Loop() {
		s.pol.pin(&ctx)
		for range 6 {
			if s.pol.of(&ctx) == nil {
				b.Fatal("no policy pinned")
			}
		}
		ctx.ResetUserValues()
	}
}
