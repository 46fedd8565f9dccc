package main

import (
	"fmt"
	"io"
	"time"
)

// quantile is the q-quantile of sorted d (0 when empty).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[min(int(q*float64(len(d))), len(d)-1)]
}

// perParked is the growth of v over the run's start per parked request,
// or 0 when nothing was parked (or measured).
func perParked(before, peak int64, parked int64) int64 {
	if parked <= 0 || peak == 0 {
		return 0
	}
	return (peak - before) / parked
}

func us(d time.Duration) int64 { return d.Microseconds() }

// print writes the run's table and its RESULT line.
func (r result) print(w io.Writer, cfg config) {
	t := &r.t
	secs := r.elapsed.Seconds()
	fmt.Fprintf(w, "llload: %d clients, %d playlists, a part every %v each, %.1f s measured\n",
		cfg.clients, cfg.playlists, cfg.pace, secs)
	fmt.Fprintf(w, "%-44s %d (%.0f/s), %d timed out (503)\n", "blocking reloads answered and verified", t.answers, float64(t.answers)/secs, t.timedOut)
	w50, w99, wmax := quantile(t.waited, 0.5), quantile(t.waited, 0.99), quantile(t.waited, 1)
	fmt.Fprintf(w, "%-44s %d: p50 %v  p90 %v  p99 %v  max %v\n", "  parked, from the rename to the last byte", len(t.waited), w50,
		quantile(t.waited, 0.9), w99, wmax)
	if cfg.accessLog != "" {
		s := r.served
		fmt.Fprintf(w, "%-44s %d: p50 %v  p90 %v  p99 %v  max %v\n", "  parked, server: rename to last byte sent", len(s),
			quantile(s, 0.5), quantile(s, 0.9), quantile(s, 0.99), quantile(s, 1))
	}
	fmt.Fprintf(w, "%-44s %d: p50 %v  p99 %v  max %v\n", "  answered at once, from the send", len(t.immediate),
		quantile(t.immediate, 0.5), quantile(t.immediate, 0.99), quantile(t.immediate, 1))
	fmt.Fprintf(w, "%-44s %d, %d bytes verified in all\n", "parts fetched and verified", t.parts, t.bytes)
	fmt.Fprintf(w, "%-44s %d\n", "errors", t.errs)
	if t.firstErr != nil {
		fmt.Fprintf(w, "%-44s %v\n", "  first", t.firstErr)
	}
	var cpuPer int64
	if t.answers > 0 {
		cpuPer = (r.srv.cpu / time.Duration(t.answers)).Nanoseconds()
	}
	b, p := r.srv.before, r.srv.peak
	rssPer := perParked(b.rss, p.rss, p.parked)
	heapPer := perParked(b.heap, p.heap, p.parked)
	if cfg.pid > 0 {
		fmt.Fprintf(w, "%-44s %v: %.1f µs per answer (parts included)\n", "server CPU", r.srv.cpu, float64(cpuPer)/1e3)
	}
	if cfg.metrics != "" {
		fmt.Fprintf(w, "%-44s %d parked: RSS +%d B each, heap +%d B each (garbage not yet collected included)\n",
			"server memory at the most parked", p.parked, rssPer, heapPer)
	}
	g := r.srv.gc
	gcPer := perParked(r.srv.gcBefore.heap, g.heap, g.parked)
	if cfg.pprof != "" {
		fmt.Fprintf(w, "%-44s %d parked: +%d B each (their connections included)\n", "server live heap after a collection", g.parked, gcPer)
	}
	fmt.Fprintf(w, "RESULT clients=%d playlists=%d answers=%d waited=%d p50_us=%d p99_us=%d max_us=%d immediate=%d timed_out=%d parts=%d bytes=%d errors=%d cpu_ns_per_answer=%d parked=%d rss_per_parked=%d heap_per_parked=%d live_heap_per_parked=%d server_waited=%d server_p50_us=%d server_p99_us=%d\n",
		cfg.clients, cfg.playlists, t.answers, len(t.waited), us(w50), us(w99), us(wmax), len(t.immediate), t.timedOut,
		t.parts, t.bytes, t.errs, cpuPer, p.parked, rssPer, heapPer, gcPer,
		len(r.served), us(quantile(r.served, 0.5)), us(quantile(r.served, 0.99)))
}
