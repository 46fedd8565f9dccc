package watcher

import "sync/atomic"

// Stats is a snapshot of a watcher's counters. Counters only grow;
// WatchedDirs and Degraded are levels.
type Stats struct {
	Events        uint64 // fsnotify events handled
	Invalidations uint64 // calls made on the Invalidator, of any kind
	Overflows     uint64 // kernel event queue overflows (events were lost)
	Errors        uint64 // other failures: fsnotify errors, watches that could not be added (ENOSPC included), the root going
	Rebuilds      uint64 // attempts to rebuild the full watch set while degraded
	WatchedDirs   int64  // directories watched now, the root included
	Degraded      bool   // the watch set is incomplete or events were lost; the cache should revalidate
}

// counters is the live form of Stats: written by the goroutine running Run,
// read by anyone.
type counters struct {
	events        atomic.Uint64 // see Stats.Events
	invalidations atomic.Uint64 // see Stats.Invalidations
	overflows     atomic.Uint64 // see Stats.Overflows
	errors        atomic.Uint64 // see Stats.Errors
	rebuilds      atomic.Uint64 // see Stats.Rebuilds
	watchedDirs   atomic.Int64  // see Stats.WatchedDirs
	degraded      atomic.Bool   // see Stats.Degraded
}

// Stats returns a snapshot of the counters. It is safe to call from any
// goroutine while Run runs.
func (w *Watcher) Stats() Stats {
	return Stats{
		Events:        w.stats.events.Load(),
		Invalidations: w.stats.invalidations.Load(),
		Overflows:     w.stats.overflows.Load(),
		Errors:        w.stats.errors.Load(),
		Rebuilds:      w.stats.rebuilds.Load(),
		WatchedDirs:   w.stats.watchedDirs.Load(),
		Degraded:      w.stats.degraded.Load(),
	}
}
