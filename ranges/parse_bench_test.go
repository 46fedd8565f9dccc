package ranges

import (
	"fmt"
	"strings"
	"testing"
)

// allocTests are the hot-path shapes with their allocation budgets for
// ParseInto into a buffer with room.
var allocTests = []struct {
	name   string
	header string
	budget float64
}{
	{"single range", "bytes=1048576-1310719", 0},
	{"open range", "bytes=0-", 0},
	{"suffix", "bytes=-500", 0},
	{"ascending ranges", "bytes=0-99,200-299,400-499", 0},
	{"unordered overlapping", "bytes=400-499,0-99,50-149,200-299", 0},
	{"unsatisfiable", "bytes=999999999-", 0},
	{"invalid", "bytes=1-0", 0},
}

func TestParseIntoAllocs(t *testing.T) {
	buf := make([]Span, 0, 8)
	for _, tt := range allocTests {
		t.Run(tt.name, func(t *testing.T) {
			got := testing.AllocsPerRun(100, func() {
				_, _ = ParseInto(buf[:0], tt.header, 268435456, 0)
			})
			if got > tt.budget {
				t.Errorf("ParseInto(buf[:0], %q, 268435456, 0) allocates %v times, want at most %v", tt.header, got, tt.budget)
			}
		})
	}
}

// TestParseAllocs: Parse of one range allocates the result slice only.
func TestParseAllocs(t *testing.T) {
	const header = "bytes=1048576-1310719"
	if got := testing.AllocsPerRun(100, func() { _, _ = Parse(header, 268435456, 0) }); got > 1 {
		t.Errorf("Parse(%q, 268435456, 0) allocates %v times, want at most 1", header, got)
	}
}

func BenchmarkParseInto(b *testing.B) {
	benches := []struct{ name, header string }{
		{"single", "bytes=1048576-1310719"},
		{"ascending3", "bytes=0-99,200-299,400-499"},
		{"unordered4", "bytes=400-499,0-99,50-149,200-299"},
		{"hostile512", repeatSpec("0-0", 512)},
		{"hostile2000", repeatSpec("0-0", 2000)},
		{"disjoint513", disjointSpecs(513)},
		{"alternating512", repeatSpec("0-0,2-2", 256)},
		{"descending512", descendingSpecs(512)},
	}
	buf := make([]Span, 0, 8)
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(bb.header)))
			for b.Loop() {
				_, _ = ParseInto(buf[:0], bb.header, 268435456, 0)
			}
		})
	}
}

func BenchmarkParse(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, _ = Parse("bytes=1048576-1310719", 268435456, 0)
	}
}

func BenchmarkNewMultipart(b *testing.B) {
	spans := []Span{{0, 1000}, {5000, 1000}, {100000, 65536}}
	b.ReportAllocs()
	for b.Loop() {
		m := NewMultipart("0123456789abcdef0123456789abcd", "video/mp4", 268435456, spans)
		_ = m.Len()
	}
}

// descendingSpecs returns n disjoint range-specs in descending order, the
// shape that makes Parse store and sort the most.
func descendingSpecs(n int) string {
	specs := make([]string, n)
	for i := range specs {
		specs[i] = fmt.Sprintf("%d-%d", 2*(n-i), 2*(n-i))
	}
	return "bytes=" + strings.Join(specs, ",")
}
