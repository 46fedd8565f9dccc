package origin

import (
	"errors"
	"fmt"
	"path"
	"strings"
	"time"

	"segorigin/cache"
	"segorigin/origin/predict"
)

// Live prefixes (-live-prefix): directories the operator names live where
// no playlist can say so: DASH-only live output and low-latency DASH
// (chunked CMAF), which an HLS playlist's CAN-BLOCK-RELOAD never covers.
// Under a live prefix, as in a directory made live by its playlist:
//
//   - a file still being written is streamed as it grows (grow.go), its
//     stream ended when it does not grow for -live-hold;
//   - a request for a name that does not exist yet is held (live_hint.go's
//     hold) when it is the next segment: its name's last number minus one
//     names a file that exists ("chunk-0-00042.m4s" after
//     "chunk-0-00041.m4s"). It is woken when the name appears, and
//     answered then: streamed if the packager is still writing it,
//     whole otherwise; 503 after -live-hold.
//
// Every other path keeps the publishing rule: a file being written is
// 503 (or -in-progress uncached), a missing one 404.

// livePrefixes is -live-prefix and -live-hold, read only once made.
type livePrefixes struct {
	dirs []string // cache-name prefixes: no leading slash, a trailing one
	hold int64    // -live-hold in whole seconds, rounded up
}

func newLivePrefixes(list []string, hold time.Duration) livePrefixes {
	lp := livePrefixes{hold: int64((hold + time.Second - 1) / time.Second)}
	for _, p := range list {
		lp.dirs = append(lp.dirs, strings.TrimPrefix(path.Clean("/"+p), "/")+"/")
	}
	return lp
}

// checkLivePrefixes refuses a prefix that is empty or climbs, and a hold
// that is not positive where prefixes are set.
func checkLivePrefixes(list []string, hold time.Duration) error {
	var errs []error
	for _, p := range list {
		if p == "" || strings.Contains(p, "..") || !strings.HasPrefix(p, "/") {
			errs = append(errs, fmt.Errorf("live-prefix: %q: want a path from the root, such as /live/", p))
		}
	}
	if len(list) > 0 && hold <= 0 {
		errs = append(errs, errors.New("live-hold: want more than 0 with -live-prefix"))
	}
	return errors.Join(errs...)
}

// limit is -live-hold in seconds when dir (a cache name's directory) is
// under a live prefix, else 0.
func (lp *livePrefixes) limit(dir string) int64 {
	if len(lp.dirs) == 0 {
		return 0
	}
	d := dir + "/"
	if dir == "." {
		d = ""
	}
	for _, p := range lp.dirs {
		if strings.HasPrefix(d, p) {
			return lp.hold
		}
	}
	return 0
}

// heldByPrefix is holdHinted's word on a missing name no playlist hints
// at: under a live prefix, the next segment (the one numbered before it
// exists) is held for -live-hold; anything else is not (0, stepNext).
// stepSuspend: a file is to be opened, which noBlock forbids.
func (lv *liveSteps) heldByPrefix(p *plan) (int64, stepResult) {
	name := p.name.view()
	limit := lv.live.prefixes.limit(path.Dir(name))
	if limit == 0 {
		return 0, stepNext
	}
	for _, prev := range prevNumbers(name) {
		h, err, suspend := lv.acquireLive(prev, p.noBlock)
		if suspend {
			return 0, stepSuspend
		}
		if err == nil {
			h.Release()
			p.live.prefix = true
			return limit, stepNext
		}
	}
	return 0, stepNext
}

// acquireLive takes name from the cache, where blocking is allowed or it
// is open already; suspend: it is not, and noBlock forbids the open.
func (lv *liveSteps) acquireLive(name string, noBlock bool) (h *cache.Handle, err error, suspend bool) {
	if !noBlock {
		h, err = lv.cache.Acquire(name)
		return h, err, false
	}
	var ready bool
	h, _, err, ready = lv.cache.TryAcquire(name)
	return h, err, !ready
}

// prevNumbers are the names of the segment before name in a numbered
// series (predict.NextNumber's inverse): its file name's last run of
// digits minus one, at the same width ("seg010.m4s" → "seg009.m4s") and,
// where the number lost a digit ("seg10.m4s" → "seg09.m4s"), without its
// leading zero too ("seg9.m4s"). None for a number 0, an initialization segment, or a name
// without digits.
func prevNumbers(name string) []string {
	dir, file := path.Split(name)
	if strings.Contains(strings.ToLower(file), "init") {
		return nil
	}
	ext := path.Ext(file)
	stem := file[:len(file)-len(ext)]
	end := strings.LastIndexAny(stem, "0123456789")
	if end < 0 {
		return nil
	}
	start := end
	for start > 0 && stem[start-1] >= '0' && stem[start-1] <= '9' {
		start--
	}
	digits := []byte(stem[start : end+1])
	i := len(digits) - 1
	for ; i >= 0 && digits[i] == '0'; i-- {
		digits[i] = '9'
	}
	if i < 0 {
		return nil // all zeros: the first segment
	}
	digits[i]--
	var names []string
	if len(digits) <= predict.MaxDigits { // a longer run has no next: never the name before
		names = append(names, dir+stem[:start]+string(digits)+stem[end+1:]+ext)
	}
	if len(digits) > 1 && digits[0] == '0' && strings.Trim(string(digits[1:]), "9") == "" {
		names = append(names, dir+stem[:start]+string(digits[1:])+stem[end+1:]+ext)
	}
	return names
}
