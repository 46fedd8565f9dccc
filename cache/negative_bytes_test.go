package cache_test

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/cache"
)

// longMissing is a distinct missing name of n bytes.
func longMissing(i, n int) string {
	p := "missing/" + strconv.Itoa(i) + "/"
	return p + strings.Repeat("x", max(n-len(p), 1))
}

// missingEverywhere makes every Open fail with ENOENT whatever the name's
// length: the origin opens through os.Root one segment at a time, so a long
// path of short segments reaches ENOENT, where one open(2) of the whole
// path would stop at PATH_MAX with ENAMETOOLONG.
func missingEverywhere(cfg *cache.Config) {
	cfg.Open = func(name string) (*os.File, error) {
		return nil, &fs.PathError{Op: "openat", Path: name, Err: syscall.ENOENT}
	}
}

// missingCache is a cache over a root where nothing exists, remembering
// misses for an hour within budget bytes.
func missingCache(t *testing.T, maxFiles int, budget int64) *cache.Cache {
	cfg := newFixture(t, nil).config(maxFiles)
	cfg.NegativeTTL = time.Hour
	cfg.NegativeBytes = budget
	missingEverywhere(&cfg)
	return newCache(t, cfg)
}

// acquireMissing asks for the i-th long name and expects fs.ErrNotExist,
// without printing a name of kilobytes on failure.
func acquireMissing(t *testing.T, c *cache.Cache, i, n int) {
	t.Helper()
	if h, err := c.Acquire(longMissing(i, n)); !errors.Is(err, fs.ErrNotExist) {
		if h != nil {
			h.Release()
		}
		t.Fatalf("Acquire(missing name %d, %d bytes): err is not fs.ErrNotExist", i, n)
	}
}

// TestNegativeEntriesBoundedByBytes: names are the client's choice and can
// be as long as a request line, so many long missing names must not make
// the cache hold more than NegativeBytes of them, whatever MaxFiles allows.
func TestNegativeEntriesBoundedByBytes(t *testing.T) {
	const budget = 64 << 10
	c := missingCache(t, 4096, budget)
	for i := range 200 {
		acquireMissing(t, c, i, 8<<10)
		if st := c.Stats(); st.NegativeBytes > budget {
			t.Fatalf("after %d missing names: NegativeBytes = %d, want <= %d", i+1, st.NegativeBytes, budget)
		}
	}
	st := c.Stats()
	perEntry := int64(8<<10 + cache.NegativeEntryOverhead)
	if want := budget / perEntry; int64(st.NegativeEntries) != want {
		t.Errorf("NegativeEntries = %d, want %d (the budget's worth of the newest names)", st.NegativeEntries, want)
	}
	if st.NegativeBytes != int64(st.NegativeEntries)*perEntry {
		t.Errorf("NegativeBytes = %d, want %d entries × %d", st.NegativeBytes, st.NegativeEntries, perEntry)
	}
	// The newest name is remembered, the oldest pushed out.
	hits := c.Stats().NegativeHits
	acquireMissing(t, c, 199, 8<<10)
	if got := c.Stats().NegativeHits; got != hits+1 {
		t.Errorf("NegativeHits after the newest name = %d, want %d", got, hits+1)
	}
	acquireMissing(t, c, 0, 8<<10)
	if got := c.Stats().NegativeHits; got != hits+1 {
		t.Errorf("NegativeHits after the oldest name = %d, want %d (pushed out)", got, hits+1)
	}
}

// TestNegativeEntryLargerThanBudget: a name that alone exceeds the budget
// is answered but not remembered, and pushes nothing out.
func TestNegativeEntryLargerThanBudget(t *testing.T) {
	c := missingCache(t, 16, 4<<10)
	missing(t, c, "small")
	acquireMissing(t, c, 1, 8<<10)
	acquireMissing(t, c, 1, 8<<10)
	if st := c.Stats(); st.NegativeHits != 0 {
		t.Errorf("NegativeHits = %d, want 0 (the long name is not remembered)", st.NegativeHits)
	}
	if st := c.Stats(); st.NegativeEntries != 1 {
		t.Errorf("NegativeEntries = %d, want 1 (only the small name)", st.NegativeEntries)
	}
}

// TestNegativeBytesAccountingAfterInvalidation: every way an entry leaves
// gives its bytes back.
func TestNegativeBytesAccountingAfterInvalidation(t *testing.T) {
	f := newFixture(t, nil)
	cfg := f.config(16)
	cfg.NegativeTTL = time.Hour
	c := newCache(t, cfg)
	for _, name := range []string{"a/1", "a/2", "b/1"} {
		missing(t, c, name)
	}
	c.Invalidate("a/1")
	c.InvalidatePrefix("b")
	if st := c.Stats(); st.NegativeBytes != int64(len("a/2")+cache.NegativeEntryOverhead) {
		t.Errorf("NegativeBytes = %d, want %d (a/2 only)", st.NegativeBytes, len("a/2")+cache.NegativeEntryOverhead)
	}
	c.InvalidateAll()
	if st := c.Stats(); st.NegativeBytes != 0 {
		t.Errorf("NegativeBytes after InvalidateAll = %d, want 0", st.NegativeBytes)
	}
}

// TestNegativeEntriesHeapBounded measures what the process keeps: without
// the byte bound, 400 distinct 64 KiB missing names would keep 25 MiB
// alive (the report: 200 names of 500 KB took RSS from 52 to 216
// MB); with a 1 MiB budget the live heap grows by about that much.
func TestNegativeEntriesHeapBounded(t *testing.T) {
	const budget = 1 << 20
	c := missingCache(t, 4096, budget)
	before := liveHeap()
	for i := range 400 {
		acquireMissing(t, c, i, 64<<10)
	}
	grew := int64(liveHeap()) - int64(before)
	if limit := int64(3 * budget); grew > limit {
		t.Errorf("live heap grew by %d bytes over 400 missing 64 KiB names, want <= %d (budget %d)", grew, limit, budget)
	}
	runtime.KeepAlive(c)
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
