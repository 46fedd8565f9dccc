package verify

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"segorigin/fixtures/synth"
)

func synthBytes(name string, off, n int64) []byte {
	p := make([]byte, n)
	synth.Fill(name, off, p)
	return p
}

func TestBody(t *testing.T) {
	good := synthBytes("seg007.m4s", 1000, 4096)
	flipped := bytes.Clone(good)
	flipped[1234] ^= 0x40
	tests := []struct {
		name    string
		file    string
		off     int64
		body    []byte
		wantBad int64 // -1: no error
	}{
		{"exact span", "seg007.m4s", 1000, good, -1},
		{"empty body", "seg007.m4s", 5, nil, -1},
		{"unaligned start", "seg007.m4s", 1003, good[3:], -1},
		{"one flipped byte", "seg007.m4s", 1000, flipped, 1000 + 1234},
		{"wrong offset", "seg007.m4s", 1008, good, 1008},
		{"wrong name", "seg008.m4s", 1000, good, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Body(tt.file, tt.off, tt.body)
			if tt.wantBad < 0 {
				if err != nil {
					t.Fatalf("Body(%q, %d, %d bytes) = %v, want nil", tt.file, tt.off, len(tt.body), err)
				}
				return
			}
			var m *Mismatch
			if !errors.As(err, &m) || m.Offset != tt.wantBad || m.Name != tt.file {
				t.Fatalf("Body(%q, %d, %d bytes) = %v, want a Mismatch at offset %d", tt.file, tt.off, len(tt.body), err, tt.wantBad)
			}
			if m.Want != synth.ByteAt(tt.file, m.Offset) || m.Got != tt.body[m.Offset-tt.off] {
				t.Errorf("Mismatch got/want = 0x%02x/0x%02x, want 0x%02x/0x%02x", m.Got, m.Want, tt.body[m.Offset-tt.off], synth.ByteAt(tt.file, m.Offset))
			}
		})
	}
}

func TestPlaylist(t *testing.T) {
	const name, size = "p03.m3u8", 1024
	text := synth.Playlist(name, size)
	bad := bytes.Clone(text)
	bad[500] = '!'
	tests := []struct {
		name    string
		off     int64
		body    []byte
		wantBad int64
	}{
		{"whole", 0, text, -1},
		{"tail", 1000, text[1000:], -1},
		{"changed byte", 0, bad, 500},
		{"one byte too many", 0, append(bytes.Clone(text), '\n'), size},
		{"starts past the end", size + 10, []byte("x"), size + 10},
	}
	c := Playlist(name, size)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Check(name, c, tt.off, tt.body)
			var m *Mismatch
			switch {
			case tt.wantBad < 0 && err != nil:
				t.Fatalf("Check(%q, %d) = %v, want nil", name, tt.off, err)
			case tt.wantBad >= 0 && (!errors.As(err, &m) || m.Offset != tt.wantBad):
				t.Fatalf("Check(%q, %d) = %v, want a Mismatch at %d", name, tt.off, err, tt.wantBad)
			}
		})
	}
}

func TestSynthFor(t *testing.T) {
	if _, ok := SynthFor("p00.m3u8", 1024).(playlist); !ok {
		t.Errorf("SynthFor(p00.m3u8) is not playlist content")
	}
	if _, ok := SynthFor("seg000.m4s", 1024).(Synth); !ok {
		t.Errorf("SynthFor(seg000.m4s) is not synth content")
	}
}

func TestFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "part0001.m4s")
	if err := synth.WriteFile(p, "part0001.m4s", 200000); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c := File{R: f}
	body := synthBytes("part0001.m4s", 100, 150000) // spans several fileChunks
	if err := Check("part0001.m4s", c, 100, body); err != nil {
		t.Fatalf("Check(file, 100, %d bytes) = %v, want nil", len(body), err)
	}
	body[99999] ^= 1
	var m *Mismatch
	if err := Check("part0001.m4s", c, 100, body); !errors.As(err, &m) || m.Offset != 100+99999 {
		t.Fatalf("Check(file, changed byte) = %v, want a Mismatch at %d", err, 100+99999)
	}
	tail := synthBytes("part0001.m4s", 199990, 20) // 10 bytes past the end
	if err := Check("part0001.m4s", c, 199990, tail); !errors.As(err, &m) || m.Offset != 200000 || m.WantKnown {
		t.Fatalf("Check(file, past the end) = %v, want a Mismatch at 200000 past the end", err)
	}
}

func TestWriter(t *testing.T) {
	const name = "big.mp4"
	const off, n = 256 << 10, 256 << 10
	body := synthBytes(name, off, n)

	t.Run("streamed in odd pieces", func(t *testing.T) {
		w := NewWriter(name, Synth(name), off, n)
		if _, err := io.CopyBuffer(w, bytes.NewReader(body), make([]byte, 4093)); err != nil {
			t.Fatalf("copy: %v", err)
		}
		if err := w.Close(); err != nil || w.Written() != n {
			t.Fatalf("Close() = %v after %d bytes, want nil after %d", err, w.Written(), n)
		}
	})
	t.Run("short body", func(t *testing.T) {
		w := NewWriter(name, Synth(name), off, n)
		w.Write(body[:n-1])
		var le *LengthError
		if err := w.Close(); !errors.As(err, &le) || le.Got != n-1 || le.Want != n {
			t.Fatalf("Close() = %v, want LengthError %d of %d", err, n-1, n)
		}
	})
	t.Run("long body", func(t *testing.T) {
		w := NewWriter(name, Synth(name), off, n-8)
		var le *LengthError
		if _, err := w.Write(body); !errors.As(err, &le) {
			t.Fatalf("Write(%d bytes into %d) = %v, want LengthError", n, n-8, err)
		}
	})
	t.Run("mismatch is sticky", func(t *testing.T) {
		bad := bytes.Clone(body)
		bad[7000] ^= 0xff
		w := NewWriter(name, Synth(name), off, -1)
		w.Write(bad[:5000])
		_, err := w.Write(bad[5000:])
		var m *Mismatch
		if !errors.As(err, &m) || m.Offset != off+7000 {
			t.Fatalf("Write = %v, want Mismatch at %d", err, off+7000)
		}
		if _, err2 := w.Write(body[:1]); err2 != err {
			t.Fatalf("Write after a mismatch = %v, want the first error %v", err2, err)
		}
		if err3 := w.Close(); err3 != err {
			t.Fatalf("Close = %v, want the first error %v", err3, err)
		}
	})
}

func TestParseContentRange(t *testing.T) {
	tests := []struct {
		in                string
		first, last, size int64
		ok                bool
	}{
		{"bytes 0-1/2", 0, 1, 2, true},
		{"bytes 262144-524287/268435456", 262144, 524287, 268435456, true},
		{"bytes 5-5/*", 5, 5, -1, true},
		{"bytes 5-4/10", 0, 0, 0, false},  // last < first
		{"bytes 0-9/10 ", 0, 0, 0, false}, // trailing space
		{"bytes 0-10/10", 0, 0, 0, false}, // last past the end
		{"bytes */10", 0, 0, 0, false},    // unsatisfied form
		{"bytes=0-1/2", 0, 0, 0, false},
		{"items 0-1/2", 0, 0, 0, false},
		{"bytes -1-2/5", 0, 0, 0, false},
		{"", 0, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			first, last, size, err := ParseContentRange(tt.in)
			if !tt.ok {
				if !errors.Is(err, ErrBadContentRange) {
					t.Fatalf("ParseContentRange(%q) = %d, %d, %d, %v, want ErrBadContentRange", tt.in, first, last, size, err)
				}
				return
			}
			if err != nil || first != tt.first || last != tt.last || size != tt.size {
				t.Fatalf("ParseContentRange(%q) = %d, %d, %d, %v, want %d, %d, %d, nil", tt.in, first, last, size, err, tt.first, tt.last, tt.size)
			}
		})
	}
}

func TestContentRange(t *testing.T) {
	tests := []struct {
		name         string
		header       string
		off, n, size int64
		wantSize     int64
		wantErr      bool
		wantRangeErr bool
	}{
		{"match", "bytes 100-199/1000", 100, 100, 1000, 1000, false, false},
		{"any size", "bytes 100-199/1000", 100, 100, -1, 1000, false, false},
		{"off by one last", "bytes 100-200/1000", 100, 100, 1000, 1000, true, true},
		{"wrong first", "bytes 0-99/1000", 100, 100, 1000, 1000, true, true},
		{"wrong size", "bytes 100-199/999", 100, 100, 1000, 999, true, true},
		{"malformed", "bytes 100-199", 100, 100, 1000, 0, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			size, err := ContentRange(tt.header, tt.off, tt.n, tt.size)
			var cre *ContentRangeError
			if (err != nil) != tt.wantErr || errors.As(err, &cre) != tt.wantRangeErr || size != tt.wantSize {
				t.Fatalf("ContentRange(%q, %d, %d, %d) = %d, %v; want size %d, error %v (Content-Range mismatch %v)",
					tt.header, tt.off, tt.n, tt.size, size, err, tt.wantSize, tt.wantErr, tt.wantRangeErr)
			}
		})
	}
}

func TestName(t *testing.T) {
	tests := map[string]string{
		"/w1/seg001.m4s":       "seg001.m4s",
		"/w4/p01.m3u8?x=1":     "p01.m3u8",
		"/t/tok/w2/big.mp4#ff": "big.mp4",
		"big.mp4":              "big.mp4",
	}
	for in, want := range tests {
		if got := Name(in); got != want {
			t.Errorf("Name(%q) = %q, want %q", in, got, want)
		}
	}
}
