package verify

import (
	"bytes"
	"io"
	"path"
	"strings"

	"segorigin/fixtures/synth"
)

// Content is what a file's bytes should be.
type Content interface {
	// Check compares p with the bytes at file offset off and returns the
	// file offset of the first byte that differs, or -1 if all are equal.
	// Bytes past the end of the content differ.
	Check(off int64, p []byte) (bad int64)
	// Want returns the byte expected at off, for error messages; ok is
	// false past the end of the content or when it cannot be known.
	Want(off int64) (b byte, ok bool)
}

// Synth is the content of a file written by synth.WriteFile under this
// name (a base name such as "seg007.m4s").
type Synth string

// Check implements Content.
func (s Synth) Check(off int64, p []byte) int64 {
	bad, _ := synth.Verify(string(s), off, p)
	return bad
}

// Want implements Content.
func (s Synth) Want(off int64) (byte, bool) { return synth.ByteAt(string(s), off), true }

// playlist is the text of synth.Playlist(name, size).
type playlist []byte

// Playlist returns the content of the synth playlist (workload W4, ARCHITECTURE.md)
// of this name and size.
func Playlist(name string, size int64) Content {
	return playlist(synth.Playlist(name, int(size)))
}

// Check implements Content.
func (p playlist) Check(off int64, b []byte) int64 { return checkBytes(p, off, b) }

// Want implements Content.
func (p playlist) Want(off int64) (byte, bool) {
	if off < 0 || off >= int64(len(p)) {
		return 0, false
	}
	return p[off], true
}

// checkBytes compares b with want[off:] and returns the first differing
// file offset or -1.
func checkBytes(want []byte, off int64, b []byte) int64 {
	if len(b) == 0 {
		return -1
	}
	if off < 0 || off > int64(len(want)) {
		return max(off, 0)
	}
	w := want[off:]
	n := min(len(w), len(b))
	if bytes.Equal(w[:n], b[:n]) {
		if len(b) > n {
			return off + int64(n)
		}
		return -1
	}
	for i := range n {
		if w[i] != b[i] {
			return off + int64(i)
		}
	}
	return -1 // unreachable: bytes.Equal said they differ
}

// File is content read from an io.ReaderAt, typically an *os.File holding
// the same file the server serves (for media that is not synth content).
type File struct {
	R io.ReaderAt
}

// fileChunk bounds the buffer File.Check reads into per call.
const fileChunk = 64 << 10

// Check implements Content.
func (f File) Check(off int64, p []byte) int64 {
	var buf [fileChunk]byte
	for len(p) > 0 {
		n := min(len(p), len(buf))
		got, err := f.R.ReadAt(buf[:n], off)
		if bad := checkBytes(buf[:got], 0, p[:n]); bad >= 0 {
			return off + bad
		}
		if got < n { // checkBytes saw equal bytes, then ran out of file
			return off + int64(got)
		}
		if err != nil && err != io.EOF {
			return off
		}
		p, off = p[n:], off+int64(n)
	}
	return -1
}

// Want implements Content.
func (f File) Want(off int64) (byte, bool) {
	var b [1]byte
	if n, _ := f.R.ReadAt(b[:], off); n == 1 {
		return b[0], true
	}
	return 0, false
}

// Name returns the synth name of a URL path: its last segment, with any
// query removed. Percent-encoding is left alone: synth names are plain.
func Name(urlPath string) string {
	if i := strings.IndexAny(urlPath, "?#"); i >= 0 {
		urlPath = urlPath[:i]
	}
	return path.Base(urlPath)
}

// IsPlaylist reports whether name is a playlist (.m3u8), whose synth
// content is synth.Playlist text rather than synth bytes.
func IsPlaylist(name string) bool { return strings.HasSuffix(name, ".m3u8") }

// SynthFor returns the synth content of a file of this name and total size:
// Playlist for .m3u8 names, Synth otherwise.
func SynthFor(name string, size int64) Content {
	if IsPlaylist(name) {
		return Playlist(name, size)
	}
	return Synth(name)
}
