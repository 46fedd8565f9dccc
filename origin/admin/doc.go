// Package admin serves a segorigin server's admin endpoints, for a
// listener off the public port: /metrics (Prometheus: the server's
// counters, read at scrape time, its latency histogram, the Go and
// process collectors), /healthz, /readyz and /debug/pprof/.
//
// It owns a registry per handler and the translation of the metrics the
// server declares (origin.Server.Metrics: names, help, labels, counter or
// gauge, read from one snapshot at each scrape) into Prometheus's; it
// never names a metric of its own, never registers anything globally,
// never counts, and never serves media.
package admin
