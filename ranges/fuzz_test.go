package ranges

import (
	"cmp"
	"math"
	"math/big"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.header, tt.size, tt.max)
	}
	// Small shapes around the stored-span limit (8*max with max 1), for
	// the mutator to work on: 9 stored, 8 stored then a merge into the
	// last, merges into a span grown by earlier merges, and unsatisfiable
	// or empty specs between stored ones.
	f.Add("bytes=0-0,2-2,4-4,6-6,8-8,10-10,12-12,14-14,16-16,0-", int64(20), 1)
	f.Add("bytes=0-0,2-2,0-0,2-2,0-0,2-2,0-0,2-2,1-1", int64(10), 1)
	f.Add("bytes=4-4,6-6,5-5,8-8,3-3,0-0,2-2,9-9,1-1,7-7", int64(10), 1)
	f.Add("bytes=0-0,20-,2-2,,-0,4-4,20-,6-6,8-8,-1", int64(10), 1)
	f.Add("bytes=-1,0-0,-2,1-1,-3,2-2,-4,3-3,-5,4-4", int64(10), 1)
	f.Fuzz(func(t *testing.T, header string, size int64, max int) {
		got, err := Parse(header, size, max)
		checkParse(t, header, size, max, got, err)

		want, wantErr := referenceParse(header, size, max)
		if !slices.Equal(got, want) || err != wantErr {
			t.Fatalf("Parse(%q, %d, %d) = %v, %v; reference says %v, %v", header, size, max, got, err, want, wantErr)
		}

		prefix := []Span{{1, 1}}
		into, intoErr := ParseInto(prefix, header, size, max)
		if !slices.Equal(into, append(prefix[:1:1], got...)) || intoErr != err {
			t.Fatalf("ParseInto([%v], %q, %d, %d) = %v, %v; Parse gave %v, %v", prefix[0], header, size, max, into, intoErr, got, err)
		}
	})
}

// checkParse checks the invariants every Parse result keeps.
func checkParse(t *testing.T, header string, size int64, max int, got []Span, err error) {
	t.Helper()
	if err != nil {
		if got != nil || !(err == ErrInvalid || err == ErrUnsatisfiable || err == ErrTooMany) {
			t.Fatalf("Parse(%q, %d, %d) = %v, %v; want nil and a sentinel", header, size, max, got, err)
		}
		return
	}
	if max <= 0 {
		max = DefaultMaxRanges
	}
	if len(got) == 0 || len(got) > max {
		t.Fatalf("Parse(%q, %d, %d) = %d spans, want 1..%d", header, size, max, len(got), max)
	}
	sorted := slices.Clone(got)
	slices.SortFunc(sorted, func(a, b Span) int { return cmp.Compare(a.Start, b.Start) })
	var total int64
	for i, sp := range sorted {
		if sp.Start < 0 || sp.Length <= 0 || sp.Start > size-sp.Length {
			t.Fatalf("Parse(%q, %d, %d): span %v outside [0, %d)", header, size, max, sp, size)
		}
		if i > 0 && sorted[i-1].End() >= sp.Start {
			t.Fatalf("Parse(%q, %d, %d): spans %v and %v overlap or touch", header, size, max, sorted[i-1], sp)
		}
		total += sp.Length
	}
	if total > size {
		t.Fatalf("Parse(%q, %d, %d): %d bytes in total, more than the size", header, size, max, total)
	}
}

var specRE = regexp.MustCompile(`^([0-9]*)-([0-9]*)$`)

// referenceParse is a slow, independent Parse: arbitrary-precision numbers,
// and coalescing by merging each new span into the groups it touches, which
// keeps groups in order of their earliest member without any sorting.
//
// The hostile-header limit counts stored spans: a satisfiable spec is
// stored unless it overlaps or touches the last stored span (as grown by
// the specs merged into it so far), in which case it merges into that span
// and is free. Unsatisfiable and empty specs are never stored. More than
// 8*max stored spans is ErrTooMany at once, before later specs are read.
func referenceParse(header string, size int64, maxSpans int) ([]Span, error) {
	if maxSpans <= 0 {
		maxSpans = DefaultMaxRanges
	}
	h := strings.Trim(header, " \t")
	if size < 0 || len(h) < 6 || strings.ToLower(h[:6]) != "bytes=" {
		return nil, ErrInvalid
	}
	limit := maxSpans * 8
	if maxSpans > math.MaxInt/8 {
		limit = math.MaxInt
	}
	var spans []Span
	var last Span // the last stored span, grown by what merged into it
	count, stored, empty := 0, 0, false
	for _, elem := range strings.Split(h[6:], ",") {
		elem = strings.Trim(elem, " \t")
		if elem == "" {
			continue
		}
		count++
		sp, ok, emptyOnly, err := referenceSpec(elem, size)
		if err != nil {
			return nil, err
		}
		empty = empty || emptyOnly
		if !ok {
			continue
		}
		spans = append(spans, sp)
		if stored > 0 && sp.Start <= last.End() && last.Start <= sp.End() {
			lo, hi := min(last.Start, sp.Start), max(last.End(), sp.End())
			last = Span{Start: lo, Length: hi - lo}
			continue
		}
		if stored++; stored > limit {
			return nil, ErrTooMany
		}
		last = sp
	}
	switch {
	case count == 0:
		return nil, ErrInvalid
	case len(spans) == 0 && empty:
		return nil, ErrInvalid
	case len(spans) == 0:
		return nil, ErrUnsatisfiable
	}
	var groups []Span
	for _, sp := range spans {
		at := -1
		for i := 0; i < len(groups); i++ {
			g := groups[i]
			if g.Start > sp.End() || sp.Start > g.End() {
				continue
			}
			lo, hi := min(g.Start, sp.Start), max(g.End(), sp.End())
			sp = Span{Start: lo, Length: hi - lo}
			if at < 0 {
				at = i
				continue
			}
			groups = slices.Delete(groups, i, i+1)
			i--
		}
		if at < 0 {
			groups = append(groups, sp)
		} else {
			groups[at] = sp
		}
	}
	if len(groups) > maxSpans {
		return nil, ErrTooMany
	}
	return groups, nil
}

// referenceSpec resolves one range-spec with big integers.
func referenceSpec(elem string, size int64) (sp Span, ok, emptyOnly bool, err error) {
	m := specRE.FindStringSubmatch(elem)
	if m == nil || m[1] == "" && m[2] == "" {
		return Span{}, false, false, ErrInvalid
	}
	sz := big.NewInt(size)
	if m[1] == "" { // suffix-range
		n, _ := new(big.Int).SetString(m[2], 10)
		switch {
		case n.Sign() == 0:
			return Span{}, false, false, nil
		case size == 0:
			return Span{}, false, true, nil
		case n.Cmp(sz) > 0:
			n = sz
		}
		return Span{size - n.Int64(), n.Int64()}, true, false, nil
	}
	first, _ := new(big.Int).SetString(m[1], 10)
	last := new(big.Int).Sub(sz, big.NewInt(1))
	if m[2] != "" {
		l, _ := new(big.Int).SetString(m[2], 10)
		if l.Cmp(first) < 0 {
			return Span{}, false, false, ErrInvalid
		}
		if l.Cmp(last) < 0 {
			last = l
		}
	}
	if first.Cmp(sz) >= 0 {
		return Span{}, false, false, nil
	}
	return Span{first.Int64(), last.Int64() - first.Int64() + 1}, true, false, nil
}

func FuzzMultipart(f *testing.F) {
	for _, tt := range parseTests {
		if tt.err == nil && tt.size <= 1<<20 {
			f.Add(tt.header, tt.size, "video/mp4", "0123456789abcdef0123456789abcd")
		}
	}
	f.Add("bytes=0-0,5-9", int64(10), "", "a b:c")
	f.Add("bytes=1-2,-3", int64(100), `video/mp4; codecs="avc1"`, strings.Repeat("z", 70))
	f.Fuzz(func(t *testing.T, header string, size int64, contentType, boundary string) {
		spans, err := Parse(header, size, 0)
		if err != nil {
			return
		}
		if !validBoundary(boundary) {
			boundary = "fallback"
		}
		if hasCTL(contentType) {
			contentType = "video/mp4"
		}
		m := NewMultipart(boundary, contentType, size, spans)
		if m.Parts() != len(spans) {
			t.Fatalf("Parts() = %d, want %d", m.Parts(), len(spans))
		}
		produced := int64(len(m.Trailer()))
		for i := range m.Parts() {
			if m.Span(i) != spans[i] {
				t.Fatalf("Span(%d) = %v, want %v", i, m.Span(i), spans[i])
			}
			produced += int64(len(m.PartHeader(i))) + m.Span(i).Length
		}
		if m.Len() != produced {
			t.Fatalf("Len() = %d, framing and spans make %d", m.Len(), produced)
		}
		if m.Len() > 1<<16 {
			return // counted above; too big to write on every input
		}
		if err := readBack(m, boundary, contentType, size, spans); err != nil {
			t.Fatalf("NewMultipart(%q, %q, %d, %v): %v", boundary, contentType, size, spans, err)
		}
	})
}
