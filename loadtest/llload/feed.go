package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"segorigin/fixtures/llpack"
	"segorigin/fixtures/synth"
)

// feed is one live rendition: the test packager writing it under the
// server's root, and every version of its playlist it published, with
// the time its rename returned, on the clients' clock.
type feed struct {
	pl    *llpack.Packager
	path  string // the playlist's URL path
	dir   string // its directory's URL path, with a trailing slash
	parts int    // parts per segment
	size  int    // bytes of each part

	mu       sync.RWMutex  // protects versions, next
	versions []version     // by sequence: msn*parts + part of the part each one added
	next     chan struct{} // closed when the next version is recorded
}

// version is one published playlist: the part it added (its sequence)
// and when the rename that published it returned.
type version struct {
	at   time.Time
	body []byte
	part []byte // the bytes of the part it added, as the packager wrote them
}

// newFeed makes rendition i under root (URL path /sub/pNN/live.m3u8).
func newFeed(root, sub string, i int, cfg llpack.Config) (*feed, error) {
	rel := fmt.Sprintf("%s/p%02d", sub, i)
	cfg.Dir = filepath.Join(root, filepath.FromSlash(rel))
	// A run starts at segment 0: what an earlier run left would be
	// answered as a later version.
	if err := os.RemoveAll(cfg.Dir); err != nil {
		return nil, err
	}
	pl, err := llpack.New(cfg)
	if err != nil {
		return nil, err
	}
	return &feed{pl: pl, path: "/" + rel + "/live.m3u8", dir: "/" + rel + "/", parts: cfg.Parts, size: cfg.PartBytes,
		next: make(chan struct{})}, nil
}

// publish writes the next part and its playlist and records the version.
func (f *feed) publish() error {
	msn, part := f.pl.Next()
	if err := f.pl.Publish(); err != nil {
		return err
	}
	at := time.Now()
	data := make([]byte, f.size)
	synth.Fill(llpack.PartName(msn, part), 0, data)
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq := msn*f.parts + part; seq != len(f.versions) {
		return fmt.Errorf("llload: %s published part %d after %d versions", f.path, seq, len(f.versions))
	}
	f.versions = append(f.versions, version{at: at, body: f.pl.Published(), part: data})
	close(f.next)
	f.next = make(chan struct{})
	return nil
}

// run publishes a part every pace, the first after offset, until ctx ends.
func (f *feed) run(ctx context.Context, pace, offset time.Duration) error {
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(offset):
	}
	t := time.NewTicker(pace)
	defer t.Stop()
	for {
		if err := f.publish(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// latest is the sequence of the newest version (-1 before the first).
func (f *feed) latest() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.versions) - 1
}

// version is the version of sequence seq, if published.
func (f *feed) version(seq int) (version, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if seq < 0 || seq >= len(f.versions) {
		return version{}, false
	}
	return f.versions[seq], true
}

// await is the version of sequence seq once it is recorded, waiting at
// most d: a client may read the answer a renamed playlist satisfied
// before the packager's goroutine has recorded it.
func (f *feed) await(seq int, d time.Duration) (version, bool) {
	deadline := time.After(d)
	for {
		f.mu.RLock()
		n, next := len(f.versions), f.next
		var v version
		if seq >= 0 && seq < n {
			v = f.versions[seq]
		}
		f.mu.RUnlock()
		if seq < n {
			return v, seq >= 0
		}
		select {
		case <-next:
		case <-deadline:
			return version{}, false
		}
	}
}

// target is the blocking reload for the part of sequence seq.
func (f *feed) target(seq int) string {
	return fmt.Sprintf("%s?_HLS_msn=%d&_HLS_part=%d", f.path, seq/f.parts, seq%f.parts)
}

// partPath is the URL path of the part of sequence seq.
func (f *feed) partPath(seq int) string { return f.dir + llpack.PartName(seq/f.parts, seq%f.parts) }
