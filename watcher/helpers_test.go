package watcher

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/internal/testwait"
)

// recorder is an Invalidator that remembers its calls as "I name",
// "P dir" and "A".
type recorder struct {
	mu    sync.Mutex // protects calls
	calls []string
}

func (r *recorder) Invalidate(name string)      { r.add("I " + name) }
func (r *recorder) InvalidatePrefix(dir string) { r.add("P " + dir) }
func (r *recorder) InvalidateAll()              { r.add("A") }

func (r *recorder) add(call string) {
	r.mu.Lock()
	r.calls = append(r.calls, call)
	r.mu.Unlock()
}

// take returns the calls so far and forgets them.
func (r *recorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	calls := r.calls
	r.calls = nil
	return calls
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

const waitLimit = 5 * time.Second

// eventually is testwait.For with waitLimit.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testwait.For(t, waitLimit, what, cond)
}

// degradedLog records OnDegraded calls.
type degradedLog struct {
	mu    sync.Mutex // protects calls
	calls []bool
}

func (d *degradedLog) record(degraded bool) {
	d.mu.Lock()
	d.calls = append(d.calls, degraded)
	d.mu.Unlock()
}

func (d *degradedLog) get() []bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// harness is a media root with a running watcher.
type harness struct {
	t        *testing.T
	root     string
	w        *Watcher
	rec      *recorder
	degraded *degradedLog
	syncs    atomic.Int64
}

type options struct {
	root       string // default: a fresh temp dir
	retryEvery time.Duration
	wrapAdd    func(add func(string) error) func(string) error
	noRun      bool // build the watcher but do not start Run
	onWrite    bool // record OnWrite calls as "W name"
}

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// start builds a watcher over opt.root (which may already hold files) and
// runs it; cleanup cancels Run, waits for it and checks it returned nil.
func start(t *testing.T, opt options) *harness {
	t.Helper()
	if opt.root == "" {
		opt.root = t.TempDir()
	}
	h := &harness{t: t, root: opt.root, rec: &recorder{}, degraded: &degradedLog{}}
	cfg := Config{
		Root:       opt.root,
		Target:     h.rec,
		Logger:     quietLogger(),
		OnDegraded: h.degraded.record,
		RetryEvery: opt.retryEvery,
	}
	if opt.onWrite {
		cfg.OnWrite = func(name string) { h.rec.add("W " + name) }
	}
	w, err := newWatcher(cfg, opt.wrapAdd)
	if err != nil {
		t.Fatalf("New(%s): %v", opt.root, err)
	}
	h.w = w
	if opt.noRun {
		t.Cleanup(func() { w.Close() })
		return h
	}
	h.run()
	return h
}

func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.w.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				h.t.Errorf("Run() = %v, want nil", err)
			}
		case <-time.After(waitLimit):
			h.t.Errorf("Run did not return within %v of cancel", waitLimit)
		}
	})
}

func (h *harness) path(name string) string {
	return filepath.Join(h.root, filepath.FromSlash(name))
}

func (h *harness) write(name, content string) {
	h.t.Helper()
	if err := os.WriteFile(h.path(name), []byte(content), 0o644); err != nil {
		h.t.Fatal(err)
	}
}

func (h *harness) mkdirAll(name string) {
	h.t.Helper()
	if err := os.MkdirAll(h.path(name), 0o755); err != nil {
		h.t.Fatal(err)
	}
}

// waitCalls waits until every call in want has been made.
func (h *harness) waitCalls(want ...string) {
	h.t.Helper()
	eventually(h.t, fmt.Sprintf("calls %q (have %q)", want, h.rec.snapshot()), func() bool {
		have := h.rec.snapshot()
		for _, c := range want {
			if !slices.Contains(have, c) {
				return false
			}
		}
		return true
	})
}

// sync returns once every event caused before it has been handled: it
// creates a marker file in dir and waits for its invalidation, which the
// kernel queues after everything earlier. calls leaves the markers out.
func (h *harness) sync(dir string) {
	h.t.Helper()
	marker := fmt.Sprintf(".sync-%d", h.syncs.Add(1))
	if dir != "" {
		marker = dir + "/" + marker
	}
	h.write(marker, "")
	h.waitCalls("I " + marker)
}

// calls returns the calls made so far, without sync markers, and forgets
// them.
func (h *harness) calls() []string {
	var out []string
	for _, c := range h.rec.take() {
		if !strings.Contains(c, ".sync-") {
			out = append(out, c)
		}
	}
	return out
}
