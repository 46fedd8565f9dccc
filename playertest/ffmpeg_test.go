package playertest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

// onDemandFiles are the single-file representations of the on-demand MPD.
// ffmpeg 5.1's DASH demuxer reads a SegmentBase representation as one
// whole-file segment (Range: bytes=0-), never through its indexRange; the
// sidx-driven Range requests are exercised by dash.js and Shaka in
// TestBrowserPlayers. Here ffmpeg also decodes each file directly over HTTP.
var onDemandFiles = []string{"/dash/ondemand/180p.mp4", "/dash/ondemand/270p.mp4", "/dash/ondemand/audio.mp4"}

// decoded is what ffmpeg made of one input: every decoded frame's checksum
// (framemd5) and the Range headers it sent.
type decoded struct {
	framemd5 string
	frames   map[string]int // stream index → decoded frames
	ranges   []string       // Range header of each HTTP request, in order
}

var (
	ffmpegProblemRE = regexp.MustCompile(`\[(error|fatal|panic)\] `)
	ffmpegRangeRE   = regexp.MustCompile(`(?m)^Range: (.*)$`)
)

// ffmpegDecode decodes every stream of input (all programs: -map 0) to the
// end and fails the test on any error ffmpeg logs. -xerror stops at the
// first error; debug logging shows the request headers it sends.
func ffmpegDecode(t *testing.T, input string, inputOpts ...string) decoded {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := append([]string{"-nostdin", "-hide_banner", "-loglevel", "repeat+level+debug", "-xerror"}, inputOpts...)
	args = append(args, "-i", input, "-map", "0", "-f", "framemd5", "-")
	cmd := exec.CommandContext(ctx, "ffmpeg", args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var problems []string
	for _, line := range strings.Split(stderr.String(), "\n") {
		if ffmpegProblemRE.MatchString(line) {
			problems = append(problems, line)
		}
	}
	if err != nil || len(problems) > 0 {
		t.Fatalf("ffmpeg -i %s: %v; errors:\n%s", input, err, strings.Join(problems, "\n"))
	}
	d := decoded{framemd5: stdout.String(), frames: map[string]int{}}
	for _, line := range strings.Split(d.framemd5, "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		idx, _, _ := strings.Cut(line, ",")
		d.frames[strings.TrimSpace(idx)]++
	}
	for _, m := range ffmpegRangeRE.FindAllStringSubmatch(stderr.String(), -1) {
		d.ranges = append(d.ranges, strings.TrimSpace(m[1]))
	}
	if len(d.frames) == 0 {
		t.Fatalf("ffmpeg -i %s decoded no frames", input)
	}
	return d
}

// sameDecode fails unless got (read from the server) decoded to exactly the
// frames of want (read from disk).
func sameDecode(t *testing.T, what string, got, want decoded) {
	t.Helper()
	if fmt.Sprint(got.frames) != fmt.Sprint(want.frames) {
		t.Fatalf("%s: frames per stream = %v, want %v (from disk)", what, got.frames, want.frames)
	}
	if got.framemd5 != want.framemd5 {
		g, w := strings.Split(got.framemd5, "\n"), strings.Split(want.framemd5, "\n")
		for i := 0; i < len(g) && i < len(w); i++ {
			if g[i] != w[i] {
				t.Fatalf("%s: framemd5 line %d = %q, want %q (from disk)", what, i+1, g[i], w[i])
			}
		}
		t.Fatalf("%s: framemd5 has %d lines, want %d (from disk)", what, len(g), len(w))
	}
}

// rangeSummary says how many requests carried a Range header other than
// ffmpeg's habitual bytes=0-.
func rangeSummary(d decoded) string {
	spans := 0
	for _, r := range d.ranges {
		if r != "bytes=0-" {
			spans++
		}
	}
	return fmt.Sprintf("%d requests, all with Range, %d of them a span other than bytes=0-", len(d.ranges), spans)
}

// seekTo is where the query variant's seek starts decoding (-ss, seconds;
// the fixtures are 8 s long).
const seekTo = "4"

// TestFFmpeg decodes every fixture stream from segorigin, plainly, through
// a path token and through a query token (the playlists rewritten to carry
// it), and compares each decoded frame with the same stream read from
// disk; with a query token it also seeks where ffmpeg can.
func TestFFmpeg(t *testing.T) {
	testreq.Slow(t, "ffmpeg plays every stream to its end (about 45 s)")
	requireFFmpeg(t)
	variants, auth := startVariants(t)

	for _, s := range append(streams[:len(streams):len(streams)], mediaPlaylist) {
		t.Run(s.name, func(t *testing.T) {
			want := ffmpegDecode(t, diskPath(s.manifest))
			t.Logf("%s: frames per stream from disk %v", s.manifest, want.frames)
			for _, v := range variants {
				if s == mediaPlaylist && !v.query {
					continue
				}
				t.Run(v.name, func(t *testing.T) {
					u, _ := v.src(t, s.manifest)
					got := ffmpegDecode(t, u)
					sameDecode(t, u, got, want)
					if v.query && seekable[s.name] {
						seeked := ffmpegDecode(t, u, "-ss", seekTo)
						sameDecode(t, u+" from -ss "+seekTo, seeked, ffmpegDecode(t, diskPath(s.manifest), "-ss", seekTo))
						t.Logf("seeked to %s s: frames per stream %v", seekTo, seeked.frames)
					}
					t.Logf("%s", rangeSummary(got))
					if s.rangeOnly && !s.dash && !hasSpan(got.ranges) {
						t.Errorf("ffmpeg read %s with Range %q only; want the playlist's EXT-X-BYTERANGE spans", u, got.ranges)
					}
				})
			}
		})
	}

	for _, f := range onDemandFiles {
		t.Run("direct"+strings.ReplaceAll(f, "/", "-"), func(t *testing.T) {
			want := ffmpegDecode(t, diskPath(f))
			for _, v := range variants {
				if v.tls != v.token {
					continue // the plain and the TLS-and-token variants suffice here
				}
				u, _ := v.src(t, f)
				sameDecode(t, u, ffmpegDecode(t, u), want)
			}
		})
	}

	// A query token for one title opens none of another's: its
	// playlist and, through the rewritten URIs of its own title's
	// playlist, nothing outside that title.
	t.Run("query-other-title", func(t *testing.T) {
		tok := auth.queryToken(t, "/hls/ts/master.m3u8")
		other := auth.url(auth.base, "/hls/fmp4/master.m3u8") + "?token=" + url.QueryEscape(tok)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", other).CombinedOutput()
		cancel()
		if err == nil || !strings.Contains(string(out), "403") {
			t.Errorf("ffprobe %s with a token for /hls/ts/: err=%v, output %q; want a failure naming 403", other, err, out)
		}
		resp, err := http.Get(auth.url(auth.base, "/hls/ts/master.m3u8") + "?token=" + url.QueryEscape(tok))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if line == "" || strings.HasPrefix(line, "#") {
				continue
			}
			ref, err := url.Parse(strings.TrimSpace(line))
			if err != nil {
				t.Fatalf("rewritten master: URI line %q: %v", line, err)
			}
			u := resp.Request.URL.ResolveReference(ref)
			if u.Query().Get("token") != tok {
				t.Errorf("rewritten master: %q does not carry the token", line)
			}
			// The same URI moved to the other title: refused, token and all.
			moved := strings.Replace(u.String(), "/hls/ts/", "/hls/fmp4/", 1)
			if r, err := http.Get(moved); err != nil || r.StatusCode != http.StatusForbidden {
				t.Errorf("GET %s (another title, the token kept): %v %v, want 403", moved, err, statusOf(r))
			} else {
				r.Body.Close()
			}
		}
	})

	t.Run("no-token", func(t *testing.T) {
		for _, s := range append(streams[:len(streams):len(streams)], mediaPlaylist) {
			u := auth.url(auth.base, s.manifest)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", u).CombinedOutput()
			cancel()
			if err == nil || !strings.Contains(string(out), "401") {
				t.Errorf("ffprobe %s without a token: err=%v, output %q; want a failure naming 401", u, err, out)
			}
			// The status a browser player would see: 401, readable cross-origin.
			req, _ := http.NewRequest("GET", u, nil)
			req.Header.Set("Origin", "http://127.0.0.1:1")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("GET %s: %v", u, err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("Access-Control-Allow-Origin") == "" {
				t.Errorf("GET %s without a token = %d, Access-Control-Allow-Origin %q; want 401 with the CORS header",
					u, resp.StatusCode, resp.Header.Get("Access-Control-Allow-Origin"))
			}
		}
	})
}

func statusOf(r *http.Response) int {
	if r == nil {
		return 0
	}
	return r.StatusCode
}

func hasSpan(ranges []string) bool {
	for _, r := range ranges {
		if r != "bytes=0-" {
			return true
		}
	}
	return false
}

// requireFFmpeg fails (never skips, except under -short) without ffmpeg
// and ffprobe.
func requireFFmpeg(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"ffmpeg", "ffprobe"} {
		testreq.Tool(t, tool, "run `make test` or `bash .ci/deps` to install Debian's ffmpeg")
	}
}
