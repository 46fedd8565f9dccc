package etag

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/zeebo/xxh3"
)

// Attr is the extended attribute a tag is kept in.
const Attr = "user.segorigin.etag"

// ctimeSlack is how far from the attribute's recorded write time the
// file's ctime may be and still be the mark of that write: the kernel
// dates ctime with its coarse clock, up to a tick (10 ms at HZ=100)
// behind the clock read before the call, and the call itself takes
// microseconds. A rewrite in place that keeps the size and sets the mtime
// back within this much of the attribute's write is the one change the
// attribute cannot tell from its own (see doc.go, rule 1).
const ctimeSlack = int64(20e6) // 20 ms

// Version is one version of a file, as one fstat describes it.
type Version struct {
	Size    int64
	ModTime int64 // st_mtime, Unix nanoseconds
	Ctime   int64 // st_ctime, Unix nanoseconds
}

// Tag is a content validator for a version.
type Tag struct {
	ETag string // the strong entity tag, quoted: `"<32 hex digits>"`
	// Changed is the ctime of the version that was hashed (Unix
	// nanoseconds): the file's ctime may be later by the attribute's own
	// write alone, so the time a write last changed the bytes is this.
	Changed int64
}

// ErrChanged: the file changed while it was being hashed.
var ErrChanged = errors.New("etag: file changed while hashed")

// ErrNoAttr: the file system keeps no user extended attributes, or this
// process may not write them here.
var ErrNoAttr = errors.New("etag: extended attribute not writable")

// Sum returns the strong entity tag of the size bytes r holds from offset
// 0, read into buf (at least 1 byte; 1 MiB reads suit large files).
func Sum(r io.ReaderAt, size int64, buf []byte) (string, error) {
	h := xxh3.New()
	for off := int64(0); off < size; {
		n, err := r.ReadAt(buf[:min(int64(len(buf)), size-off)], off)
		h.Write(buf[:n])
		off += int64(n)
		switch {
		case err == io.EOF && off < size:
			return "", fmt.Errorf("etag: %w: %d bytes of %d", ErrChanged, off, size)
		case err != nil && err != io.EOF:
			return "", fmt.Errorf("etag: read at %d: %w", off, err)
		}
	}
	return Format(h.Sum128().Bytes()), nil
}

// Format makes the entity tag of a 16-byte digest.
func Format(sum [16]byte) string {
	var b [2 + 32]byte
	b[0], b[len(b)-1] = '"', '"'
	hex.Encode(b[1:33], sum[:])
	return string(b[:])
}

// attrVersion starts every attribute value this package writes.
const attrVersion = "1"

// FormatAttr is the attribute value for tag t of version v, written at
// setAt (Unix nanoseconds, read just before the write):
// "1 <size> <mtime> <changed> <setAt> <etag>".
func FormatAttr(v Version, t Tag, setAt int64) []byte {
	b := make([]byte, 0, 128)
	b = append(b, attrVersion...)
	for _, n := range [...]int64{v.Size, v.ModTime, t.Changed, setAt} {
		b = append(b, ' ')
		b = strconv.AppendInt(b, n, 10)
	}
	b = append(b, ' ')
	return append(b, t.ETag...)
}

// Stored is a parsed attribute value.
type Stored struct {
	Size, ModTime, Changed, SetAt int64
	ETag                          string
}

// ParseAttr parses an attribute value FormatAttr made.
func ParseAttr(b []byte) (Stored, error) {
	f := bytes.Fields(b)
	if len(f) != 6 || string(f[0]) != attrVersion {
		return Stored{}, fmt.Errorf("etag: attribute %q: want 6 fields, version %s", b, attrVersion)
	}
	var n [4]int64
	for i := range n {
		var err error
		if n[i], err = strconv.ParseInt(string(f[i+1]), 10, 64); err != nil {
			return Stored{}, fmt.Errorf("etag: attribute field %d: %w", i+1, err)
		}
	}
	tag := f[5]
	if len(tag) != 34 || tag[0] != '"' || tag[33] != '"' {
		return Stored{}, fmt.Errorf("etag: attribute tag %q malformed", tag)
	}
	if _, err := hex.DecodeString(string(tag[1:33])); err != nil {
		return Stored{}, fmt.Errorf("etag: attribute tag %q: %w", tag, err)
	}
	return Stored{Size: n[0], ModTime: n[1], Changed: n[2], SetAt: n[3], ETag: string(tag)}, nil
}

// For returns the tag s holds for v, if it describes v (rule 1).
func (s Stored) For(v Version) (Tag, bool) {
	if s.Size != v.Size || s.ModTime != v.ModTime {
		return Tag{}, false
	}
	own := v.Ctime == s.Changed
	byWrite := v.Ctime >= s.SetAt-ctimeSlack && v.Ctime-s.SetAt <= ctimeSlack && v.Ctime >= s.Changed
	if !own && !byWrite {
		return Tag{}, false
	}
	return Tag{ETag: s.ETag, Changed: s.Changed}, true
}
