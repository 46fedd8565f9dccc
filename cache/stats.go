package cache

import "sync/atomic"

// Stats is a snapshot of a cache's counters. Counters only grow; OpenFiles,
// Entries and NegativeEntries are levels.
type Stats struct {
	Hits             uint64 // Acquires answered from a listed open file, with no open or stat
	Misses           uint64 // Acquires that opened the file or waited for another caller's open of it
	NegativeHits     uint64 // Acquires answered by a remembered "does not exist"
	Evictions        uint64 // open entries unlisted to make room, or by Shed
	Invalidations    uint64 // entries (open or negative) unlisted by Invalidate, InvalidatePrefix, InvalidateAll
	Revalidations    uint64 // stat checks of entries older than the revalidation period
	Stale            uint64 // revalidations that found the path changed or gone, so the entry was dropped
	EMFILE           uint64 // Open calls that failed with EMFILE or ENFILE, retries included
	InlineOverBudget uint64 // small files not inlined because InlineBudget was full
	InlineChanged    uint64 // small files not inlined because they changed while being read
	InlineFiles      int64  // inlined files alive now (listed or lent out)
	InlineBytes      int64  // their bytes: at most InlineBudget
	OpenFiles        int64  // descriptors open now: listed, unlisted but still lent out, and uncached
	Entries          int    // open files listed now
	NegativeEntries  int    // negative entries listed now (expired ones linger until looked up or pushed out)
	NegativeBytes    int64  // what the listed negative entries count against Config.NegativeBytes
}

// counters is the live form of Stats, updated without the cache lock.
type counters struct {
	hits             atomic.Uint64 // see Stats.Hits
	misses           atomic.Uint64 // see Stats.Misses
	negativeHits     atomic.Uint64 // see Stats.NegativeHits
	evictions        atomic.Uint64 // see Stats.Evictions
	invalidations    atomic.Uint64 // see Stats.Invalidations
	revalidations    atomic.Uint64 // see Stats.Revalidations
	stale            atomic.Uint64 // see Stats.Stale
	emfile           atomic.Uint64 // see Stats.EMFILE
	openFiles        atomic.Int64  // see Stats.OpenFiles; Handles decrement it on close
	inlineOverBudget atomic.Uint64 // see Stats.InlineOverBudget
	inlineChanged    atomic.Uint64 // see Stats.InlineChanged
	inlineFiles      atomic.Int64  // see Stats.InlineFiles; Handles decrement it on close
	inlineBytes      atomic.Int64  // see Stats.InlineBytes; reserved before the read, given back on close
}

// Stats returns a snapshot of the counters. The fields are read one by one,
// so a snapshot taken under load is not a single instant.
func (c *Cache) Stats() Stats {
	s := Stats{
		Hits:             c.stats.hits.Load(),
		Misses:           c.stats.misses.Load(),
		NegativeHits:     c.stats.negativeHits.Load(),
		Evictions:        c.stats.evictions.Load(),
		Invalidations:    c.stats.invalidations.Load(),
		Revalidations:    c.stats.revalidations.Load(),
		Stale:            c.stats.stale.Load(),
		EMFILE:           c.stats.emfile.Load(),
		OpenFiles:        c.stats.openFiles.Load(),
		InlineOverBudget: c.stats.inlineOverBudget.Load(),
		InlineChanged:    c.stats.inlineChanged.Load(),
		InlineFiles:      c.stats.inlineFiles.Load(),
		InlineBytes:      c.stats.inlineBytes.Load(),
	}
	if c.maxFiles > 0 {
		c.mu.Lock()
		s.Entries, s.NegativeEntries, s.NegativeBytes = c.files.Len(), c.negative.Len(), c.negBytes
		c.mu.Unlock()
	}
	return s
}
