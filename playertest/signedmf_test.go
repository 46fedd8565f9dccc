package playertest

import (
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
	"segorigin/origin/token"
)

// signedStreams are the presentations a manifest-only credential must
// open in full (aesTitle writes them): a DASH SegmentTemplate, a DASH
// SegmentBase (BaseURL per representation) and AES-128 HLS.
var signedStreams = []stream{
	{name: "dash-template", manifest: "/dash/template/manifest.mpd", dash: true},
	{name: "dash-ondemand", manifest: "/dash/ondemand/manifest.mpd", dash: true, rangeOnly: true},
	{name: "hls-aes", manifest: "/aes/hls/index.m3u8"},
}

// aesTitle writes, under root, the fixtures' DASH SegmentTemplate and
// SegmentBase presentations (/dash/template/, /dash/ondemand/) and an
// AES-128 HLS presentation made
// from the 180p TS rendition (/aes/hls/index.m3u8), whose key lies above
// the playlist's directory (URI="../enc.key", /aes/enc.key), as
// packagers that share one key between renditions write it.
func aesTitle(t *testing.T, root string) {
	t.Helper()
	for _, d := range []string{"template", "ondemand"} {
		dash := filepath.Join(root, "dash", d)
		if err := os.MkdirAll(dash, 0o755); err != nil {
			t.Fatal(err)
		}
		files, _ := filepath.Glob(filepath.Join(mediaRoot, "dash", d, "*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dash, filepath.Base(f)), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	hls := filepath.Join(root, "aes", "hls")
	if err := os.MkdirAll(hls, 0o755); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(root, "aes", "enc.key")
	if err := os.WriteFile(key, []byte("0123456789abcdef"), 0o644); err != nil {
		t.Fatal(err)
	}
	info := filepath.Join(t.TempDir(), "keyinfo")
	if err := os.WriteFile(info, []byte("../enc.key\n"+key+"\n00000000000000000000000000000001\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("ffmpeg", "-nostdin", "-loglevel", "error", "-i", diskPath("/hls/ts/180p/index.m3u8"),
		"-c", "copy", "-f", "hls", "-hls_time", "2", "-hls_playlist_type", "vod", "-hls_key_info_file", info,
		"-hls_segment_filename", filepath.Join(hls, "seg%03d.ts"), filepath.Join(hls, "index.m3u8")).CombinedOutput()
	if err != nil {
		t.Fatalf("ffmpeg -hls_key_info_file: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(filepath.Join(hls, "index.m3u8")); !strings.Contains(string(b), `URI="../enc.key"`) {
		t.Fatalf("the AES-128 playlist names no ../enc.key:\n%s", b)
	}
}

// signedCarrier is one way a CMS hands out a URL signed for the
// manifest alone.
type signedCarrier struct {
	name string
	url  func(t *testing.T, p string) string
}

// signedTitles writes signedStreams under a fresh root and starts two
// servers on it, one under nginx secure_link and one under query tokens;
// it returns the root and the two carriers.
func signedTitles(t *testing.T) (string, []signedCarrier) {
	t.Helper()
	root := t.TempDir()
	aesTitle(t, root)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := startServer(t, serverOptions{root: root, flags: []string{"-auth-securelink-secret-file", secret}})
	keyed := startServer(t, serverOptions{root: root, keyFile: writeKeyFile(t)})
	return root, []signedCarrier{
		{"secure_link", func(t *testing.T, p string) string {
			hash, exp, err := token.SignSecureLink("s3cret", token.DefaultSecureLinkExpression, p, "127.0.0.1", time.Now().Add(30*time.Minute))
			if err != nil {
				t.Fatal(err)
			}
			return link.base + p + "?md5=" + hash + "&expires=" + exp
		}},
		{"query-token", func(t *testing.T, p string) string {
			// A token for the manifest alone: what a CMS that signs one
			// URL hands out.
			out, err := exec.Command(keyed.bin, "sign", "-key-file", keyed.keyFile, "-scope", p, "-ttl", "30m", "-print", "token").Output()
			if err != nil {
				t.Fatalf("segorigin sign -scope %s: %v", p, err)
			}
			return keyed.base + p + "?token=" + url.QueryEscape(strings.TrimSpace(string(out)))
		}},
	}
}

// signedPlayerCases are TestBrowserPlayers' plays of signedStreams under
// each carrier: hls.js on the AES-128 title, dash.js and Shaka on the
// template, dash.js on the SegmentBase presentation.
func signedPlayerCases(t *testing.T) []playerCase {
	t.Helper()
	requireFFmpeg(t) // aesTitle packages the AES-128 title
	root, carriers := signedTitles(t)
	var cases []playerCase
	for _, c := range carriers {
		for _, s := range signedStreams {
			players := []string{"hls"}
			switch s.name {
			case "dash-template":
				players = []string{"dash", "shaka"}
			case "dash-ondemand":
				players = []string{"dash"}
			}
			for _, p := range players {
				cases = append(cases, playerCase{Name: "signed-" + c.name + "-" + playerLabel[p] + "-" + s.name,
					Player: p, Src: c.url(t, s.manifest), stream: s, root: root, signed: true})
			}
		}
	}
	return cases
}

// TestFFmpegSignedManifests: ffmpeg plays a DASH SegmentTemplate
// presentation, a DASH SegmentBase one and an AES-128 HLS presentation
// whose key is ../enc.key, each from a URL signed for the manifest alone,
// under nginx secure_link and under a query token: every chunk of the
// template, every representation's file and the key reach it with a
// credential the origin accepts (the template's a scope credential), and
// it decodes exactly the frames it decodes from disk.
func TestFFmpegSignedManifests(t *testing.T) {
	testreq.Slow(t, "ffmpeg plays three presentations under two schemes (about 15 s)")
	requireFFmpeg(t)
	root, carriers := signedTitles(t)
	for _, s := range signedStreams {
		t.Run(s.name, func(t *testing.T) {
			// From disk ffmpeg opens a key file only when told to.
			want := ffmpegDecode(t, diskPathIn(root, s.manifest), "-allowed_extensions", "ALL")
			for _, c := range carriers {
				t.Run(c.name, func(t *testing.T) {
					u := c.url(t, s.manifest)
					sameDecode(t, u, ffmpegDecode(t, u), want)
				})
			}
		})
	}
}
