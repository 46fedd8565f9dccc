package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/loadtest/verify"
)

// smallSet writes a small synth set in the workloads' layout: 3 W1
// segments of 64 KiB, a 1 MiB w2/big.mp4, the W4 playlists, and the W1
// segments p01.m3u8 lists (64 KiB too).
func smallSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel string, size int64) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := synth.WriteFile(p, filepath.Base(p), size); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 3 {
		write(synth.Workloads()[0].Path(i), 64<<10)
	}
	write("w2/big.mp4", 1<<20)
	w4 := synth.Workloads()[3]
	os.MkdirAll(filepath.Join(dir, "w4"), 0o755)
	for i := range w4.Count {
		p := filepath.Join(dir, filepath.FromSlash(w4.Path(i)))
		text := synth.Playlist(w4.FileName(i), int(w4.Size))
		if err := os.WriteFile(p, text, 0o644); err != nil {
			t.Fatal(err)
		}
		if i != 1 {
			continue
		}
		for _, line := range strings.Split(string(text), "\n") {
			if rel, ok := strings.CutPrefix(line, "../"); ok {
				write(rel, 64<<10)
			}
		}
	}
	return dir
}

// corrupt serves dir but flips one byte at file offset 70000 of big.mp4.
func corrupt(dir string) http.Handler {
	fs := http.FileServer(http.Dir(dir))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !strings.HasSuffix(r.URL.Path, "big.mp4") {
			fs.ServeHTTP(w, r)
			return
		}
		f, _ := os.Open(filepath.Join(dir, "w2/big.mp4"))
		defer f.Close()
		http.ServeContent(w, r, "big.mp4", time.Time{}, &flipAt{f: f, at: 70000})
	})
}

type flipAt struct {
	f   *os.File
	at  int64
	pos int64
}

func (x *flipAt) Read(p []byte) (int, error) {
	n, err := x.f.ReadAt(p, x.pos)
	if x.at >= x.pos && x.at < x.pos+int64(n) {
		p[x.at-x.pos] ^= 1
	}
	x.pos += int64(n)
	return n, err
}

func (x *flipAt) Seek(off int64, whence int) (int64, error) {
	p, err := x.f.Seek(off, whence)
	x.pos = p
	return p, err
}

func TestRun(t *testing.T) {
	dir := smallSet(t)
	good := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer good.Close()
	bad := httptest.NewServer(corrupt(dir))
	defer bad.Close()

	w1, _ := WorkloadPlan("W1", 3, 64<<10)
	w2, _ := WorkloadPlan("W2", 0, 1<<20)
	w2.Span = 64 << 10
	w1Big, _ := WorkloadPlan("W1", 3, 0) // the design's 2 MiB
	tests := []struct {
		name       string
		url        string
		plan       Plan
		verify     VerifyMode
		wantErrors bool
		wantIn     string // in the first error
	}{
		{"W1 whole files", good.URL, w1, VerifySynth, false, ""},
		{"W2 ranges", good.URL, w2, VerifySynth, false, ""},
		{"W4 playlists walked as HLS", good.URL, HLSPlan{Path: "/w4/p01.m3u8"}, VerifySynth, false, ""},
		{"verify root", good.URL, w1, VerifyRoot, false, ""},
		{"a flipped byte is caught", bad.URL, w2, VerifySynth, true, "big.mp4: byte at offset 70000"},
		{"W1 plan against the wrong size", good.URL, w1Big, VerifySynth, true, "want the file's size 2097152"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Run(context.Background(), Config{
				URL: tt.url, Plan: tt.plan, Sessions: 2, Duration: 2 * time.Second,
				Requests: 60, Verify: tt.verify, Root: dir,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Requests == 0 {
				t.Fatalf("Run made no requests")
			}
			if !tt.wantErrors {
				if res.Errors != 0 {
					t.Fatalf("Run: %d errors, want 0; first: %v", res.Errors, res.ErrorSamples[0])
				}
				if res.Requests != 60 {
					t.Errorf("Run: %d requests, want exactly -requests 60", res.Requests)
				}
				return
			}
			if res.Errors == 0 || len(res.ErrorSamples) == 0 {
				t.Fatalf("Run: no errors, want some")
			}
			var re *RequestError
			if !errors.As(res.ErrorSamples[0], &re) || !strings.Contains(re.Error(), tt.wantIn) || !strings.Contains(re.URL, "http://") {
				t.Fatalf("first error %v, want a RequestError with the URL and %q", res.ErrorSamples[0], tt.wantIn)
			}
		})
	}
}

func TestRunIdle(t *testing.T) {
	dir := smallSet(t)
	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	defer srv.Close()
	w1, _ := WorkloadPlan("W5", 3, 64<<10)
	res, err := Run(context.Background(), Config{
		URL: srv.URL, Plan: w1, Sessions: 1, Duration: 500 * time.Millisecond,
		IdleConns: 50, IdlePath: "/w4/p00.m3u8",
	})
	if err != nil {
		t.Fatal(err)
	}
	if res.IdleOpen != 50 || res.IdleLost != 0 || res.IdleFailed != 0 || res.Errors != 0 {
		t.Fatalf("idle open %d lost %d failed %d, errors %d; want 50 0 0, 0", res.IdleOpen, res.IdleLost, res.IdleFailed, res.Errors)
	}
}

func TestConfigInvalid(t *testing.T) {
	w1, _ := WorkloadPlan("W1", 0, 0)
	for name, cfg := range map[string]Config{
		"no duration":   {URL: "http://127.0.0.1:1", Plan: w1, Sessions: 1},
		"bad URL":       {URL: "127.0.0.1:1", Plan: w1, Sessions: 1, Duration: time.Second},
		"nothing to do": {URL: "http://127.0.0.1:1", Plan: w1, Duration: time.Second},
		"root missing":  {URL: "http://127.0.0.1:1", Plan: w1, Sessions: 1, Duration: time.Second, Verify: VerifyRoot},
	} {
		if _, err := Run(context.Background(), cfg); err == nil {
			t.Errorf("Run(%s) = nil error, want one", name)
		}
	}
}

var _ verify.Content = anyContent{}

// TestRunRevalidate: with Revalidate, a session asks again for a file it
// has fetched with If-None-Match and the ETag it saw, and wants 304; a
// server that answers 200 instead is an error.
func TestRunRevalidate(t *testing.T) {
	dir := smallSet(t)
	fs := http.FileServer(http.Dir(dir))
	var notModified atomic.Int64
	tagged := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			notModified.Add(1)
		}
		fs.ServeHTTP(w, r) // answers 304 itself when If-None-Match matches
	}))
	defer tagged.Close()
	ignoring := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v1"`)
		r.Header.Del("If-None-Match")
		fs.ServeHTTP(w, r)
	}))
	defer ignoring.Close()
	w1, _ := WorkloadPlan("W1", 3, 64<<10)
	run := func(url string) Result {
		t.Helper()
		res, err := Run(context.Background(), Config{
			URL: url, Plan: w1, Sessions: 1, Duration: 2 * time.Second, Requests: 9, Revalidate: true,
		})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		return res
	}
	if res := run(tagged.URL); res.Errors != 0 || res.Requests != 9 || notModified.Load() != 6 {
		t.Errorf("Revalidate: %d requests, %d errors (%v), %d conditional; want 9, 0, 6 (3 files, then 304s)",
			res.Requests, res.Errors, res.ErrorSamples, notModified.Load())
	}
	res := run(ignoring.URL)
	if res.Errors != 6 || len(res.ErrorSamples) == 0 || !strings.Contains(res.ErrorSamples[0].Error(), "status 200, want 304") {
		t.Errorf("Revalidate against a server ignoring If-None-Match: %d errors (%v), want 6 with %q",
			res.Errors, res.ErrorSamples, "status 200, want 304")
	}
}
