package ranges

import (
	"cmp"
	"slices"
)

// coalesce merges the spans of s that overlap or touch, in place, and
// returns how many remain in s[:n]. Each merged span takes the position of
// its earliest member, so the order of the range-specs is kept "excluding
// those ranges that were deemed unsatisfiable or that were coalesced into
// other ranges" (RFC 9110 §15.3.7.2). More than max results is ErrTooMany.
func coalesce(s []Span, max int) (n int, err error) {
	if disjointAscending(s) {
		// The common shapes: one span, or a well-behaved client's
		// ascending list. Nothing to merge, nothing to allocate.
		if len(s) > max {
			return 0, ErrTooMany
		}
		return len(s), nil
	}
	return coalesceSorted(s, max)
}

// disjointAscending reports whether each span of s ends strictly before
// the next one starts: sorted, with gaps between them.
func disjointAscending(s []Span) bool {
	for i := 1; i < len(s); i++ {
		if s[i-1].End() >= s[i].Start {
			return false
		}
	}
	return true
}

// positioned is a span and the index of the earliest range-spec it covers.
type positioned struct {
	span Span
	pos  int
}

// coalesceSorted is the general case: sort by start, merge runs whose next
// start is at or before the current end, then restore header order by each
// group's earliest member. len(s) is bounded by the limit on stored
// spans (rawFactor*max), so the sort is bounded too.
func coalesceSorted(s []Span, max int) (int, error) {
	var stack [16]positioned // enough for most multi-range requests
	ps := stack[:0]
	if len(s) > len(stack) {
		ps = make([]positioned, 0, len(s))
	}
	for i, sp := range s {
		ps = append(ps, positioned{span: sp, pos: i})
	}
	slices.SortFunc(ps, func(a, b positioned) int {
		return cmp.Compare(a.span.Start, b.span.Start)
	})
	out := ps[:0] // merges in place: out never overtakes the read index
	for _, p := range ps {
		if len(out) > 0 {
			last := &out[len(out)-1]
			if last.span.End() >= p.span.Start {
				if end := p.span.End(); end > last.span.End() {
					last.span.Length = end - last.span.Start
				}
				last.pos = min(last.pos, p.pos) // equal starts sort in any order
				continue
			}
		}
		out = append(out, p)
	}
	if len(out) > max {
		return 0, ErrTooMany
	}
	slices.SortFunc(out, func(a, b positioned) int { return cmp.Compare(a.pos, b.pos) })
	for i, p := range out {
		s[i] = p.span
	}
	return len(out), nil
}
