package origin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"segorigin/fixtures/llpack"
	"segorigin/fixtures/synth"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// Preload hints (draft-pantos-hls-rfc8216bis §4.4.5.3): a request for the
// part a live playlist's EXT-X-PRELOAD-HINT names, sent before the part
// exists, is held until the packager has written it, on every transport.

// withSettle runs the server with the publishing rule of a deployment
// (-settle 2s): a part just written is published once its writer closed
// it, as the kernel tells.
func withSettle(cfg *origin.Config) { cfg.Settle = 2 * time.Second }

// hintTarget is the request for the part p's playlist hints at.
func hintTarget(p *llpack.Packager) (target, file string) {
	msn, part := p.Next()
	name := llpack.PartName(msn, part)
	return "/live/" + name, filepath.Join(filepath.Dir(p.Path()), name)
}

// TestLiveHintHeld: the hinted part, asked for before it exists, is
// answered with exactly its bytes once the packager writes it (and a
// Range of it with exactly that range: RFC 9110 §14.4); a name no
// playlist hints at is 404 at once, as before.
func TestLiveHintHeld(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withSettle)
		p := startPackager(t, root, llpack.Config{TargetDuration: 2, Parts: 4}, 5)
		// The player's first fetch: the playlist, without directives.
		mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
		for i, rng := range []string{"", "bytes=100-1099"} {
			target, file := hintTarget(p)
			c := ts.dial()
			var hdr []string
			if rng != "" {
				hdr = []string{"Range: " + rng}
			}
			c.write("GET", target, hdr...)
			testwait.For(t, 5*time.Second, "the request held", func() bool { return origin.LiveWaiters(ts.srv) == 1 })
			start := time.Now()
			if err := p.Publish(); err != nil {
				t.Fatal(err)
			}
			r := c.read("GET")
			t.Logf("%s answered %v after the packager wrote it", target, time.Since(start))
			want, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := synth.Verify(filepath.Base(file), 0, want); !ok || len(want) != 2048 {
				t.Fatalf("%s on disk: %d bytes, not the packager's", file, len(want))
			}
			if rng == "" {
				mustStatus(t, r, 200, "hinted part")
				mustBody(t, r, want, "hinted part")
				mustHeader(t, r, "Cache-Control", "public, max-age=31536000, immutable", "hinted part")
			} else {
				mustStatus(t, r, 206, "range of a hinted part")
				mustBody(t, r, want[100:1100], "range of a hinted part")
				mustHeader(t, r, "Content-Range", "bytes 100-1099/2048", "range of a hinted part")
			}
			if st := ts.srv.Stats().Live; st.Answered[1] != int64(i+1) || st.Held[1] != 0 {
				t.Errorf("hint counters %+v, want %d answered, none held", st, i+1)
			}
		}
		msn, _ := p.Next()
		for _, target := range []string{"/live/" + llpack.PartName(msn+5, 0), "/other/" + llpack.PartName(msn, 0)} {
			mustStatus(t, ts.get(target), 404, "a name no playlist hints at")
		}
		if n := origin.LiveWaiters(ts.srv); n != 0 {
			t.Errorf("%d requests held after the 404s", n)
		}
	})
}

// TestLiveHintWrittenInPlace: a hinted part its writer still holds open
// is not answered until the writer closes it and the packager publishes
// the playlist that lists it: the answer is the whole part.
func TestLiveHintWrittenInPlace(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withSettle)
		p := startPackager(t, root, llpack.Config{TargetDuration: 2, Parts: 4, PartBytes: 64 << 10}, 5)
		mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
		target, file := hintTarget(p)
		c := ts.dial()
		c.write("GET", target)
		testwait.For(t, 5*time.Second, "the request held", func() bool { return origin.LiveWaiters(ts.srv) == 1 })
		want := make([]byte, 64<<10)
		synth.Fill(filepath.Base(file), 0, want)
		f, err := os.Create(file)
		if err != nil {
			t.Fatal(err)
		}
		before := origin.LiveChanges(ts.srv)
		if _, err := f.Write(want[:len(want)/2]); err != nil {
			t.Fatal(err)
		}
		// The watcher saw the file made and written; the request, woken,
		// found it open for writing and is held again.
		testwait.For(t, 5*time.Second, "the request held again", func() bool {
			return origin.LiveChanges(ts.srv) > before && origin.LiveWaiters(ts.srv) == 1
		})
		if _, err := f.Write(want[len(want)/2:]); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		// The packager publishes the playlist that lists it, by rename.
		tmp := filepath.Join(filepath.Dir(file), ".live.m3u8.tmp")
		if err := os.WriteFile(tmp, p.Published(), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, p.Path()); err != nil {
			t.Fatal(err)
		}
		r := c.read("GET")
		mustStatus(t, r, 200, "part written in place")
		mustBody(t, r, want, "part written in place")
	})
}

// TestLiveHintTimeout: a hinted part not written within three target
// durations is answered 503 with Retry-After and no-store, as a blocking
// reload is (§6.2.5.2).
func TestLiveHintTimeout(t *testing.T) {
	loopAndTLS(t, &tlsModes[1], func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		ts := mode.start(t, root, withSettle)
		p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 4}, 5)
		msn, part := p.Next()
		// A blocking reload makes the directory known live.
		mustStatus(t, ts.get(fmt.Sprintf("/live/live.m3u8?_HLS_msn=%d&_HLS_part=%d", msn, part-1)), 200, "reload")
		target, _ := hintTarget(p)
		start := time.Now()
		r := ts.get(target)
		t.Logf("answered after %v (three target durations: 3s)", time.Since(start))
		mustStatus(t, r, 503, "hinted part never written")
		mustHeader(t, r, "Cache-Control", "no-store", "hinted part never written")
		if r.header("Retry-After") == "" {
			t.Errorf("hinted part never written: no Retry-After")
		}
		if st := ts.srv.Stats().Live; st.TimedOut[1] != 1 || st.Answered[1] != 0 {
			t.Errorf("hint counters %+v, want one timed out", st)
		}
	})
}

// TestLiveMissingRechecked: a name missing in a live directory is not
// remembered missing once it exists: a part the playlist does not hint
// at yet is 404, and a request after the packager has written it gets
// its bytes; so does a file written in place (and closed) after its 404.
// Without -watch the cache remembers a missing name for -negative-ttl
// (1 s): a live directory's is looked for again all the same.
func TestLiveMissingRechecked(t *testing.T) {
	for _, watch := range []bool{true, false} {
		t.Run(fmt.Sprintf("watch=%v", watch), func(t *testing.T) {
			everyMode(t, func(t *testing.T, mode serverMode) {
				liveMissingRechecked(t, mode, watch)
			})
		})
	}
}

func liveMissingRechecked(t *testing.T, mode serverMode, watch bool) {
	root := t.TempDir()
	ts := mode.start(t, root, func(c *origin.Config) {
		withSettle(c)
		c.Watch = watch
	})
	p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 4}, 5)
	mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
	msn, _ := p.Next()
	name := llpack.PartName(msn+1, 0)
	mustStatus(t, ts.get("/live/"+name), 404, "a part not written yet, not hinted")
	for m, _ := p.Next(); m <= msn+1; m, _ = p.Next() {
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(filepath.Join(filepath.Dir(p.Path()), name))
	if err != nil {
		t.Fatal(err)
	}
	r := ts.get("/live/" + name)
	mustStatus(t, r, 200, "the part once written")
	mustBody(t, r, want, "the part once written")

	extra := filepath.Join(filepath.Dir(p.Path()), "extra.bin")
	mustStatus(t, ts.get("/live/extra.bin"), 404, "a file not there yet")
	if err := os.WriteFile(extra, []byte("0123456789"), 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the file written in place served", func() bool {
		return ts.get("/live/extra.bin").StatusCode == 200
	})
	mustBody(t, ts.get("/live/extra.bin"), []byte("0123456789"), "the file written in place")
}

// TestLiveNotFoundCacheControl: a 404 for a name in a live directory
// carries -cache-control-notfound-live (no-store: the part exists a
// moment later), a 404 anywhere else -cache-control-notfound as before.
func TestLiveNotFoundCacheControl(t *testing.T) {
	root := t.TempDir()
	ts := startServer(t, root, withSettle)
	p := startPackager(t, root, llpack.Config{TargetDuration: 1, Parts: 4}, 5)
	mustStatus(t, ts.get("/live/live.m3u8"), 200, "playlist")
	msn, _ := p.Next()
	for _, c := range []struct{ target, cc string }{
		{"/live/" + llpack.PartName(msn+1, 0), "no-store"},
		{"/live/missing.m4s", "no-store"},
		{"/vod/" + llpack.PartName(msn+1, 0), "max-age=10"},
		{"/missing.m4s", "max-age=10"},
	} {
		r := ts.get(c.target)
		mustStatus(t, r, 404, c.target)
		mustHeader(t, r, "Cache-Control", c.cc, c.target)
	}
}
