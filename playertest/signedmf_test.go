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

// aesTitle writes, under root, the fixtures' DASH SegmentTemplate
// presentation (/dash/template/) and an AES-128 HLS presentation made
// from the 180p TS rendition (/aes/hls/index.m3u8), whose key lies above
// the playlist's directory (URI="../enc.key", /aes/enc.key), as
// packagers that share one key between renditions write it.
func aesTitle(t *testing.T, root string) {
	t.Helper()
	dash := filepath.Join(root, "dash", "template")
	if err := os.MkdirAll(dash, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(mediaRoot, "dash", "template", "*"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dash, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
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

// TestFFmpegSignedManifests: ffmpeg plays a DASH SegmentTemplate
// presentation and an AES-128 HLS presentation whose key is ../enc.key,
// each from a URL signed for the manifest alone, under nginx secure_link
// and under a query token: every chunk of the template and the key reach
// it with a credential the origin accepts (the template's a scope
// credential), and it decodes exactly the frames it decodes from disk.
func TestFFmpegSignedManifests(t *testing.T) {
	testreq.Slow(t, "ffmpeg plays two presentations under two schemes (about 10 s)")
	requireFFmpeg(t)
	root := t.TempDir()
	aesTitle(t, root)
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := startServer(t, serverOptions{root: root, flags: []string{"-auth-securelink-secret-file", secret}})
	keyed := startServer(t, serverOptions{root: root, keyFile: writeKeyFile(t)})
	schemes := []struct {
		name string
		url  func(t *testing.T, p string) string
	}{
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
	for _, p := range []string{"/dash/template/manifest.mpd", "/aes/hls/index.m3u8"} {
		t.Run(strings.Split(p, "/")[1], func(t *testing.T) {
			// From disk ffmpeg opens a key file only when told to.
			want := ffmpegDecode(t, filepath.Join(root, filepath.FromSlash(p)), "-allowed_extensions", "ALL")
			for _, s := range schemes {
				t.Run(s.name, func(t *testing.T) {
					u := s.url(t, p)
					sameDecode(t, u, ffmpegDecode(t, u), want)
				})
			}
		})
	}
}
