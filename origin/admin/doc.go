// Package admin serves a segorigin server's admin endpoints, for a
// listener off the public port: /metrics (Prometheus: the server's
// counters, read at scrape time, its latency histogram, the Go and
// process collectors), /healthz, /readyz and /debug/pprof/.
//
// It owns the metric names and their labels and a registry per handler;
// it never registers anything globally, never counts (the server's
// atomics and the cache's and watcher's snapshots are the only sources),
// and never serves media.
package admin
