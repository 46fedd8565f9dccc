package origin

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/valyala/fasthttp"
)

// BenchmarkGzip is the CPU of a playlist answer by encoding: an HLS media
// playlist of 400 segments (11 KiB, 1 KiB compressed; inlined) and a DASH
// manifest of 1500 segment URLs (62 KiB, 4 KiB compressed; sent through
// its descriptor when identity), answered as they
// are (no Accept-Encoding), gzip-compressed from the encoding kept with
// the cache entry (what every request but the first of a version costs),
// and compressed for every request (-inline-budget 0: nothing is kept,
// what nginx's gzip does).
//
//	go test -run '^$' -bench BenchmarkGzip -benchmem -count 5 ./origin
func BenchmarkGzip(b *testing.B) {
	root := b.TempDir()
	var pl, mpd bytes.Buffer
	pl.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:6\n#EXT-X-PLAYLIST-TYPE:VOD\n")
	for i := range 400 {
		fmt.Fprintf(&pl, "#EXTINF:6.000,\nseg_%05d.ts\n", i)
	}
	pl.WriteString("#EXT-X-ENDLIST\n")
	mpd.WriteString(`<?xml version="1.0"?>` + "\n" + `<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static"><Period><AdaptationSet><Representation id="v" bandwidth="800000"><SegmentList duration="6">` + "\n")
	for i := range 1500 {
		fmt.Fprintf(&mpd, `<SegmentURL media="video/seg_%05d.m4s"/>`+"\n", i)
	}
	mpd.WriteString("</SegmentList></Representation></AdaptationSet></Period></MPD>\n")
	for name, body := range map[string][]byte{"index.m3u8": pl.Bytes(), "manifest.mpd": mpd.Bytes()} {
		if err := os.WriteFile(filepath.Join(root, name), body, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	kept := newBenchServer(b, root, func(*Config) {})
	perRequest := newBenchServer(b, root, func(c *Config) { c.InlineBudget = 0 })
	gzipped := func(r *fasthttp.Response) error {
		if string(r.Header.ContentEncoding()) != "gzip" {
			return fmt.Errorf("Content-Encoding %q, want gzip", r.Header.ContentEncoding())
		}
		return nil
	}
	ae := []string{"Accept-Encoding: gzip, deflate, br"}
	for _, file := range []string{"index.m3u8", "manifest.mpd"} {
		target := "/" + file
		b.Run(file+"/identity", func(b *testing.B) { benchGET(b, kept, target, nil) })
		b.Run(file+"/gzip kept", func(b *testing.B) { benchGETWith(b, kept, target, ae, gzipped) })
		b.Run(file+"/gzip per request", func(b *testing.B) { benchGETWith(b, perRequest, target, ae, gzipped) })
	}
}

func newBenchServer(b *testing.B, root string, mod func(*Config)) *Server {
	cfg := DefaultConfig()
	cfg.Root = root
	cfg.Settle = 0 // written just now, complete
	mod(&cfg)
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	return s
}
