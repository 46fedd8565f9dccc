package coding

import "testing"

// gzipCases decide by RFC 9110 §12.5.3 (Accept-Encoding), §12.4.2 (qvalue)
// and §8.4.1.3 (x-gzip).
var gzipCases = []struct {
	name  string
	lines []string
	want  bool
}{
	{"no field", nil, false},
	{"empty field: identity only", []string{""}, false},
	{"gzip", []string{"gzip"}, true},
	{"browser list", []string{"gzip, deflate, br, zstd"}, true},
	{"case", []string{"GZip"}, true},
	{"x-gzip", []string{"x-gzip"}, true},
	{"br only", []string{"br"}, false},
	{"gzip;q=0 refuses", []string{"gzip;q=0"}, false},
	{"gzip;q=0.000 refuses", []string{"gzip;q=0.000"}, false},
	{"gzip;q=0.001", []string{"gzip;q=0.001"}, true},
	{"spaces around q", []string{"gzip ; q=0.5"}, true},
	{"Q upper case", []string{"gzip;Q=0"}, false},
	{"star", []string{"*"}, true},
	{"star;q=0", []string{"*;q=0"}, false},
	{"star;q=0 but gzip named", []string{"gzip, *;q=0"}, true},
	{"gzip;q=0 beside star", []string{"gzip;q=0, *"}, false},
	{"identity preferred", []string{"gzip;q=0.5, identity;q=1"}, false},
	{"gzip preferred", []string{"gzip;q=1, identity;q=0.5"}, true},
	{"equal weights: gzip", []string{"gzip;q=0.8, identity;q=0.8"}, true},
	{"identity;q=0 with gzip", []string{"identity;q=0, gzip"}, true},
	{"two lines", []string{"br", "gzip"}, true},
	{"q over 1 ignored", []string{"gzip;q=2"}, false},
	{"q 1.5 ignored", []string{"gzip;q=1.5"}, false},
	{"q 1.000", []string{"gzip;q=1.000"}, true},
	{"q four decimals ignored", []string{"gzip;q=0.5000"}, false},
	{"q empty ignored", []string{"gzip;q="}, false},
	{"q junk ignored", []string{"gzip;q=abc"}, false},
	{"other parameter", []string{"gzip;level=9"}, true},
	{"empty elements", []string{", ,gzip,"}, true},
	{"gzip2 is another coding", []string{"gzip2"}, false},
	{"gzip named twice keeps the highest", []string{"gzip;q=0, gzip;q=0.5"}, true},
}

func TestGzip(t *testing.T) {
	for _, c := range gzipCases {
		t.Run(c.name, func(t *testing.T) {
			var lines [][]byte
			for _, l := range c.lines {
				lines = append(lines, []byte(l))
			}
			if got := Gzip(lines); got != c.want {
				t.Errorf("Gzip(%q) = %v, want %v", c.lines, got, c.want)
			}
		})
	}
}

func TestGzipAllocs(t *testing.T) {
	lines := [][]byte{[]byte("gzip, deflate, br;q=0.9, *;q=0.1")}
	if n := testing.AllocsPerRun(100, func() { Gzip(lines) }); n != 0 {
		t.Errorf("Gzip allocates %v times, want 0", n)
	}
}
