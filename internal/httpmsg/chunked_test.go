package httpmsg

import (
	"errors"
	"testing"
)

var chunkedTests = []struct {
	name string
	raw  string
	n    int   // the body's length when whole
	err  error // or its error
}{
	{"one chunk", "5\r\nhello\r\n0\r\n\r\n", 15, nil},
	{"last chunk only", "0\r\n\r\n", 5, nil},
	{"bytes of the next request after it", "0\r\n\r\nGET / HTTP/1.1\r\n", 5, nil},
	{"two chunks", "3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n", 20, nil},
	{"upper-case hex", "A\r\n0123456789\r\n0\r\n\r\n", 20, nil},
	{"extension", "5;name=val\r\nhello\r\n0\r\n\r\n", 24, nil},
	{"quoted extension", "5;name=\"a \\\" b\"\r\nhello\r\n0\r\n\r\n", 29, nil},
	{"BWS around ; and = (RFC 9112 §7.1.1)", "5 ; name = val\r\nhello\r\n0\r\n\r\n", 28, nil},
	{"zero-padded 17-digit size", "00000000000000005\r\nhello\r\n0\r\n\r\n", 31, nil},
	{"extension on the last chunk", "0;x\r\n\r\n", 7, nil},
	{"trailer", "0\r\nX-T: 1\r\n\r\n", 13, nil},
	{"two trailers", "0\r\nA: 1\r\nB:\r\n\r\n", 15, nil},
	{"no size", "\r\nhello\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"not hex", "g\r\nhello\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"space after the size, no extension", "5 \r\nhello\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"extension without a name", "2;\r\nhi\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"bare LF after the size", "5\nhello\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"data longer than its size", "3\r\nhello\r\n0\r\n\r\n", 0, ErrBadChunk},
	{"bare LF after the data", "5\r\nhello\n0\r\n\r\n", 0, ErrBadChunk},
	{"size past 15 hex digits", "1000000000000000\r\n", 0, ErrBadChunk},
	{"trailer without a colon", "0\r\nX-T 1\r\n\r\n", 0, ErrBadChunk},
	{"trailer with a bare CR", "0\r\nX: a\rb\r\n\r\n", 0, ErrBadChunk},
	{"end of trailers with a bare LF", "0\r\n\n", 0, ErrBadChunk},
	{"data over the limit", "10001\r\n", 0, ErrBodyTooLarge},
}

func TestScanChunked(t *testing.T) {
	for _, tt := range chunkedTests {
		t.Run(tt.name, func(t *testing.T) {
			n, err := ScanChunked([]byte(tt.raw), 64<<10, 1<<20)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("ScanChunked(%q) = %d, %v, want %v", tt.raw, n, err, tt.err)
				}
				return
			}
			if err != nil || n != tt.n {
				t.Fatalf("ScanChunked(%q) = %d, %v, want %d", tt.raw, n, err, tt.n)
			}
			// Every prefix of a valid body is incomplete, never wrong.
			for i := range n {
				if _, err := ScanChunked([]byte(tt.raw[:i]), 64<<10, 1<<20); !errors.Is(err, ErrIncomplete) {
					t.Fatalf("ScanChunked(%q) (a prefix) = %v, want ErrIncomplete", tt.raw[:i], err)
				}
			}
		})
	}
}

func TestScanChunkedEncodedLimit(t *testing.T) {
	// 1-byte chunks cost 6 bytes each: the encoded bound stops them
	// before the data bound would.
	var b []byte
	for range 100 {
		b = append(b, "1\r\nx\r\n"...)
	}
	if _, err := ScanChunked(b, 1000, 300); !errors.Is(err, ErrBodyTooLarge) {
		t.Fatalf("ScanChunked(100 one-byte chunks, encoded limit 300) = %v, want ErrBodyTooLarge", err)
	}
	if _, err := ScanChunked(b, 1000, 1000); !errors.Is(err, ErrIncomplete) {
		t.Fatalf("ScanChunked(100 one-byte chunks, no last chunk) = %v, want ErrIncomplete", err)
	}
}

// FuzzScanChunked: on any input, a complete answer lies within the input
// and is stable when more bytes follow; an incomplete one stays
// incomplete or becomes complete, never malformed, for every prefix.
func FuzzScanChunked(f *testing.F) {
	for _, tt := range chunkedTests {
		f.Add([]byte(tt.raw))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := ScanChunked(b, 64<<10, 1<<20)
		if err == nil {
			if n <= 0 || n > len(b) {
				t.Fatalf("ScanChunked(%q) = %d outside the input", b, n)
			}
			if m, err := ScanChunked(append(b[:n:n], "junk"...), 64<<10, 1<<20); err != nil || m != n {
				t.Fatalf("ScanChunked(%q + junk) = %d, %v, want %d", b[:n], m, err, n)
			}
			for i := range n {
				if _, err := ScanChunked(b[:i], 64<<10, 1<<20); !errors.Is(err, ErrIncomplete) {
					t.Fatalf("ScanChunked(%q), a prefix of a complete body, = %v, want ErrIncomplete", b[:i], err)
				}
			}
			return
		}
		if !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrBadChunk) && !errors.Is(err, ErrBodyTooLarge) {
			t.Fatalf("ScanChunked(%q) = %v: not one of the three errors", b, err)
		}
	})
}

// FuzzScanChunkedFrom: a scan resumed at the progress a prefix reported
// answers as a scan from the start does, for every split.
func FuzzScanChunkedFrom(f *testing.F) {
	for _, tt := range chunkedTests {
		f.Add([]byte(tt.raw), uint16(3))
	}
	f.Fuzz(func(t *testing.T, b []byte, split uint16) {
		at := int(split) % (len(b) + 1)
		_, p, err := ScanChunkedFrom(b[:at], ChunkedProgress{}, 64<<10, 1<<20)
		if !errors.Is(err, ErrIncomplete) {
			return
		}
		if p.Off > at || p.Data < 0 {
			t.Fatalf("progress %+v past the %d bytes scanned", p, at)
		}
		n1, _, err1 := ScanChunkedFrom(b, p, 64<<10, 1<<20)
		n2, err2 := ScanChunked(b, 64<<10, 1<<20)
		if n1 != n2 || (err1 == nil) != (err2 == nil) || errors.Is(err1, ErrIncomplete) != errors.Is(err2, ErrIncomplete) {
			t.Fatalf("resumed at %+v: %d, %v; from the start: %d, %v", p, n1, err1, n2, err2)
		}
	})
}
