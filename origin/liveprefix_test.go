//go:build linux

package origin_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// Under -live-prefix a directory is live without a playlist (DASH-only
// and low-latency DASH output): a segment being written is streamed as it
// grows, and a request for the next segment is held until it appears.

// withLivePrefix is a deployment's settle rule with /dash/ live, its
// waits bounded by 2 s.
func withLivePrefix(cfg *origin.Config) {
	withSettle(cfg)
	cfg.LivePrefixes = []string{"/dash/"}
	cfg.LiveHold = 2 * time.Second
}

// writeSegment writes a whole segment under root (closed: published).
func writeSegment(t *testing.T, root, rel string) {
	t.Helper()
	if err := synth.WriteFile(filepath.Join(root, filepath.FromSlash(rel)), filepath.Base(rel), 4<<10); err != nil {
		t.Fatal(err)
	}
}

// streamToEnd writes the rest of a growing file chunk by chunk, reading
// each from resp before the next is written, closes it and checks that
// the stream then ends with every byte of the file.
func streamToEnd(t *testing.T, resp *http.Response, f *os.File, want []byte) {
	t.Helper()
	readNext(t, resp, want[:growChunk], "stream")
	for i := 1; i < growChunks; i++ {
		chunk := want[i*growChunk : (i+1)*growChunk]
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
		readNext(t, resp, chunk, "stream")
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if rest, err := io.ReadAll(resp.Body); err != nil || len(rest) != 0 {
		t.Errorf("after the file's bytes, %d more and %v; want the end of the stream", len(rest), err)
	}
}

// TestLivePrefixStreamed: a DASH segment written in place under a live
// prefix, with no playlist in its directory, is streamed as it grows, the
// file's bytes exactly; the same file outside the prefix keeps the
// publishing rule's 503.
func TestLivePrefixStreamed(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withLivePrefix)
		f, want := growingFile(t, filepath.Join(root, "dash", "ch1", "chunk-0-00001.m4s"))
		resp := startStream(t, ts.httpClient(), ts, "/dash/ch1/chunk-0-00001.m4s")
		growingFile(t, filepath.Join(root, "vod", "chunk-0-00001.m4s"))
		r := ts.get("/vod/chunk-0-00001.m4s")
		mustStatus(t, r, 503, "a file being written outside the prefix")
		mustHeader(t, r, "Cache-Control", "no-store", "a file being written outside the prefix")
		streamToEnd(t, resp, f, want)
		testwait.For(t, 5*time.Second, "the stream counted", func() bool {
			st := ts.srv.Stats().Grow
			return st.Complete == 1 && st.Streaming == 0
		})
	})
}

// TestLivePrefixNextHeld: under a live prefix a request for the segment
// after the last one written is held (parked) until the packager creates
// it, then streamed as it is written; a name that is not the next one is
// 404 at once, as is the next one outside the prefix.
func TestLivePrefixNextHeld(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withLivePrefix)
		writeSegment(t, root, "dash/ch1/chunk-0-00009.m4s")
		writeSegment(t, root, "vod/chunk-0-00009.m4s")
		mustStatus(t, ts.get("/dash/ch1/chunk-0-00012.m4s"), 404, "a later segment than the next")
		mustStatus(t, ts.get("/vod/chunk-0-00010.m4s"), 404, "the next segment outside the prefix")
		type answer struct {
			resp *http.Response
			err  error
		}
		got := make(chan answer, 1)
		c := ts.httpClient()
		scheme := "http"
		if ts.tls != nil {
			scheme = "https"
		}
		go func() { // ends when the request is answered or times out (10 s)
			resp, err := c.Get(scheme + "://" + ts.addr + "/dash/ch1/chunk-0-00010.m4s")
			got <- answer{resp, err}
		}()
		testwait.For(t, 5*time.Second, "the request held", func() bool { return origin.LiveWaiters(ts.srv) == 1 })
		f, want := growingFile(t, filepath.Join(root, "dash", "ch1", "chunk-0-00010.m4s"))
		a := <-got
		if a.err != nil {
			t.Fatal(a.err)
		}
		defer a.resp.Body.Close()
		if a.resp.StatusCode != 200 || a.resp.ContentLength != -1 || a.resp.Header.Get("Cache-Control") != "no-store" {
			t.Fatalf("held segment: status %d, Content-Length %d, Cache-Control %q; want a stream",
				a.resp.StatusCode, a.resp.ContentLength, a.resp.Header.Get("Cache-Control"))
		}
		streamToEnd(t, a.resp, f, want)
		if st := ts.srv.Stats().Live; st.Answered[1] != 1 {
			t.Errorf("counters %+v, want one hint answered", st)
		}
	})
}

// TestLivePrefixHoldTimeout: the next segment that does not appear within
// -live-hold is 503 with no-store, as a hinted part's.
func TestLivePrefixHoldTimeout(t *testing.T) {
	loopAndTLS(t, &tlsModes[1], func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withLivePrefix)
		writeSegment(t, root, "dash/chunk-9.m4s")
		r := ts.get("/dash/chunk-10.m4s")
		mustStatus(t, r, 503, "the next segment, never written")
		mustHeader(t, r, "Cache-Control", "no-store", "the next segment, never written")
		if st := ts.srv.Stats().Live; st.TimedOut[1] != 1 {
			t.Errorf("counters %+v, want one hint timed out", st)
		}
	})
}
