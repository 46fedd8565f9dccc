//go:build linux

package origin_test

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"segorigin/fixtures/llpack"
	"segorigin/fixtures/synth"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// A file still being written in a live directory is streamed as it grows,
// with chunked transfer coding (RFC 9112 §7.1), until its writer closes
// it.

// growChunks is how a test packager writes a part in place: five chunks.
const growChunks, growChunk = 5, 12 << 10

// growingPart starts writing, in place, the part p's playlist hints at:
// its first chunk written, the file still open. It returns the request
// target, the writer and the part's final bytes.
func growingPart(t *testing.T, p *llpack.Packager) (string, *os.File, []byte) {
	t.Helper()
	target, file := hintTarget(p)
	f, want := growingFile(t, file)
	return target, f, want
}

// growingFile starts writing file in place: its first chunk written, the
// file still open. It returns the writer and the file's final bytes.
func growingFile(t *testing.T, file string) (*os.File, []byte) {
	t.Helper()
	want := make([]byte, growChunks*growChunk)
	synth.Fill(filepath.Base(file), 0, want)
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	if _, err := f.Write(want[:growChunk]); err != nil {
		t.Fatal(err)
	}
	return f, want
}

// startStream GETs target with Go's client and checks the header of a
// stream: 200, chunked, no Content-Length, no-store.
func startStream(t *testing.T, c *http.Client, ts *testServer, target string) *http.Response {
	t.Helper()
	scheme := "http"
	if ts.tls != nil {
		scheme = "https"
	}
	resp, err := c.Get(scheme + "://" + ts.addr + target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != 200 || !slices.Equal(resp.TransferEncoding, []string{"chunked"}) ||
		resp.ContentLength != -1 || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("stream: status %d, Transfer-Encoding %q, Content-Length %d, Cache-Control %q; want 200, chunked, none, no-store",
			resp.StatusCode, resp.TransferEncoding, resp.ContentLength, resp.Header.Get("Cache-Control"))
	}
	return resp
}

// readNext reads the next len(want) bytes of a stream, while the file is
// still being written, and checks them.
func readNext(t *testing.T, resp *http.Response, want []byte, what string) {
	t.Helper()
	got := make([]byte, len(want))
	if _, err := io.ReadFull(resp.Body, got); err != nil {
		t.Fatalf("%s: reading %d bytes while the file is written: %v", what, len(want), err)
	}
	if string(got) != string(want) {
		t.Fatalf("%s: %d bytes read differ from the file's", what, len(want))
	}
}

// liveDir starts a server in mode with the settle rule of a deployment and
// a packager whose playlist can block, fetched once (its directory is
// live then).
func liveDir(t *testing.T, mode serverMode) (*testServer, *llpack.Packager) {
	t.Helper()
	root := t.TempDir()
	ts := mode.start(t, root, withSettle)
	p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 4}, 5)
	mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
	return ts, p
}

// TestGrowStreamed: a client that asks for a part written in place, after
// its first chunk, gets each chunk as it is written (read before the next
// is written) and then the end of the stream, the file's bytes exactly; a
// client joining after the third chunk gets what exists and the rest.
func TestGrowStreamed(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		ts, p := liveDir(t, mode)
		target, f, want := growingPart(t, p)
		first := startStream(t, ts.httpClient(), ts, target)
		readNext(t, first, want[:growChunk], "first client")
		var late *http.Response
		var slowest time.Duration
		for i := 1; i < growChunks; i++ {
			time.Sleep(50 * time.Millisecond) // the packager's pace
			chunk := want[i*growChunk : (i+1)*growChunk]
			written := time.Now()
			if _, err := f.Write(chunk); err != nil {
				t.Fatal(err)
			}
			readNext(t, first, chunk, "first client")
			slowest = max(slowest, time.Since(written))
			if i == 3 {
				late = startStream(t, ts.httpClient(), ts, target)
			}
		}
		t.Logf("each chunk read at most %v after its write", slowest)
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		if rest, err := io.ReadAll(first.Body); err != nil || len(rest) != 0 {
			t.Errorf("first client: after the file's bytes, %d more and %v; want the end of the stream", len(rest), err)
		}
		body, err := io.ReadAll(late.Body)
		if err != nil || string(body) != string(want) {
			t.Errorf("late client: %d bytes (%v), want the file's %d", len(body), err, len(want))
		}
		testwait.For(t, 5*time.Second, "both streams counted", func() bool {
			st := ts.srv.Stats().Grow
			return st.Complete == 2 && st.Streaming == 0
		})
	})
}

// TestGrowStalled: a file that stops growing for three target durations
// (3 s here) while its writer holds it open ends the stream without its
// last chunk: the client sees an incomplete response.
func TestGrowStalled(t *testing.T) {
	loopAndTLS(t, &tlsModes[1], func(t *testing.T, mode serverMode) {
		ts, p := liveDir(t, mode)
		target, _, want := growingPart(t, p)
		resp := startStream(t, ts.httpClient(), ts, target)
		readNext(t, resp, want[:growChunk], "stalled stream")
		start := time.Now()
		rest, err := io.ReadAll(resp.Body)
		t.Logf("ended %v after the last write (three target durations: 3s)", time.Since(start))
		if !errors.Is(err, io.ErrUnexpectedEOF) || len(rest) != 0 {
			t.Errorf("stalled stream: %d more bytes and %v, want none and an unexpected EOF", len(rest), err)
		}
		testwait.For(t, 5*time.Second, "the stream counted", func() bool {
			st := ts.srv.Stats().Grow
			return st.TimedOut == 1 && st.Streaming == 0 && st.Complete == 0
		})
	})
}

// TestGrowDrained: a drain ends a stream at once, without its last chunk.
func TestGrowDrained(t *testing.T) {
	for _, engine := range []origin.Engine{origin.EngineLoop, origin.EngineFastHTTP} {
		t.Run(string(engine), func(t *testing.T) {
			root := t.TempDir()
			p := startPackager(t, root, llpack.Config{TargetDuration: 10, Parts: 4}, 5)
			ts, cancel, done := runDraining(t, root, engine, 2*time.Second)
			mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
			target, _, want := growingPart(t, p)
			resp := startStream(t, ts.httpClient(), ts, target)
			readNext(t, resp, want[:growChunk], "stream at drain")
			start := time.Now()
			cancel()
			rest, err := io.ReadAll(resp.Body)
			t.Logf("ended %v after the drain began (stall limit: 30s)", time.Since(start))
			if !errors.Is(err, io.ErrUnexpectedEOF) || len(rest) != 0 {
				t.Errorf("stream at drain: %d more bytes and %v, want none and an unexpected EOF", len(rest), err)
			}
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
			if st := ts.srv.Stats().Grow; st.Drained != 1 || st.Streaming != 0 {
				t.Errorf("counters %+v, want one stream drained, none in progress", st)
			}
		})
	}
}

// TestGrowTodaysAnswers: what is not streamed keeps the publishing rule's
// answer for a file in progress (503, no-store): HEAD, a Range, HTTP/1.0
// (which has no chunked coding: RFC 9112 §6.1 "A server MUST NOT send a
// response containing Transfer-Encoding unless the corresponding request
// indicates HTTP/1.1"), and a file in a VOD directory.
func TestGrowTodaysAnswers(t *testing.T) {
	loopAndTLS(t, &tlsModes[1], func(t *testing.T, mode serverMode) {
		ts, _ := liveDir(t, mode)
		// Names no playlist hints at (a hinted one is held until whole).
		target := "/live/side.m4s"
		growingFile(t, filepath.Join(ts.root, "live", "side.m4s"))
		growingFile(t, filepath.Join(ts.root, "vod", "seg1.m4s"))
		for _, tt := range []struct {
			name, method, target string
			headers              []string
		}{
			{"HEAD", "HEAD", target, nil},
			{"Range", "GET", target, []string{"Range: bytes=0-99"}},
			{"VOD directory", "GET", "/vod/seg1.m4s", nil},
		} {
			r := ts.dial().do(tt.method, tt.target, tt.headers...)
			mustStatus(t, r, 503, tt.name)
			mustHeader(t, r, "Cache-Control", "no-store", tt.name)
			if len(r.TransferEncoding) != 0 {
				t.Errorf("%s: Transfer-Encoding %q", tt.name, r.TransferEncoding)
			}
		}
		c := ts.dial()
		if _, err := io.WriteString(c.conn, "GET "+target+" HTTP/1.0\r\nHost: test\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		r := c.read("GET")
		mustStatus(t, r, 503, "HTTP/1.0")
		if st := ts.srv.Stats().Grow; st != (origin.GrowStats{}) {
			t.Errorf("counters %+v, want no stream", st)
		}
	})
}

// TestGrowClientLeaves: a client that closes its connection while its
// stream waits for the next bytes ends the stream (counted aborted), and
// the server goes on serving.
func TestGrowClientLeaves(t *testing.T) {
	loopAndTLS(t, &tlsModes[1], func(t *testing.T, mode serverMode) {
		ts, p := liveDir(t, mode)
		target, f, want := growingPart(t, p)
		leaveParkedStream(t, ts, target) // live_peer_test.go
		if _, err := f.Write(want[growChunk : 2*growChunk]); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, 5*time.Second, "the stream counted", func() bool {
			st := ts.srv.Stats().Grow
			return st.Aborted == 1 && st.Streaming == 0
		})
		mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist after")
	})
}
