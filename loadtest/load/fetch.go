package load

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"segorigin/loadtest/verify"
)

// VerifyMode says what a body is checked against.
type VerifyMode int

const (
	// VerifySynth checks bodies against synth content named by the URL's
	// base name (synth playlists for .m3u8, synth bytes otherwise).
	VerifySynth VerifyMode = iota
	// VerifyRoot checks bodies against the file at the URL's path below
	// Config.Root: for real media served from a local directory.
	VerifyRoot
	// VerifyLength checks status, Content-Length, Content-Range and the
	// number of body bytes, not their values.
	VerifyLength
)

// ParseVerifyMode parses "synth", "root" or "length".
func ParseVerifyMode(s string) (VerifyMode, error) {
	switch s {
	case "synth":
		return VerifySynth, nil
	case "root":
		return VerifyRoot, nil
	case "length":
		return VerifyLength, nil
	}
	return 0, fmt.Errorf("verify mode %q: want synth, root or length", s)
}

func (m VerifyMode) String() string {
	return [...]string{"synth", "root", "length"}[m]
}

// maxKeep bounds a body kept for the walker (a playlist).
const maxKeep = 8 << 20

// fetch makes one request and verifies its response; it returns the body
// bytes received and the time from the request written to the response's
// headers. ctx carries the player's trace.
func (r *runner) fetch(ctx context.Context, p *player, s step) (int64, time.Duration, error) {
	rerr := s.fail
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return 0, 0, rerr(err)
	}
	if s.n >= 0 {
		req.Header.Set("Range", s.rangeHeader())
	}
	etag, conditional := p.etags[s.url]
	conditional = conditional && s.n < 0 && !s.keep
	if conditional {
		req.Header.Set("If-None-Match", etag)
	}
	p.trace.reset()
	t0 := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, 0, rerr(err)
	}
	ttfb := p.trace.since(t0)
	defer resp.Body.Close()
	if conditional {
		return 0, ttfb, rerr(checkNotModified(resp, etag))
	}
	got, err := r.readBody(ctx, p, s, resp)
	if err == nil && p.etags != nil && s.n < 0 {
		if e := resp.Header.Get("ETag"); e != "" {
			p.etags[s.url] = e
		}
	}
	return got, ttfb, err
}

// checkNotModified checks the answer to a conditional GET with etag: 304,
// the same ETag, no body.
func checkNotModified(resp *http.Response, etag string) error {
	if resp.StatusCode != http.StatusNotModified {
		return fmt.Errorf("If-None-Match %s: status %d, want 304", etag, resp.StatusCode)
	}
	if got := resp.Header.Get("ETag"); got != etag {
		return fmt.Errorf("304: ETag %q, want %q", got, etag)
	}
	if n, err := io.Copy(io.Discard, resp.Body); n != 0 || err != nil {
		return fmt.Errorf("304 with %d body bytes (%v), want none", n, err)
	}
	return nil
}

// readBody reads and verifies the body of the response to s, at the
// player's pace, and returns the body bytes received.
func (r *runner) readBody(ctx context.Context, p *player, s step, resp *http.Response) (int64, error) {
	rerr := s.fail
	off, n, size, err := expectSpan(s, resp)
	if err != nil {
		return 0, rerr(err)
	}
	name := verify.Name(resp.Request.URL.Path)
	content, closeContent, err := r.content(resp.Request.URL.Path, name, size)
	if err != nil {
		return 0, rerr(err)
	}
	defer closeContent()

	var dst io.Writer
	var vw *verify.Writer
	var kept bytes.Buffer
	if content != nil {
		vw = verify.NewWriter(name, content, off, n)
		dst = vw
	}
	if s.keep || content == nil {
		dst = writers(dst, &limitedBuffer{b: &kept, left: maxKeep})
	}
	var body io.Reader = resp.Body
	if p.pace != nil {
		body = p.pace.reader(ctx, body)
	}
	got, copyErr := io.CopyBuffer(dst, body, p.buf)
	if vw != nil {
		if werr := vw.Close(); werr != nil {
			// A body cut short by a broken connection is reported as the
			// read error below; a wrong byte or length as itself.
			var le *verify.LengthError
			if copyErr == nil || !errors.As(werr, &le) || le.Got > le.Want {
				return got, rerr(werr)
			}
		}
	}
	if copyErr != nil {
		return got, rerr(fmt.Errorf("after %d body bytes: %w", got, copyErr))
	}
	if content == nil {
		// A synth playlist of unknown length: its text depends on its
		// size, known only now.
		if err := verify.Check(name, verify.Playlist(name, int64(kept.Len())), off, kept.Bytes()); err != nil {
			return got, rerr(err)
		}
	}
	if s.keep {
		if err := p.walk.got(s, kept.Bytes()); err != nil {
			return got, rerr(err)
		}
	}
	return got, nil
}

// fail wraps err as the RequestError of s; nil stays nil.
func (s step) fail(err error) error {
	if err == nil {
		return nil
	}
	e := &RequestError{URL: s.url, Err: err}
	if s.n >= 0 {
		e.Range = s.rangeHeader()
	}
	return e
}

// expectSpan checks the status and framing headers of a response against
// the step and returns the span the body must hold: file offset, length
// (-1 if unknown) and the file's complete size (-1 if unknown).
func expectSpan(s step, resp *http.Response) (off, n, size int64, err error) {
	if s.n < 0 {
		if resp.StatusCode != http.StatusOK {
			return 0, 0, 0, fmt.Errorf("status %d, want 200", resp.StatusCode)
		}
		n = resp.ContentLength
		if s.size >= 0 && n >= 0 && n != s.size {
			return 0, 0, 0, fmt.Errorf("Content-Length %d, want the file's size %d", n, s.size)
		}
		if n < 0 {
			n = s.size
		}
		return 0, n, n, nil
	}
	if resp.StatusCode != http.StatusPartialContent {
		return 0, 0, 0, fmt.Errorf("status %d, want 206", resp.StatusCode)
	}
	size, err = verify.ContentRange(resp.Header.Get("Content-Range"), s.off, s.n, s.size)
	if err != nil {
		return 0, 0, 0, err
	}
	if resp.ContentLength >= 0 && resp.ContentLength != s.n {
		return 0, 0, 0, fmt.Errorf("Content-Length %d, want %d", resp.ContentLength, s.n)
	}
	return s.off, s.n, size, nil
}

// content returns what the body of urlPath should hold, and a func that
// releases it. nil content (with a nil error) means: verify after reading,
// because the content depends on a length not yet known.
func (r *runner) content(urlPath, name string, size int64) (verify.Content, func(), error) {
	nop := func() {}
	switch r.cfg.Verify {
	case VerifyLength:
		return anyContent{}, nop, nil
	case VerifyRoot:
		clean := path.Clean("/" + urlPath)
		if p, err := url.PathUnescape(clean); err == nil {
			clean = p
		}
		f, err := os.Open(filepath.Join(r.cfg.Root, filepath.FromSlash(strings.TrimPrefix(clean, "/"))))
		if err != nil {
			return nil, nop, fmt.Errorf("local copy: %w", err)
		}
		return verify.File{R: f}, func() { f.Close() }, nil
	}
	if verify.IsPlaylist(name) && size < 0 {
		return nil, nop, nil
	}
	return verify.SynthFor(name, size), nop, nil
}

// anyContent accepts every byte (VerifyLength).
type anyContent struct{}

func (anyContent) Check(int64, []byte) int64 { return -1 }
func (anyContent) Want(int64) (byte, bool)   { return 0, false }

// errBodyTooLarge is a kept body past maxKeep.
var errBodyTooLarge = errors.New("body too large to keep")

// limitedBuffer keeps up to left bytes and fails beyond.
type limitedBuffer struct {
	b    *bytes.Buffer
	left int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(p) > l.left {
		return 0, fmt.Errorf("%w (more than %d bytes)", errBodyTooLarge, maxKeep)
	}
	l.left -= len(p)
	return l.b.Write(p)
}

// writers is io.MultiWriter that skips a nil first writer.
func writers(a io.Writer, b io.Writer) io.Writer {
	if a == nil {
		return b
	}
	return io.MultiWriter(a, b)
}
