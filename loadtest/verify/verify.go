package verify

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// Mismatch reports the first body byte that differs from the content.
type Mismatch struct {
	Name   string // the content's name (the URL's base name)
	Offset int64  // file offset of the first wrong byte
	Got    byte
	Want   byte
	// WantKnown is false when the offset lies past the content's end.
	WantKnown bool
}

func (m *Mismatch) Error() string {
	if !m.WantKnown {
		return fmt.Sprintf("%s: byte at offset %d is past the end of the content", m.Name, m.Offset)
	}
	return fmt.Sprintf("%s: byte at offset %d is 0x%02x, want 0x%02x", m.Name, m.Offset, m.Got, m.Want)
}

// LengthError reports a body that ended before or ran past the span
// announced for it.
type LengthError struct {
	Name      string
	Offset    int64 // file offset of the body's first byte
	Got, Want int64 // body lengths
}

func (e *LengthError) Error() string {
	return fmt.Sprintf("%s: body at offset %d is %d bytes, want %d", e.Name, e.Offset, e.Got, e.Want)
}

// Body checks that body holds the synth content of name from file offset
// off: synth bytes for any name but a .m3u8 playlist. A playlist's content
// depends on the file's size, which a span alone does not give: use Check
// with Playlist for those.
func Body(name string, off int64, body []byte) error {
	return Check(name, Synth(name), off, body)
}

// Check checks that body holds c's bytes from file offset off; name is used
// in the error.
func Check(name string, c Content, off int64, body []byte) error {
	if bad := c.Check(off, body); bad >= 0 {
		return mismatch(name, c, bad, body[bad-off])
	}
	return nil
}

func mismatch(name string, c Content, bad int64, got byte) *Mismatch {
	want, ok := c.Want(bad)
	return &Mismatch{Name: name, Offset: bad, Got: got, Want: want, WantKnown: ok}
}

// Writer checks a body as it is written: the bytes of each Write must
// continue the content where the previous Write stopped. The first
// mismatch fails that Write and every later one. Use NewWriter.
type Writer struct {
	name  string
	c     Content
	start int64 // file offset of the body's first byte
	off   int64 // file offset of the next byte
	want  int64 // expected body length; -1 if unknown
	err   error // first error; sticky
}

// NewWriter returns a Writer for a body holding c's bytes from file offset
// off, n bytes long (n < 0: length unknown, Close checks nothing).
func NewWriter(name string, c Content, off, n int64) *Writer {
	return &Writer{name: name, c: c, start: off, off: off, want: n}
}

// Write implements io.Writer.
func (w *Writer) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	if w.want >= 0 && w.off-w.start+int64(len(p)) > w.want {
		w.err = &LengthError{Name: w.name, Offset: w.start, Got: w.off - w.start + int64(len(p)), Want: w.want}
		return 0, w.err
	}
	if bad := w.c.Check(w.off, p); bad >= 0 {
		w.err = mismatch(w.name, w.c, bad, p[bad-w.off])
		return 0, w.err
	}
	w.off += int64(len(p))
	return len(p), nil
}

// Written returns how many body bytes were verified.
func (w *Writer) Written() int64 { return w.off - w.start }

// Close reports the first error, or a LengthError if the body ended before
// its expected length.
func (w *Writer) Close() error {
	if w.err == nil && w.want >= 0 && w.off-w.start != w.want {
		w.err = &LengthError{Name: w.name, Offset: w.start, Got: w.off - w.start, Want: w.want}
	}
	return w.err
}

// ContentRangeError reports a Content-Range header that does not describe
// the span that was asked for.
type ContentRangeError struct {
	Header string
	Want   string
}

func (e *ContentRangeError) Error() string {
	return fmt.Sprintf("Content-Range %q, want %q", e.Header, e.Want)
}

// ErrBadContentRange is wrapped by ParseContentRange's errors.
var ErrBadContentRange = errors.New("malformed Content-Range")

// ParseContentRange parses a satisfied byte range, "bytes FIRST-LAST/SIZE"
// (RFC 9110 §14.4), returning size -1 for a "*" complete length.
func ParseContentRange(h string) (first, last, size int64, err error) {
	bad := func() (int64, int64, int64, error) {
		return 0, 0, 0, fmt.Errorf("%w: %q", ErrBadContentRange, h)
	}
	rest, ok := strings.CutPrefix(h, "bytes ")
	if !ok {
		return bad()
	}
	span, total, ok := strings.Cut(rest, "/")
	if !ok {
		return bad()
	}
	f, l, ok := strings.Cut(span, "-")
	if !ok {
		return bad()
	}
	if first, err = strconv.ParseInt(f, 10, 64); err != nil || first < 0 {
		return bad()
	}
	if last, err = strconv.ParseInt(l, 10, 64); err != nil || last < first {
		return bad()
	}
	if total == "*" {
		return first, last, -1, nil
	}
	if size, err = strconv.ParseInt(total, 10, 64); err != nil || size <= last {
		return bad()
	}
	return first, last, size, nil
}

// ContentRange checks that header describes the n bytes from off of a file
// of the given size (size < 0: any size, returned as parsed). It returns
// the complete length the header gives.
func ContentRange(header string, off, n, size int64) (int64, error) {
	first, last, got, err := ParseContentRange(header)
	if err != nil {
		return 0, err
	}
	if first != off || last != off+n-1 || (size >= 0 && got != size) {
		total := "SIZE"
		if size >= 0 {
			total = strconv.FormatInt(size, 10)
		}
		return got, &ContentRangeError{Header: header, Want: fmt.Sprintf("bytes %d-%d/%s", off, off+n-1, total)}
	}
	return got, nil
}
