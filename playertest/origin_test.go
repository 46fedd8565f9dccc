package playertest

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// mediaRoot is the fixture tree every test serves (tests run in playertest/).
const mediaRoot = "../fixtures/media"

// stream is one fixture stream as a player opens it.
type stream struct {
	name     string // short name for subtests and screenshots
	manifest string // URL path of the playlist or MPD, under mediaRoot
	dash     bool   // DASH (dash.js, Shaka) rather than HLS (hls.js)
	// rangeOnly: its media lives in single files that players can only fetch
	// with Range requests (EXT-X-BYTERANGE, SegmentBase indexRange).
	rangeOnly bool
}

// mediaPlaylist is a media playlist opened directly (no master): the
// query variant plays it too, since a player handed index.m3u8?token=T
// must keep the token on every segment.
var mediaPlaylist = stream{name: "hls-ts-180p", manifest: "/hls/ts/180p/index.m3u8"}

// seekable are the streams ffmpeg 5.1 can seek in (not fMP4 HLS, not
// DASH): the query variant decodes them from -ss seekTo as well.
var seekable = map[string]bool{"hls-ts": true, "hls-ts-180p": true}

// streams are all the fixture streams (fixtures/generate.sh writes them).
var streams = []stream{
	{name: "hls-ts", manifest: "/hls/ts/master.m3u8"},
	{name: "hls-fmp4", manifest: "/hls/fmp4/master.m3u8"},
	{name: "hls-byterange", manifest: "/hls/byterange/master.m3u8", rangeOnly: true},
	{name: "dash-template", manifest: "/dash/template/manifest.mpd", dash: true},
	{name: "dash-ondemand", manifest: "/dash/ondemand/manifest.mpd", dash: true, rangeOnly: true},
}

// segoriginBinary builds cmd/segorigin once per test binary run, or returns
// $PLAYERTEST_SEGORIGIN when set (to test a binary built elsewhere). GOFLAGS
// from the environment apply to the build.
func segoriginBinary(t *testing.T) string {
	t.Helper()
	if bin := os.Getenv("PLAYERTEST_SEGORIGIN"); bin != "" {
		return bin
	}
	return testproc.Build(t, "./cmd/segorigin")
}

// server is a segorigin process on 127.0.0.1:0 serving mediaRoot.
type server struct {
	bin     string
	base    string // http://127.0.0.1:PORT
	tlsBase string // https://127.0.0.1:PORT, or "" without a TLS listener
	keyFile string // "" when auth is off
}

// serverOptions say how to run segorigin.
type serverOptions struct {
	keyFile string   // -auth-key-file; "" for no auth
	tls     bool     // also an HTTPS listener with a self-signed certificate
	root    string   // -root; "" for mediaRoot
	flags   []string // more flags
}

// startServer runs segorigin and stops it (SIGTERM, then SIGKILL after 5 s)
// when the test ends. Its log goes to the test log if the test failed.
func startServer(t *testing.T, o serverOptions) *server {
	t.Helper()
	bin := segoriginBinary(t)
	root := mediaRoot
	if o.root != "" {
		root = o.root
	}
	args := append([]string{"-listen", "127.0.0.1:0", "-root", root, "-drain-timeout", "1s"}, o.flags...)
	if o.keyFile != "" {
		args = append(args, "-auth-key-file", o.keyFile)
	}
	if o.tls {
		args = append(args, "-tls-listen", "127.0.0.1:0", "-tls-dev")
	}
	cmd := exec.Command(bin, args...)
	p := testproc.Start(t, cmd, testproc.Name(fmt.Sprintf("segorigin %v", args)), testproc.Timeout(10*time.Second))
	t.Cleanup(func() {
		if !p.Terminate(5 * time.Second) {
			t.Errorf("segorigin pid %d still running 5s after SIGTERM; killing it", p.PID())
		}
		if t.Failed() {
			t.Logf("segorigin %v log:\n%s", args, p.Logs())
		}
	})
	s := &server{bin: bin, keyFile: o.keyFile, base: "http://" + p.Addr("http")}
	if o.tls {
		s.tlsBase = "https://" + p.Addr("https")
	}
	return s
}

// url is the plain (tokenless) URL of a path on base (s.base or s.tlsBase).
func (s *server) url(base, p string) string { return base + p }

// signedURL is the URL of p on base through a path token whose scope is p's
// directory, so the relative URLs in a playlist or MPD carry the token too.
func (s *server) signedURL(t *testing.T, base, p string) string {
	t.Helper()
	if s.keyFile == "" {
		t.Fatal("signedURL on a server without auth")
	}
	dir := path.Dir(p) + "/"
	out, err := exec.Command(s.bin, "sign", "-key-file", s.keyFile, "-scope", dir,
		"-ttl", "30m", "-url", base).Output()
	if err != nil {
		t.Fatalf("segorigin sign -scope %s: %v", dir, err)
	}
	u := strings.TrimSpace(string(out))
	if !strings.HasPrefix(u, base+"/t/") || !strings.HasSuffix(u, dir) {
		t.Fatalf("segorigin sign -scope %s printed %q, want %s/t/<token>%s", dir, u, base, dir)
	}
	return u + path.Base(p)
}

// queryToken is a raw token (segorigin sign -print token) whose scope is
// p's directory, for the query carrier.
func (s *server) queryToken(t *testing.T, p string) string {
	t.Helper()
	dir := path.Dir(p) + "/"
	out, err := exec.Command(s.bin, "sign", "-key-file", s.keyFile, "-scope", dir, "-ttl", "30m", "-print", "token").Output()
	if err != nil {
		t.Fatalf("segorigin sign -scope %s -print token: %v", dir, err)
	}
	tok := strings.TrimSpace(string(out))
	if !strings.Contains(tok, "acl="+dir+"*") || !strings.Contains(tok, "~hmac=") {
		t.Fatalf("segorigin sign -scope %s -print token printed %q, want a token for %s*", dir, tok, dir)
	}
	return tok
}

// variant is one way of reaching the media: a scheme, with or without auth.
type variant struct {
	name  string
	srv   *server
	tls   bool // over HTTPS
	token bool // through a path token
	query bool // through a query token (?token=), which the playlists are rewritten to carry
}

// src is the URL of p in this variant, and the query token it carries
// ("" unless v.query).
func (v variant) src(t *testing.T, p string) (u, tok string) {
	base := v.srv.base
	if v.tls {
		base = v.srv.tlsBase
	}
	switch {
	case v.token:
		return v.srv.signedURL(t, base, p), ""
	case v.query:
		tok = v.srv.queryToken(t, p)
		return v.srv.url(base, p) + "?token=" + url.QueryEscape(tok), tok
	}
	return v.srv.url(base, p), ""
}

// streamsFor are the streams a variant plays: all of them, and with a
// query token the media playlist opened directly too.
func streamsFor(v variant) []stream {
	if v.query {
		return append(streams[:len(streams):len(streams)], mediaPlaylist)
	}
	return streams
}

// startVariants starts the servers every player test uses, one without auth
// and one with (a fresh key), each with an HTTPS listener beside the plain
// one (-tls-dev: a self-signed certificate made at start, which ffmpeg does
// not verify and the browser is told to accept). It returns the variants to
// run and the auth server.
func startVariants(t *testing.T) ([]variant, *server) {
	t.Helper()
	plain := startServer(t, serverOptions{tls: true})
	auth := startServer(t, serverOptions{keyFile: writeKeyFile(t), tls: true})
	return []variant{
		{name: "http", srv: plain},
		{name: "https", srv: plain, tls: true},
		{name: "token", srv: auth, token: true},
		{name: "https-token", srv: auth, tls: true, token: true},
		{name: "query", srv: auth, query: true},
	}, auth
}

// writeKeyFile writes a key file with one fresh random key.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	secret := make([]byte, 32)
	rand.Read(secret)
	f := filepath.Join(t.TempDir(), "keys")
	body := "# playertest: one random key per run\nplayertest " + hex.EncodeToString(secret) + "\n"
	if err := os.WriteFile(f, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// diskPath maps a media URL path (with or without /t/<token>) to its file
// under mediaRoot, as an absolute path: ffmpeg 5.1's DASH demuxer cannot
// resolve the MPD's relative URLs against a path that starts with "..".
func diskPath(urlPath string) string { return diskPathIn(mediaRoot, urlPath) }

// diskPathIn is diskPath under root ("" for mediaRoot).
func diskPathIn(root, urlPath string) string {
	if root == "" {
		root = mediaRoot
	}
	if rest, ok := strings.CutPrefix(urlPath, "/t/"); ok {
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			urlPath = rest[i:]
		}
	}
	p, err := filepath.Abs(filepath.Join(root, filepath.FromSlash(urlPath)))
	if err != nil {
		panic(err) // only when the working directory is gone
	}
	return p
}
