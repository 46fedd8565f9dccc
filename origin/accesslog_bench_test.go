package origin

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"

	"segorigin/origin/accesslog"
)

// BenchmarkHandleLogged is BenchmarkHandle/W4 with the access log on (to
// io.Discard: the format's cost, not the disk's), and with CMCD in the
// request: what an operator pays for the line and for the player's data.
//
//	go test -run '^$' -bench BenchmarkHandleLogged -benchmem ./origin
func BenchmarkHandleLogged(b *testing.B) {
	root := b.TempDir()
	if err := os.WriteFile(filepath.Join(root, "p.m3u8"), make([]byte, 1<<10), 0o644); err != nil {
		b.Fatal(err)
	}
	cmcdHeaders := map[string]string{
		"CMCD-Object": "br=3200,d=4004,ot=v,tb=6000", "CMCD-Request": `bl=21300,mtp=48100,nor="p2.m3u8",su`,
		"CMCD-Session": `cid="faec5fc2",sf=h,sid="6e2fb550-c457-11e9-bb97-0800200c9a66",st=v`,
	}
	for _, tc := range []struct {
		name   string
		log    bool
		format accesslog.Format
		cmcd   bool
	}{
		{"off", false, 0, false},
		{"combined", true, accesslog.Combined, false},
		{"json", true, accesslog.JSON, false},
		{"cmcd-unlogged", false, 0, true},
		{"cmcd-json", true, accesslog.JSON, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Settle = 0 // written just now, complete
			cfg.Root = root
			if tc.log {
				cfg.AccessLog, cfg.AccessLogFormat = io.Discard, tc.format
			}
			s, err := New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			var req fasthttp.Request
			req.SetRequestURI("/p.m3u8")
			req.Header.SetHost("127.0.0.1:8080")
			req.Header.SetUserAgent("Mozilla/5.0 (X11; Linux x86_64) Chrome/156.0")
			if tc.cmcd {
				for k, v := range cmcdHeaders {
					req.Header.Set(k, v)
				}
			}
			var ctx fasthttp.RequestCtx
			ctx.Init(&req, nil, nil)
			b.ReportAllocs()
			for b.Loop() {
				s.h.handle(&ctx)
				if ctx.Response.StatusCode() != fasthttp.StatusOK {
					b.Fatalf("status %d", ctx.Response.StatusCode())
				}
				ctx.Response.CloseBodyStream()
				ctx.Response.Reset()
			}
		})
	}
}
