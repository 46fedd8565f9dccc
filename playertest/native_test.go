package playertest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

// TestNativePlayers plays every fixture stream with the two desktop
// players a VOD origin meets beside the browsers and ffmpeg: GStreamer
// (playbin: souphttpsrc, hlsdemux, dashdemux) and VLC (its adaptive
// demuxer), plainly, through a path token and through a query token (the
// playlists rewritten to carry it). Each must play to its end what the
// same files on disk hold: GStreamer as many decoded video frames as
// ffprobe counts in the first video stream, within gstFrameSlack (its
// playbin may hang on a playlist read from file://), VLC a remuxed copy as long as it makes from
// the files (to 0.1 s).
func TestNativePlayers(t *testing.T) {
	testreq.Slow(t, "GStreamer and VLC play every stream (about 30 s)")
	testreq.Tool(t, "gst-launch-1.0", "run `make test` or `bash .ci/deps` to install Debian's GStreamer")
	testreq.Tool(t, "cvlc", "run `make test` or `bash .ci/deps` to install Debian's VLC")
	testreq.Tool(t, "ffprobe", "run `make test` or `bash .ci/deps` to install Debian's ffmpeg")
	plain := startServer(t, serverOptions{})
	auth := startServer(t, serverOptions{keyFile: writeKeyFile(t)})
	variants := []variant{
		{name: "http", srv: plain},
		{name: "token", srv: auth, token: true},
		{name: "query", srv: auth, query: true},
	}
	// VLC refuses to run as root: as root, it runs as nobody, and its
	// output goes where nobody may write (t.TempDir's parent is 0700).
	out, err := os.MkdirTemp("", "segorigin-vlc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(out) })
	if err := os.Chmod(out, 0o777); err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		t.Run(s.name, func(t *testing.T) {
			wantFrames := probeFrames(t, diskPath(s.manifest))
			wantDur := vlcDuration(t, "file://"+diskPath(s.manifest), out)
			for _, v := range variants {
				t.Run(v.name, func(t *testing.T) {
					u, _ := v.src(t, s.manifest)
					if got := gstFrames(t, u); got < wantFrames-gstFrameSlack || got > wantFrames+gstFrameSlack {
						t.Errorf("GStreamer decoded %d video frames from %s, %d from disk", got, u, wantFrames)
					}
					if got := vlcDuration(t, u, out); got < wantDur-0.1 || got > wantDur+0.1 {
						t.Errorf("VLC remuxed %.3f s from %s, %.3f s from disk", got, u, wantDur)
					}
				})
			}
		})
	}
}

// gstFrameSlack is how far GStreamer's count may be from ffprobe's: on a
// loaded machine it counted 199 of 200 frames twice in about 40 runs (the
// query-token variant of hls-ts, each time after the path-token one),
// which neither the same URL played alone nor the other variants
// repeated. A segment lost or cut short is 50 frames (2 s at 25 fps).
const gstFrameSlack = 2

// gstVideoBuffer is the line `gst-launch-1.0 -v` prints for each buffer a
// verbose fakesink named video receives.
var gstVideoBuffer = regexp.MustCompile(`(?m)^/GstPlayBin:playbin0/GstPlaySink:playsink/GstBin:vbin/GstFakeSink:video: last-message = chain`)

// gstFrames plays uri with playbin to its end (EOS), decoding to fake
// sinks, and returns the video frames decoded; any error fails the test.
func gstFrames(t *testing.T, uri string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// connection-speed: the variant chosen from a fixed bandwidth, the
	// highest, never from the measured one; a switch mid-stream (a
	// loaded machine's slow download) can drop a frame at the seam.
	cmd := exec.CommandContext(ctx, "gst-launch-1.0", "-v", "playbin", "uri="+uri, "connection-speed=1000000",
		"video-sink=fakesink name=video silent=false", "audio-sink=fakesink name=audio")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil || !strings.Contains(stdout.String(), "Got EOS from element") || strings.Contains(stdout.String()+stderr.String(), "ERROR:") {
		t.Fatalf("gst-launch-1.0 playbin uri=%s: %v, no EOS or an error:\n%s\n%s", uri, err, tail(stdout.String(), 20), tail(stderr.String(), 20))
	}
	n := len(gstVideoBuffer.FindAllIndex(stdout.Bytes(), -1))
	if n == 0 {
		t.Fatalf("gst-launch-1.0 playbin uri=%s decoded no video frame:\n%s", uri, tail(stdout.String(), 20))
	}
	return n
}

// probeFrames is the number of frames ffprobe decodes in the first video
// stream of the playlist or MPD at path.
func probeFrames(t *testing.T, path string) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-count_frames", "-select_streams", "v:0",
		"-show_entries", "stream=nb_read_frames", "-of", "csv=p=0", path).Output()
	if err != nil {
		t.Fatalf("ffprobe -count_frames %s: %v", path, err)
	}
	first, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	n, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || n == 0 {
		t.Fatalf("ffprobe -count_frames %s printed %q", path, out)
	}
	return n
}

// vlcDuration has VLC remux uri to the end into a file in dir, and
// returns the file's duration as ffprobe reads it; VLC's errors fail the
// test (it exits 0 even when it opened nothing: an empty file fails).
func vlcDuration(t *testing.T, uri, dir string) float64 {
	t.Helper()
	dst := filepath.Join(dir, "vlc.ts")
	os.Remove(dst)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	args := []string{"-I", "dummy", "--play-and-exit", "--no-loop", "--adaptive-logic=highest", uri,
		"--sout", fmt.Sprintf("#std{access=file,mux=ts,dst=%s}", dst)}
	cmd := exec.CommandContext(ctx, "cvlc", args...)
	if os.Geteuid() == 0 {
		cmd = exec.CommandContext(ctx, "runuser", append([]string{"-u", "nobody", "--", "cvlc"}, args...)...)
	}
	cmd.Env = append(os.Environ(), "HOME="+dir)
	log, err := cmd.CombinedOutput()
	if err != nil || vlcProblem.Match(log) {
		t.Fatalf("cvlc %s: %v:\n%s", uri, err, tail(string(log), 20))
	}
	probe, err := exec.CommandContext(ctx, "ffprobe", "-v", "error", "-show_entries", "format=duration", "-of", "csv=p=0", dst).Output()
	d, perr := strconv.ParseFloat(strings.TrimSpace(string(probe)), 64)
	if err != nil || perr != nil || d <= 0 {
		t.Fatalf("cvlc %s: ffprobe of its output: %v %v (%q); VLC said:\n%s", uri, err, perr, probe, tail(string(log), 20))
	}
	return d
}

// vlcProblem matches what VLC logs when it cannot read its input.
var vlcProblem = regexp.MustCompile(`(access|input|demux|adaptive) error:`)

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
