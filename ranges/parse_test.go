package ranges

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

const huge = "99999999999999999999" // > math.MaxInt64

// repeatSpec returns "bytes=" and n copies of spec, comma-separated.
func repeatSpec(spec string, n int) string {
	return "bytes=" + strings.Repeat(spec+",", n-1) + spec
}

// disjointSpecs returns "bytes=0-0,2-2,4-4,..." with n range-specs.
func disjointSpecs(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%d-%d", 2*i, 2*i)
	}
	return "bytes=" + strings.Join(specs, ",")
}

// chainedSpecs returns "bytes=0-1,1-2,2-3,..." with n range-specs, each
// overlapping the one before it.
func chainedSpecs(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%d-%d", i, i+1)
	}
	return "bytes=" + strings.Join(specs, ",")
}

// apacheKiller returns the shape of CVE-2011-3192: "bytes=0-,5-1,5-2,...",
// here with valid specs "bytes=0-,5-6,...,5-(n+5)".
func apacheKiller(n int) string {
	var b strings.Builder
	b.WriteString("bytes=0-")
	for i := range n {
		fmt.Fprintf(&b, ",5-%d", i+6)
	}
	return b.String()
}

type parseTest struct {
	name   string
	header string
	size   int64
	max    int
	want   []Span
	err    error
}

// parseTests is the table for Parse and the seed corpus of FuzzParse.
var parseTests = []parseTest{
	// The three forms (RFC 9110 §14.1.2 examples, on a 10000-byte file).
	{"first 500 bytes", "bytes=0-499", 10000, 0, []Span{{0, 500}}, nil},
	{"second 500 bytes", "bytes=500-999", 10000, 0, []Span{{500, 500}}, nil},
	{"final 500 bytes suffix", "bytes=-500", 10000, 0, []Span{{9500, 500}}, nil},
	{"final 500 bytes open", "bytes=9500-", 10000, 0, []Span{{9500, 500}}, nil},
	{"first and last byte", "bytes=0-0,-1", 10000, 0, []Span{{0, 1}, {9999, 1}}, nil},
	{"safari probe", "bytes=0-1", 10000, 0, []Span{{0, 2}}, nil},
	{"ffmpeg whole", "bytes=0-", 10000, 0, []Span{{0, 10000}}, nil},
	{"last-pos is last byte", "bytes=0-9999", 10000, 0, []Span{{0, 10000}}, nil},
	{"leading zeros", "bytes=000-001", 10000, 0, []Span{{0, 2}}, nil},

	// Unit and whitespace.
	{"unit capitalised", "Bytes=0-1", 10, 0, []Span{{0, 2}}, nil},
	{"unit upper case", "BYTES=0-1", 10, 0, []Span{{0, 2}}, nil},
	{"other unit", "items=0-1", 10, 0, nil, ErrInvalid},
	{"unit with suffix", "bytesx=0-1", 10, 0, nil, ErrInvalid},
	{"no equals", "bytes 0-1", 10, 0, nil, ErrInvalid},
	{"unit only", "bytes", 10, 0, nil, ErrInvalid},
	{"empty value", "", 10, 0, nil, ErrInvalid},
	{"space before equals", "bytes =0-1", 10, 0, nil, ErrInvalid},
	{"space after equals", "bytes= 0-1", 10, 0, []Span{{0, 2}}, nil}, // erratum 7306
	{"RFC example with spaces", "bytes= 0-999, 4500-5499, -1000", 10000, 0,
		[]Span{{0, 1000}, {4500, 1000}, {9000, 1000}}, nil},
	{"value padded", " \tbytes=0-1\t ", 10, 0, []Span{{0, 2}}, nil},
	{"OWS around commas", "bytes=0-1 , 4-5\t,\t8-9", 10, 0, []Span{{0, 2}, {4, 2}, {8, 2}}, nil},

	// List rule: empty elements ignored, but one range-spec required.
	{"empty element", "bytes=0-1,,4-5", 10, 0, []Span{{0, 2}, {4, 2}}, nil},
	{"leading and trailing commas", "bytes=,0-1,", 10, 0, []Span{{0, 2}}, nil},
	{"empty set", "bytes=", 10, 0, nil, ErrInvalid},
	{"only comma", "bytes=,", 10, 0, nil, ErrInvalid},
	{"only commas and spaces", "bytes= , ,\t", 10, 0, nil, ErrInvalid},

	// Malformed range-specs invalidate the whole value.
	{"last before first", "bytes=1-0", 10, 0, nil, ErrInvalid},
	{"one bad of two", "bytes=0-1,5-4", 10, 0, nil, ErrInvalid},
	{"bad after unsatisfiable", "bytes=20-,x", 10, 0, nil, ErrInvalid},
	{"dash only", "bytes=-", 10, 0, nil, ErrInvalid},
	{"negative suffix", "bytes=--1", 10, 0, nil, ErrInvalid},
	{"plus sign", "bytes=+1-2", 10, 0, nil, ErrInvalid},
	{"plus sign last", "bytes=1-+2", 10, 0, nil, ErrInvalid},
	{"hex", "bytes=0x10-0x20", 100, 0, nil, ErrInvalid},
	{"space before dash", "bytes=1 -2", 10, 0, nil, ErrInvalid}, // net/http accepts
	{"space after dash", "bytes=1- 2", 10, 0, nil, ErrInvalid},  // net/http accepts
	{"space inside number", "bytes=1 2-3", 100, 0, nil, ErrInvalid},
	{"two dashes", "bytes=1-2-3", 10, 0, nil, ErrInvalid},
	{"suffix then dash", "bytes=-1-", 10, 0, nil, ErrInvalid},
	{"decimal point", "bytes=1.5-2", 10, 0, nil, ErrInvalid},
	{"letters", "bytes=a-b", 10, 0, nil, ErrInvalid},
	{"other-range", "bytes=abc", 10, 0, nil, ErrInvalid},
	{"parameter", "bytes=0-1;q=1", 10, 0, nil, ErrInvalid},
	{"non-ASCII digit", "bytes=\u0663-4", 10, 0, nil, ErrInvalid},

	// Satisfiability (RFC 9110 §14.1.2).
	{"first-pos at size", "bytes=10000-", 10000, 0, nil, ErrUnsatisfiable},
	{"first-pos past size", "bytes=10000-10001", 10000, 0, nil, ErrUnsatisfiable},
	{"suffix zero", "bytes=-0", 10000, 0, nil, ErrUnsatisfiable},
	{"last-pos clamps", "bytes=500-20000", 10000, 0, []Span{{500, 9500}}, nil},
	{"suffix longer than size", "bytes=-20000", 10000, 0, []Span{{0, 10000}}, nil},
	{"unsatisfiable dropped", "bytes=20000-,0-1", 10000, 0, []Span{{0, 2}}, nil},
	{"suffix zero dropped", "bytes=-0,5-9", 10000, 0, []Span{{5, 5}}, nil},
	{"size one", "bytes=0-0", 1, 0, []Span{{0, 1}}, nil},
	{"size one past end", "bytes=1-", 1, 0, nil, ErrUnsatisfiable},
	{"size one suffix", "bytes=-1", 1, 0, []Span{{0, 1}}, nil},
	{"empty file first-pos", "bytes=0-", 0, 0, nil, ErrUnsatisfiable},
	{"empty file first byte", "bytes=0-0", 0, 0, nil, ErrUnsatisfiable},
	{"empty file suffix zero", "bytes=-0", 0, 0, nil, ErrUnsatisfiable},
	// "When a selected representation has zero length, the only
	// satisfiable form of range-spec is a suffix-range with a non-zero
	// suffix-length": not 416, and no 206 can carry it, so ignore Range.
	{"empty file suffix", "bytes=-1", 0, 0, nil, ErrInvalid},
	{"empty file suffix among others", "bytes=0-0,-5", 0, 0, nil, ErrInvalid},
	{"empty file malformed", "bytes=x", 0, 0, nil, ErrInvalid},
	{"unknown size", "bytes=0-1", -1, 0, nil, ErrInvalid},

	// Numerals past int64 saturate instead of failing (§14.1.2).
	{"huge first-pos", "bytes=" + huge + "-", 10000, 0, nil, ErrUnsatisfiable},
	{"huge last-pos", "bytes=5-" + huge, 10000, 0, []Span{{5, 9995}}, nil},
	{"huge suffix", "bytes=-" + huge, 10000, 0, []Span{{0, 10000}}, nil},
	{"huge both equal", "bytes=00" + huge + "-" + huge, 10000, 0, nil, ErrUnsatisfiable},
	{"huge last before first", "bytes=" + huge + "-" + huge[1:] + "8", 10000, 0, nil, ErrInvalid},
	{"huge first small last", "bytes=" + huge + "-5", 10000, 0, nil, ErrInvalid},
	{"max int64 first-pos", "bytes=9223372036854775807-", 10000, 0, nil, ErrUnsatisfiable},
	{"max int64 last-pos", "bytes=0-9223372036854775807", 10000, 0, []Span{{0, 10000}}, nil},
	{"max size last byte", "bytes=9223372036854775806-", math.MaxInt64, 0, []Span{{math.MaxInt64 - 1, 1}}, nil},
	{"max size whole", "bytes=0-", math.MaxInt64, 0, []Span{{0, math.MaxInt64}}, nil},
	{"max size huge suffix", "bytes=-" + huge, math.MaxInt64, 0, []Span{{0, math.MaxInt64}}, nil},
	{"max size huge first", "bytes=" + huge + "-", math.MaxInt64, 0, nil, ErrUnsatisfiable},

	// Coalescing overlapping or adjacent spans; order of first appearance.
	{"overlap", "bytes=0-499,400-999", 10000, 0, []Span{{0, 1000}}, nil},
	{"adjacent", "bytes=0-499,500-999", 10000, 0, []Span{{0, 1000}}, nil},
	{"gap of one kept", "bytes=0-499,501-999", 10000, 0, []Span{{0, 500}, {501, 499}}, nil},
	{"contained", "bytes=0-999,100-199", 10000, 0, []Span{{0, 1000}}, nil},
	{"duplicates", "bytes=0-0,0-0,0-0", 10000, 0, []Span{{0, 1}}, nil},
	{"descending kept", "bytes=500-599,0-99", 10000, 0, []Span{{500, 100}, {0, 100}}, nil},
	{"chain", "bytes=0-1,4-5,2-3", 10, 0, []Span{{0, 6}}, nil},
	{"suffix overlaps open", "bytes=9000-,-500", 10000, 0, []Span{{9000, 1000}}, nil},
	{"group at earliest member", "bytes=500-599,0-99,550-649,200-299", 10000, 0,
		[]Span{{500, 150}, {0, 100}, {200, 100}}, nil},
	{"group at earliest, not lowest", "bytes=90-99,40-49,0-9,5-44", 100, 0,
		[]Span{{90, 10}, {0, 50}}, nil},
	// net/http's ServeContent answers 2000 copies of 0-0 with 2000 parts
	// (more bytes than the file); here each copy merges into the span
	// before it on the spot, is never stored, and so never counts toward
	// the 8*max limit: 2000 copies give one byte, as 500 do.
	{"apache killer", apacheKiller(400), 10000, 0, []Span{{0, 10000}}, nil},
	{"apache killer long", apacheKiller(2000), 10000, 0, []Span{{0, 10000}}, nil},
	{"500 copies coalesce", repeatSpec("0-0", 500), 100000, 0, []Span{{0, 1}}, nil},
	{"2000 copies coalesce", repeatSpec("0-0", 2000), 100000, 0, []Span{{0, 1}}, nil},
	{"2000 chained overlaps", chainedSpecs(2000), 100000, 0, []Span{{0, 2001}}, nil},

	// Caps: max spans after coalescing, 8*max spans stored.
	{"max 2 exceeded", "bytes=0-0,2-2,4-4", 10, 2, nil, ErrTooMany},
	{"max 2 after coalescing", "bytes=0-0,2-2,1-1", 10, 2, []Span{{0, 3}}, nil},
	{"max 1 two spans", "bytes=0-1,3-4", 10, 1, nil, ErrTooMany},
	{"max 2 read 16 specs", repeatSpec("0-0", 16), 10, 2, []Span{{0, 1}}, nil},
	{"max 2 repeats not counted", repeatSpec("0-0", 17), 10, 2, []Span{{0, 1}}, nil},
	{"unsatisfiable specs not counted", repeatSpec("20-", 9), 10, 1, nil, ErrUnsatisfiable},
	{"repeats not counted before later error", repeatSpec("0-0", 9) + ",x", 10, 1, nil, ErrInvalid},
	{"unsatisfiable not counted before later error", repeatSpec("20-", 9) + ",x", 10, 1, nil, ErrInvalid},
	{"unsatisfiable between repeats", repeatSpec("0-0,20-", 9), 10, 1, []Span{{0, 1}}, nil},
	// Only a merge into the span stored just before counts as free:
	// alternating repeats are each stored, though coalescing would leave 2.
	{"max 2 store 16 alternating", repeatSpec("0-0,2-2", 8), 10, 2, []Span{{0, 1}, {2, 1}}, nil},
	{"max 2 store 17 alternating", repeatSpec("0-0,2-2", 8) + ",0-0", 10, 2, nil, ErrTooMany},
	// The stored limit refuses before coalescing: 17 disjoint spans, then
	// one covering them all, would coalesce to 1 span yet are refused.
	{"max 2 store 16 then cover", disjointSpecs(16) + ",0-", 40, 2, []Span{{0, 40}}, nil},
	{"max 2 store 17 then cover", disjointSpecs(17) + ",0-", 40, 2, nil, ErrTooMany},
	{"max 2 disjoint 3", disjointSpecs(3), 40, 2, nil, ErrTooMany},
	{"stored cap before later error", disjointSpecs(17) + ",x", 40, 2, nil, ErrTooMany},
	{"error before stored cap", disjointSpecs(16) + ",x," + disjointSpecs(17)[len("bytes="):], 40, 2, nil, ErrInvalid},
	{"default store 512 then cover", disjointSpecs(512) + ",0-", 2000, 0, []Span{{0, 2000}}, nil},
	{"default store 513 then cover", disjointSpecs(513) + ",0-", 2000, 0, nil, ErrTooMany},
	{"default 2000 disjoint", disjointSpecs(2000), 4000, 0, nil, ErrTooMany},
	{"default 513 disjoint", disjointSpecs(513), 2000, 0, nil, ErrTooMany},
	{"empty elements not counted", "bytes=" + strings.Repeat(",", 100) + "0-0", 10, 1, []Span{{0, 1}}, nil},
	{"default max reached", disjointSpecs(64), 1000, 0, parseWant(64), nil},
	{"default max exceeded", disjointSpecs(65), 1000, 0, nil, ErrTooMany},
	{"negative max is default", disjointSpecs(64), 1000, -1, parseWant(64), nil},
	{"huge max", "bytes=0-0", 10, math.MaxInt, []Span{{0, 1}}, nil},
}

// parseWant is the result of disjointSpecs(n).
func parseWant(n int) []Span {
	spans := make([]Span, n)
	for i := range spans {
		spans[i] = Span{int64(2 * i), 1}
	}
	return spans
}

// short keeps failure messages for long generated headers readable.
func short(s string) string {
	if len(s) > 60 {
		return fmt.Sprintf("%s...(%d bytes)", s[:60], len(s))
	}
	return s
}

func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.header, tt.size, tt.max)
			if !slices.Equal(got, tt.want) || (got == nil) != (tt.want == nil) ||
				!errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("Parse(%q, %d, %d) = %v, %v; want %v, %v",
					short(tt.header), tt.size, tt.max, got, err, tt.want, tt.err)
			}
		})
	}
}

func TestParseInto(t *testing.T) {
	prefix := Span{7, 7}
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			dst := append(make([]Span, 0, 4), prefix)
			got, err := ParseInto(dst, tt.header, tt.size, tt.max)
			want := append([]Span{prefix}, tt.want...)
			if !slices.Equal(got, want) || !errors.Is(err, tt.err) || (err == nil) != (tt.err == nil) {
				t.Errorf("ParseInto([%v], %q, %d, %d) = %v, %v; want %v, %v",
					prefix, short(tt.header), tt.size, tt.max, got, err, want, tt.err)
			}
		})
	}
}

func TestSpanContentRange(t *testing.T) {
	tests := []struct {
		span Span
		size int64
		want string
	}{
		{Span{0, 500}, 1234, "bytes 0-499/1234"},
		{Span{1233, 1}, 1234, "bytes 1233-1233/1234"},
		{Span{0, 1}, 1, "bytes 0-0/1"},
		{Span{0, math.MaxInt64}, math.MaxInt64, "bytes 0-9223372036854775806/9223372036854775807"},
	}
	for _, tt := range tests {
		if got := tt.span.ContentRange(tt.size); got != tt.want {
			t.Errorf("%v.ContentRange(%d) = %q, want %q", tt.span, tt.size, got, tt.want)
		}
		if got, want := tt.span.End(), tt.span.Start+tt.span.Length; got != want {
			t.Errorf("%v.End() = %d, want %d", tt.span, got, want)
		}
	}
	for size, want := range map[int64]string{0: "bytes */0", 1234: "bytes */1234"} {
		if got := UnsatisfiedContentRange(size); got != want {
			t.Errorf("UnsatisfiedContentRange(%d) = %q, want %q", size, got, want)
		}
	}
}

func TestParseDigits(t *testing.T) {
	tests := []struct {
		in       string
		n        int64
		over, ok bool
	}{
		{"", 0, false, false},
		{"0", 0, false, true},
		{"0042", 42, false, true},
		{"9223372036854775807", math.MaxInt64, false, true},
		{"9223372036854775808", math.MaxInt64, true, true},
		{"00009223372036854775807", math.MaxInt64, false, true},
		{huge + huge, math.MaxInt64, true, true},
		{"12a", 0, false, false},
		{"-1", 0, false, false},
	}
	for _, tt := range tests {
		n, over, ok := parseDigits(tt.in)
		if n != tt.n || over != tt.over || ok != tt.ok {
			t.Errorf("parseDigits(%q) = %d, %v, %v; want %d, %v, %v", tt.in, n, over, ok, tt.n, tt.over, tt.ok)
		}
	}
}

func TestLessDecimal(t *testing.T) {
	tests := []struct {
		a, b string
		want bool
	}{
		{"1", "2", true},
		{"2", "1", false},
		{"1", "1", false},
		{"001", "1", false},
		{"0", "000", false},
		{"9", "10", true},
		{"010", "9", false},
		{huge, huge + "0", true},
		{"00" + huge, huge, false},
		{huge[1:] + "8", huge, true},
	}
	for _, tt := range tests {
		if got := lessDecimal(tt.a, tt.b); got != tt.want {
			t.Errorf("lessDecimal(%q, %q) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
