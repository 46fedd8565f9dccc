package deploy_test

import (
	"bytes"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testwait"
)

// TestShieldInProgress: a 2 MiB segment is written in place on every
// origin at about 1 MB/s while a client fetches it through the shield
// every 20 ms. No answer carries fewer bytes than the final file, and once
// the writers have closed it (the kernel says no writer holds it: no need
// to wait out -settle) the shield serves it whole, then from its cache
// (HIT) whole: it never cached a part of it.
func TestShieldInProgress(t *testing.T) {
	requireTools(t)
	bin := testproc.Build(t, "./cmd/segorigin")
	const (
		size   = 2 << 20
		chunk  = 20 << 10
		settle = time.Second
		rel    = "live/seg1.m4s"
	)
	r := newCopiesRig(t, bin, []string{"-settle", settle.String()}, func(master string) {
		if err := os.MkdirAll(filepath.Join(master, "live"), 0o755); err != nil {
			t.Fatal(err)
		}
	})
	final := make([]byte, size)
	synth.Fill("seg1.m4s", 0, final)
	var files []*os.File
	for _, o := range r.origins {
		f, err := os.OpenFile(filepath.Join(o.root, rel), os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		files = append(files, f)
	}

	type answer struct {
		status int
		cc     string
		cache  string
		n      int
		whole  bool
		err    error
		got    time.Time // when the answer was read
	}
	get := func() answer {
		resp, err := r.client.Get(r.shield.base + "/" + rel)
		if err != nil {
			return answer{err: err, got: time.Now()}
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return answer{status: resp.StatusCode, cc: resp.Header.Get("Cache-Control"), cache: resp.Header.Get("X-Cache-Status"),
			n: len(body), whole: bytes.Equal(body, final), err: err, got: time.Now()}
	}
	var answers []answer
	var wg sync.WaitGroup
	done := make(chan struct{})
	// The poller is this test's; it ends at done, after the write.
	wg.Go(func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for range 1000 { // 20 s at most
			select {
			case <-done:
				return
			case <-tick.C:
			}
			answers = append(answers, get())
		}
	})
	start := time.Now()
	for i, off := 0, 0; off < size; i, off = i+1, off+chunk {
		time.Sleep(time.Until(start.Add(time.Duration(i) * 20 * time.Millisecond)))
		for _, f := range files {
			if _, err := f.Write(final[off:min(off+chunk, size)]); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The writers are done: closed, as a packager closes its segment. (One
	// left open would be held back however long it paused: the kernel
	// says a writer still holds it.) A poll answered after this may have
	// found the file closed, and whole, rightly.
	closing := time.Now()
	for _, f := range files {
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	written := time.Now()
	close(done)
	wg.Wait()

	partial, refused := 0, 0
	for _, a := range answers {
		switch {
		case a.err != nil:
			t.Errorf("GET through the shield while written: %v", a.err)
		case a.status == http.StatusOK && !a.whole, a.status == http.StatusPartialContent:
			partial++
			t.Errorf("GET through the shield while written: %d with %d bytes (Cache-Control %q, %s), want no part of the file", a.status, a.n, a.cc, a.cache)
		case a.status == http.StatusOK && a.got.Before(closing):
			t.Errorf("GET through the shield while written: the whole file before it settled (%s)", a.cache)
		case a.status == http.StatusOK:
			// answered as the writers closed it: no longer while written
		default:
			refused++
		}
	}
	if refused < 10 {
		t.Errorf("%d refusals in %d polls while the file was written, want at least 10", refused, len(answers))
	}
	var a answer
	testwait.For(t, 6*time.Second, "200 through the shield once the writers closed it", func() bool {
		a = get()
		return a.err == nil && a.status == http.StatusOK
	})
	if a.status != http.StatusOK || !a.whole {
		t.Fatalf("after the write: %d, %d bytes (whole %v, err %v); want 200 with the final file", a.status, a.n, a.whole, a.err)
	}
	again := get()
	if again.status != http.StatusOK || !again.whole || again.cache != "HIT" {
		t.Errorf("from the shield's cache: %d, %d bytes (whole %v), X-Cache-Status %q; want 200 HIT, the final file", again.status, again.n, again.whole, again.cache)
	}
	t.Logf("%d polls while written (%v): %d refused, %d partial; whole %v after the last write; then %s",
		len(answers), written.Sub(start).Round(time.Millisecond), refused, partial, time.Since(written).Round(time.Millisecond), again.cache)
}
