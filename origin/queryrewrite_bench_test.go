package origin

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/fixtures/synth"
	"segorigin/origin/token"
)

// BenchmarkQueryRewrite is BenchmarkHandle/W4 with authorization on: the
// W4 playlist (1 KiB, 28 segment URIs) through a path token, served as the
// file is, beside the same playlist through a query token, rewritten so
// every URI carries it. The difference is what the rewrite costs per
// playlist request; the network and the send cost about the same (one
// send either way, of a body 1 KiB or 4 KiB long).
//
//	go test -run '^$' -bench BenchmarkQueryRewrite -benchmem -count 5 ./origin
func BenchmarkQueryRewrite(b *testing.B) {
	root := b.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "w4"), 0o755); err != nil {
		b.Fatal(err)
	}
	playlist := synth.Playlist("p00.m3u8", 1<<10)
	if err := os.WriteFile(filepath.Join(root, "w4", "p00.m3u8"), playlist, 0o644); err != nil {
		b.Fatal(err)
	}
	key := token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	ring, err := token.NewKeyring(key)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Root = root
	cfg.Auth.Keys = ring
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Close() })
	tok, err := token.Sign(key, token.Claims{Expiry: time.Now().Add(time.Hour), ACL: []string{"/*"}, KeyID: "k1"})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name, target string
		rewritten    bool
	}{
		{"W4 path token, file", "/t/" + token.PathSegment(tok) + "/w4/p00.m3u8", false},
		{"W4 query token, rewritten", "/w4/p00.m3u8?token=" + tok, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			benchGET(b, s, tc.target, func(r *fasthttp.Response) error {
				if tc.rewritten && !bytes.Contains(r.Body(), []byte(".m4s?token=")) {
					return errors.New("the playlist was not rewritten")
				}
				return nil
			})
		})
	}
}
