package cache_test

import (
	"errors"
	"io/fs"
	"sync/atomic"
	"syscall"
	"testing"
)

func TestEMFILEShedsAndRetries(t *testing.T) {
	f := newFixture(t, map[string]string{"a": "a", "b": "b", "c": "c", "new": "new"})
	var failures atomic.Int64
	f.openHook = func(name string) error {
		if failures.Add(-1) >= 0 {
			return &fs.PathError{Op: "open", Path: name, Err: syscall.EMFILE}
		}
		return nil
	}
	c := newCache(t, f.config(8))
	held := acquire(t, c, "a")
	defer held.Release()
	acquire(t, c, "b").Release()
	acquire(t, c, "c").Release()

	failures.Store(1) // the next Open fails once
	h := acquire(t, c, "new")
	defer h.Release()

	s := c.Stats()
	if s.EMFILE != 1 || s.Entries != 1 || s.Evictions != 3 {
		t.Errorf("after one EMFILE: EMFILE, Entries, Evictions = %d, %d, %d; want 1, 1, 3",
			s.EMFILE, s.Entries, s.Evictions)
	}
	// b and c were closed by shedding; a is lent out and stays open.
	wantStat(t, "OpenFiles", s.OpenFiles, 2)
	if got := content(t, held); got != "a" {
		t.Errorf("lent handle after shedding reads %q, want %q", got, "a")
	}
	if got := content(t, h); got != "new" {
		t.Errorf("content = %q, want %q", got, "new")
	}
}

func TestFDLimitPersistsReturnsError(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.EMFILE, syscall.ENFILE} {
		t.Run(errno.Error(), func(t *testing.T) {
			f := newFixture(t, map[string]string{"a": "a"})
			f.openHook = func(name string) error {
				return &fs.PathError{Op: "open", Path: name, Err: errno}
			}
			c := newCache(t, f.config(8))
			h, err := c.Acquire("a")
			if !errors.Is(err, errno) {
				if err == nil {
					h.Release()
				}
				t.Fatalf("Acquire = %v, want errors.Is(err, %v)", err, errno)
			}
			wantStat(t, "Open calls (one retry)", f.opens.Load(), 2)
			if got := c.Stats().EMFILE; got != 2 {
				t.Errorf("Stats().EMFILE = %d, want 2", got)
			}
		})
	}
}
