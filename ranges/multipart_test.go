package ranges

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"strings"
	"testing"
)

// testData returns n bytes of letters: no CR, so no "\r\n--" inside a
// span can be mistaken for a delimiter by a reader.
func testData(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = 'a' + byte(i*7%26)
	}
	return b
}

// writeBody writes the multipart body of m over data, as a caller would.
func writeBody(w io.Writer, m *Multipart, data []byte) error {
	for i := range m.Parts() {
		sp := m.Span(i)
		if _, err := w.Write(m.PartHeader(i)); err != nil {
			return err
		}
		if _, err := w.Write(data[sp.Start:sp.End()]); err != nil {
			return err
		}
	}
	_, err := w.Write(m.Trailer())
	return err
}

// TestMultipartRFCExample builds the example of RFC 9110 §14.6 byte for byte.
func TestMultipartRFCExample(t *testing.T) {
	const b = "THIS_STRING_SEPARATES"
	data := testData(8000)
	m := NewMultipart(b, "application/pdf", 8000, []Span{{500, 500}, {7000, 1000}})

	want := "--" + b + "\r\n" +
		"Content-Type: application/pdf\r\n" +
		"Content-Range: bytes 500-999/8000\r\n" +
		"\r\n" +
		string(data[500:1000]) +
		"\r\n--" + b + "\r\n" +
		"Content-Type: application/pdf\r\n" +
		"Content-Range: bytes 7000-7999/8000\r\n" +
		"\r\n" +
		string(data[7000:8000]) +
		"\r\n--" + b + "--\r\n"
	var body bytes.Buffer
	if err := writeBody(&body, m, data); err != nil {
		t.Fatal(err)
	}
	if got := body.String(); got != want {
		t.Errorf("body = %q, want %q", short(got), short(want))
	}
	if got := m.Len(); got != int64(len(want)) {
		t.Errorf("Len() = %d, want %d", got, len(want))
	}
	if got, want := m.ContentType(), "multipart/byteranges; boundary="+b; got != want {
		t.Errorf("ContentType() = %q, want %q", got, want)
	}
	if got := m.Parts(); got != 2 {
		t.Errorf("Parts() = %d, want 2", got)
	}
}

// TestMultipartReadBack writes bodies and reads them back with
// mime/multipart, an independent reader.
func TestMultipartReadBack(t *testing.T) {
	tests := []struct {
		name        string
		boundary    string
		contentType string
		size        int64
		spans       []Span
	}{
		{"two parts", "abc123", "video/mp4", 1000, []Span{{0, 10}, {900, 100}}},
		{"one part", "abc123", "video/mp2t", 1000, []Span{{0, 1000}}},
		{"no content type", "abc123", "", 1000, []Span{{5, 5}, {0, 1}}},
		{"quoted boundary", "a b:c=d?(e)/f,g", "video/mp4", 100, []Span{{1, 2}, {50, 50}}},
		{"longest boundary", strings.Repeat("z", 70), "audio/mp4", 10, []Span{{9, 1}, {0, 1}}},
		{"content type with parameter", "x", `video/mp4; codecs="avc1.64001f"`, 10, []Span{{2, 3}, {6, 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := NewMultipart(tt.boundary, tt.contentType, tt.size, tt.spans)
			if err := readBack(m, tt.boundary, tt.contentType, tt.size, tt.spans); err != nil {
				t.Error(err)
			}
		})
	}
}

// readBack writes m's body and checks it with mime/multipart: boundary from
// ContentType, each part's headers and bytes, Len against what was written.
func readBack(m *Multipart, boundary, contentType string, size int64, spans []Span) error {
	data := testData(size)
	var body bytes.Buffer
	if err := writeBody(&body, m, data); err != nil {
		return err
	}
	if int64(body.Len()) != m.Len() {
		return fmt.Errorf("wrote %d bytes, Len() = %d", body.Len(), m.Len())
	}
	mediaType, params, err := mime.ParseMediaType(m.ContentType())
	if err != nil || mediaType != "multipart/byteranges" || params["boundary"] != boundary {
		return fmt.Errorf("ParseMediaType(%q) = %q, %v, %v; want multipart/byteranges, boundary %q",
			m.ContentType(), mediaType, params, err, boundary)
	}
	r := multipart.NewReader(&body, params["boundary"])
	for i, sp := range spans {
		p, err := r.NextRawPart()
		if err != nil {
			return fmt.Errorf("part %d: %v", i, err)
		}
		if got, want := p.Header.Get("Content-Range"), sp.ContentRange(size); got != want {
			return fmt.Errorf("part %d: Content-Range %q, want %q", i, got, want)
		}
		if got, want := p.Header.Get("Content-Type"), strings.Trim(contentType, " \t"); got != want {
			return fmt.Errorf("part %d: Content-Type %q, want %q", i, got, want)
		}
		got, err := io.ReadAll(p)
		if err != nil || !bytes.Equal(got, data[sp.Start:sp.End()]) {
			return fmt.Errorf("part %d: body %q, %v; want %q", i, short(string(got)), err, short(string(data[sp.Start:sp.End()])))
		}
	}
	if p, err := r.NextRawPart(); err != io.EOF {
		return fmt.Errorf("after %d parts: %v, %v; want EOF", len(spans), p, err)
	}
	return nil
}

func TestMultipartContentType(t *testing.T) {
	tests := []struct{ boundary, want string }{
		{"0123456789abcdef", "multipart/byteranges; boundary=0123456789abcdef"},
		{"a'+_-.", "multipart/byteranges; boundary=a'+_-."},
		{"a b", `multipart/byteranges; boundary="a b"`},
		{"a:b", `multipart/byteranges; boundary="a:b"`},
		{"(x)", `multipart/byteranges; boundary="(x)"`},
		{"a=b?,/", `multipart/byteranges; boundary="a=b?,/"`},
	}
	for _, tt := range tests {
		m := NewMultipart(tt.boundary, "", 1, []Span{{0, 1}})
		if got := m.ContentType(); got != tt.want {
			t.Errorf("NewMultipart(%q, ...).ContentType() = %q, want %q", tt.boundary, got, tt.want)
		}
	}
}

func TestNewMultipartPanics(t *testing.T) {
	ok := []Span{{0, 1}}
	tests := []struct {
		name        string
		boundary    string
		contentType string
		size        int64
		spans       []Span
	}{
		{"empty boundary", "", "", 10, ok},
		{"boundary too long", strings.Repeat("z", 71), "", 10, ok},
		{"boundary ends in space", "ab ", "", 10, ok},
		{"boundary with quote", `a"b`, "", 10, ok},
		{"boundary with CRLF", "a\r\nb", "", 10, ok},
		{"content type with CRLF", "b", "video/mp4\r\nSet-Cookie: x", 10, ok},
		{"content type with NUL", "b", "video/mp4\x00", 10, ok},
		{"no spans", "b", "", 10, nil},
		{"empty span", "b", "", 10, []Span{{0, 0}}},
		{"negative start", "b", "", 10, []Span{{-1, 2}}},
		{"past end", "b", "", 10, []Span{{5, 6}}},
		{"negative size", "b", "", -1 << 63, []Span{{0, 1}}},
		{"length overflow", "b", "", 1<<63 - 1, []Span{{0, 1<<63 - 1}, {0, 1<<63 - 1}}},
		{"framing overflow", "b", "", 1<<63 - 1, []Span{{0, 1<<63 - 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewMultipart(%q, %q, %d, %v) did not panic", tt.boundary, tt.contentType, tt.size, tt.spans)
				}
			}()
			NewMultipart(tt.boundary, tt.contentType, tt.size, tt.spans)
		})
	}
}

// TestMultipartShared checks that the caller's slices and ours are apart.
func TestMultipartShared(t *testing.T) {
	spans := []Span{{0, 1}, {5, 1}}
	m := NewMultipart("b", "video/mp4", 10, spans)
	spans[0] = Span{2, 2}
	if got := m.Span(0); got != (Span{0, 1}) {
		t.Errorf("Span(0) after caller's change = %v, want {0 1}", got)
	}
	second := string(m.PartHeader(1))
	_ = append(m.PartHeader(0), "XXXX"...)
	if got := string(m.PartHeader(1)); got != second {
		t.Errorf("PartHeader(1) after append to PartHeader(0) = %q, want %q", got, second)
	}
	want := "\r\n--b\r\nContent-Type: video/mp4\r\nContent-Range: bytes 5-5/10\r\n\r\n"
	if second != want {
		t.Errorf("PartHeader(1) = %q, want %q", second, want)
	}
	if got := string(m.Trailer()); got != "\r\n--b--\r\n" {
		t.Errorf("Trailer() = %q, want %q", got, "\r\n--b--\r\n")
	}
}

func TestNewBoundary(t *testing.T) {
	seq := make([]byte, 15)
	for i := range seq {
		seq[i] = byte(i * 17)
	}
	got, err := NewBoundary(bytes.NewReader(seq))
	if want := "00112233445566778899aabbccddee"; got != want || err != nil {
		t.Errorf("NewBoundary(0x00..0xee) = %q, %v; want %q, nil", got, err, want)
	}
	if !validBoundary(got) {
		t.Errorf("NewBoundary result %q is not a valid boundary", got)
	}
	got, err = NewBoundary(bytes.NewReader(seq[:3]))
	if got != "" || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("NewBoundary(3 bytes) = %q, %v; want \"\", %v", got, err, io.ErrUnexpectedEOF)
	}
}
