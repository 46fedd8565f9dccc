package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"strconv"
)

// span is an inclusive byte range of a file, as Range and Content-Range
// write it.
type span struct{ first, last int64 }

func (s span) String() string { return fmt.Sprintf("%d-%d", s.first, s.last) }

// sameBytes compares a body with the file's bytes it must equal.
func sameBytes(what string, got, want []byte) error {
	if bytes.Equal(got, want) {
		return nil
	}
	n := min(len(got), len(want))
	for i := range n {
		if got[i] != want[i] {
			return fmt.Errorf("%s: byte %d is %#02x, want %#02x (%d bytes, want %d)", what, i, got[i], want[i], len(got), len(want))
		}
	}
	return fmt.Errorf("%s: %d bytes, want %d (the common prefix matches)", what, len(got), len(want))
}

func wantStatus(resp *http.Response, code int) error {
	if resp.StatusCode != code {
		return fmt.Errorf("status %d, want %d", resp.StatusCode, code)
	}
	return nil
}

// wantFull: 200 with the whole file.
func wantFull(resp *http.Response, body, file []byte) error {
	if err := wantStatus(resp, http.StatusOK); err != nil {
		return err
	}
	if resp.ContentLength != int64(len(file)) {
		return fmt.Errorf("Content-Length %d, want %d", resp.ContentLength, len(file))
	}
	return sameBytes("body", body, file)
}

// wantRange: 206 with one part, sp of file (RFC 9110 §14.4).
func wantRange(resp *http.Response, body, file []byte, sp span) error {
	if err := wantStatus(resp, http.StatusPartialContent); err != nil {
		return err
	}
	cr := fmt.Sprintf("bytes %d-%d/%d", sp.first, sp.last, len(file))
	if got := resp.Header.Get("Content-Range"); got != cr {
		return fmt.Errorf("Content-Range %q, want %q", got, cr)
	}
	return sameBytes("range "+sp.String(), body, file[sp.first:sp.last+1])
}

// wantMultipart: 206 multipart/byteranges with one part per span, in
// order, each with its Content-Range and bytes (RFC 9110 §14.6).
func wantMultipart(resp *http.Response, body, file []byte, spans []span) error {
	if err := wantStatus(resp, http.StatusPartialContent); err != nil {
		return err
	}
	mt, params, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/byteranges" || params["boundary"] == "" {
		return fmt.Errorf("Content-Type %q, want multipart/byteranges with a boundary", resp.Header.Get("Content-Type"))
	}
	if resp.ContentLength != int64(len(body)) {
		return fmt.Errorf("Content-Length %d, body %d bytes", resp.ContentLength, len(body))
	}
	mr := multipart.NewReader(bytes.NewReader(body), params["boundary"])
	for i, sp := range spans {
		p, err := mr.NextPart()
		if err != nil {
			return fmt.Errorf("part %d of %d: %v", i+1, len(spans), err)
		}
		cr := fmt.Sprintf("bytes %d-%d/%d", sp.first, sp.last, len(file))
		if got := p.Header.Get("Content-Range"); got != cr {
			return fmt.Errorf("part %d: Content-Range %q, want %q", i+1, got, cr)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return fmt.Errorf("part %d: %v", i+1, err)
		}
		if err := sameBytes("part "+strconv.Itoa(i+1), b, file[sp.first:sp.last+1]); err != nil {
			return err
		}
	}
	if _, err := mr.NextPart(); !errors.Is(err, io.EOF) {
		return fmt.Errorf("after %d parts: %v, want the closing boundary", len(spans), err)
	}
	return nil
}

// rangeHeader writes spans as a Range header.
func rangeHeader(spans ...span) string {
	var b bytes.Buffer
	b.WriteString("Range: bytes=")
	for i, sp := range spans {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(sp.String())
	}
	return b.String()
}
