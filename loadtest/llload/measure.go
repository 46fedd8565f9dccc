package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// window is the measured run: answers outside it are not counted.
type window struct{ start, end atomic.Int64 } // unix nanoseconds; 0: not begun

func (w *window) in(t time.Time) bool {
	s, e := w.start.Load(), w.end.Load()
	return s != 0 && t.UnixNano() >= s && (e == 0 || t.UnixNano() < e)
}

// snapshot is the server's state at one moment.
type snapshot struct {
	cpu    time.Duration // utime + stime
	rss    int64         // bytes
	heap   int64         // go_memstats_heap_alloc_bytes
	parked int64         // segorigin_live_held{kind="reload"}
}

// serverUse is what the server spent over the run: its CPU, and its
// memory at the sample with the most requests parked, beside its memory
// before the clients connected.
type serverUse struct {
	before, peak snapshot
	cpu          time.Duration
	// gcBefore and gc are the server's live heap after a collection
	// (-pprof), before the clients and halfway through the run, with the
	// requests parked then.
	gcBefore, gc snapshot
}

// clockTick is the kernel's USER_HZ, the unit of /proc's CPU times (100 on
// every Linux architecture Go supports).
const clockTick = 10 * time.Millisecond

// measureServer reads the server's CPU time and RSS (-pid) and its heap
// and parked requests (-metrics); what is not configured, or fails, is 0.
func measureServer(cfg config) snapshot {
	var s snapshot
	if cfg.pid > 0 {
		s.cpu, s.rss = procUse(cfg.pid)
	}
	if cfg.metrics != "" {
		s.heap, s.parked = scrape(cfg.metrics)
	}
	return s
}

// sampleServer samples the server every 250 ms until end (or ctx ends)
// and keeps the sample with the most requests parked.
func sampleServer(ctx context.Context, cfg config, before snapshot, end time.Time) serverUse {
	u := serverUse{before: before}
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	half := time.Now().Add(time.Until(end) / 2)
	for time.Now().Before(end) {
		select {
		case <-ctx.Done():
			return u
		case <-t.C:
		}
		if s := measureServer(cfg); s.parked > u.peak.parked || u.peak.rss == 0 {
			u.peak = s
		}
		if cfg.pprof != "" && u.gc.heap == 0 && time.Now().After(half) {
			u.gc.heap = gcHeap(cfg.pprof)
			_, u.gc.parked = scrape(cfg.metrics)
		}
	}
	return u
}

// procUse is pid's CPU time (fields 14 and 15 of /proc/PID/stat) and RSS.
func procUse(pid int) (cpu time.Duration, rss int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, 0
	}
	// Fields from the third on follow the name's closing parenthesis.
	if i := bytes.LastIndexByte(b, ')'); i >= 0 {
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 12 {
			ut, _ := strconv.ParseInt(f[11], 10, 64)
			st, _ := strconv.ParseInt(f[12], 10, 64)
			cpu = time.Duration(ut+st) * clockTick
		}
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return cpu, 0
	}
	for line := range strings.Lines(string(b)) {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kib << 10
		}
	}
	return cpu, rss
}

// scrape reads the server's heap and its parked blocking reloads from
// its Prometheus text metrics.
func scrape(url string) (heap, parked int64) {
	cl := http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url)
	if err != nil {
		return 0, 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		name, val, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(strings.TrimSpace(val), 64)
		if err != nil {
			continue
		}
		switch name {
		case "go_memstats_heap_alloc_bytes":
			heap = int64(v)
		case `segorigin_live_held{kind="reload"}`:
			parked = int64(v)
		}
	}
	return heap, parked
}

// gcHeap is the server's live heap right after a collection: HeapAlloc
// as its heap profile reports it with gc=1 (net/http/pprof collects
// first), 0 when it cannot be read.
func gcHeap(pprof string) int64 {
	cl := http.Client{Timeout: 5 * time.Second}
	resp, err := cl.Get(strings.TrimSuffix(pprof, "/") + "/heap?gc=1&debug=1")
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 4<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "# HeapAlloc = "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
