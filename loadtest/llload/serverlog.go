package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"syscall"
	"time"
)

// logLine is what serverDelays reads of a line of the server's JSON
// access log (-access-log-format json).
type logLine struct {
	Time     string  `json:"time"` // the request read, RFC 3339 with µs
	Path     string  `json:"path"`
	Query    string  `json:"query"`
	Status   int     `json:"status"`
	Duration float64 `json:"duration"` // seconds, to the last body byte handed to the kernel
}

// flushAccessLog has the server write out the access log lines it may
// hold in a buffer (-access-log-buffer): SIGUSR1 to pid, which reopens
// the log at the same path after writing them; then it waits until the
// file at path has not grown for 300 ms (at most 10 s). pid 0: the log
// is read as it is.
func flushAccessLog(ctx context.Context, pid int, path string) error {
	if pid == 0 {
		return nil
	}
	if err := syscall.Kill(pid, syscall.SIGUSR1); err != nil {
		return fmt.Errorf("llload: SIGUSR1 to %d, to write out its access log: %w", pid, err)
	}
	const poll, still = 50 * time.Millisecond, 6 // 300 ms without growth
	last, same := int64(-1), 0
	for range 10 * time.Second / poll {
		fi, err := os.Stat(path)
		if err != nil {
			return err
		}
		if fi.Size() == last {
			if same++; same == still {
				return nil
			}
		} else {
			last, same = fi.Size(), 0
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
	return fmt.Errorf("llload: %s still growing 10 s after the run", path)
}

// serverDelays reads the server's JSON access log at path and returns,
// sorted, the server's own delay for each parked blocking reload it
// answered inside the window: from the rename that published the version
// satisfying it to the last byte the server handed the kernel (the line's
// time plus its duration). Both are on this machine's clock; what it
// leaves out beside the players' delays is the time the players took to
// be scheduled and read their answers. A reload read before its rename
// was parked; one read after is not counted here. The rename's time is
// taken when the packager's rename returns, so a server that answers
// in the meantime shows 0.
func serverDelays(path string, feeds []*feed, w *window) ([]time.Duration, error) {
	byPath := map[string]*feed{}
	for _, f := range feeds {
		byPath[f.path] = f
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	var out []time.Duration
	sc := bufio.NewScanner(fh)
	sc.Buffer(make([]byte, 0, 16<<10), 64<<10)
	for n := 1; sc.Scan(); n++ {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return nil, fmt.Errorf("llload: %s line %d: %w (want -access-log-format json)", path, n, err)
		}
		f := byPath[l.Path]
		if f == nil || l.Status != 200 {
			continue
		}
		seq, ok := reloadSeq(l.Query, f.parts)
		if !ok {
			continue
		}
		v, ok := f.version(seq)
		if !ok {
			continue
		}
		read, err := time.Parse(time.RFC3339Nano, l.Time)
		if err != nil {
			return nil, fmt.Errorf("llload: %s line %d: time %q: %w", path, n, l.Time, err)
		}
		end := read.Add(time.Duration(l.Duration * float64(time.Second)))
		if !read.Before(v.at) || !w.in(end) {
			continue
		}
		out = append(out, max(end.Sub(v.at), 0))
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

// reloadSeq is the sequence of the part a blocking reload's query asks
// for (_HLS_msn, _HLS_part).
func reloadSeq(query string, parts int) (int, bool) {
	q, err := url.ParseQuery(query)
	if err != nil {
		return 0, false
	}
	msn, err1 := strconv.Atoi(q.Get("_HLS_msn"))
	part, err2 := strconv.Atoi(q.Get("_HLS_part"))
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return msn*parts + part, true
}
