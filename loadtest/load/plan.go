package load

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"segorigin/fixtures/synth"
)

// step is one request a session makes.
type step struct {
	url  string // absolute
	off  int64  // first byte asked for (0 for a whole file)
	n    int64  // bytes asked for with a Range header; -1: whole file, no Range
	size int64  // the file's complete length if known, else -1
	// keep asks the session to hand the body to the walker (playlists).
	keep bool
}

// rangeHeader is the Range value of a ranged step.
func (s step) rangeHeader() string {
	return fmt.Sprintf("bytes=%d-%d", s.off, s.off+s.n-1)
}

// walker yields one session's requests in order. Each session owns its
// walker; it is never shared.
type walker interface {
	next() step
	// got receives the body of a step with keep set.
	got(s step, body []byte) error
}

// Plan is what sessions walk: a synth workload (SynthPlan) or an HLS title
// (HLSPlan).
type Plan interface {
	// walker returns a new walk for one session over the server at base
	// (scheme://host, no trailing slash); rng is the session's own.
	walker(base string, rng *rand.Rand) walker
	// String describes the plan for the report.
	String() string
}

// SynthPlan walks the files of a synth workload (ARCHITECTURE.md W1-W4, as
// written by fixtures/gensynth): each session starts at a random file (or,
// for a one-file workload such as W2, a random Span-aligned offset) and
// fetches the following files (or spans) in order, wrapping at the end,
// like a player walking a title.
type SynthPlan struct {
	// Workload names the files: synth.Workloads()[i], possibly with Count
	// or Size lowered to match a smaller generated set.
	Workload synth.Workload
	// Prefix is prepended to each file's path (e.g. "/t/<token>"); empty
	// for none.
	Prefix string
	// Span, if > 0, makes requests Range GETs of Span bytes at Span-aligned
	// offsets (the last span of a file may be shorter), answered 206.
	Span int64
}

// WorkloadPlan returns the SynthPlan of a design workload by name: W1, W3,
// W4 whole files; W2 256 KiB ranges of w2/big.mp4; W5 is W1 (its idle
// connections are Config.IdleConns). count > 0 lowers the file count, size
// > 0 sets the file size (for smaller generated sets).
func WorkloadPlan(name string, count int, size int64) (SynthPlan, error) {
	key := strings.ToUpper(name)
	if key == "W5" {
		key = "W1"
	}
	for _, w := range synth.Workloads() {
		if w.Name != key {
			continue
		}
		if count > 0 {
			w.Count = min(count, w.Count)
		}
		if size > 0 {
			w.Size = size
		}
		p := SynthPlan{Workload: w}
		if key == "W2" {
			p.Span = 256 << 10
		}
		return p, nil
	}
	return SynthPlan{}, fmt.Errorf("unknown workload %q: want W1, W2, W3, W4 or W5", name)
}

func (p SynthPlan) String() string {
	w := p.Workload
	s := fmt.Sprintf("%s: %d × %d bytes /%s/%s", w.Name, w.Count, w.Size, w.Dir, w.Pattern)
	if p.Span > 0 {
		s += fmt.Sprintf(", %d-byte ranges", p.Span)
	}
	return s
}

func (p SynthPlan) walker(base string, rng *rand.Rand) walker {
	w := &synthWalker{plan: p, base: base + p.Prefix + "/"}
	if p.Workload.Count > 0 {
		w.file = rng.IntN(p.Workload.Count)
	}
	if p.Span > 0 && p.Workload.Size > p.Span {
		w.off = rng.Int64N((p.Workload.Size+p.Span-1)/p.Span) * p.Span
	}
	return w
}

type synthWalker struct {
	plan SynthPlan
	base string
	file int   // index of the next file
	off  int64 // offset of the next span (Span > 0)
}

func (w *synthWalker) next() step {
	wl := w.plan.Workload
	s := step{url: w.base + wl.Path(w.file), n: -1, size: wl.Size}
	if w.plan.Span <= 0 {
		w.file = (w.file + 1) % wl.Count
		return s
	}
	s.off, s.n = w.off, min(w.plan.Span, wl.Size-w.off)
	if w.off += s.n; w.off >= wl.Size {
		w.off = 0
		w.file = (w.file + 1) % wl.Count
	}
	return s
}

func (w *synthWalker) got(step, []byte) error { return nil }
