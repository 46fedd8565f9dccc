package origin

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// dateClamp keeps Last-Modified from being later than the Date of the same
// response. RFC 9110 §8.8.2.1: "An origin server with a clock ... MUST NOT
// send a Last-Modified date that is later than the server's time of message
// origination (Date). If the last modification time is derived from
// implementation-specific metadata that evaluates to some time in the
// future, according to the origin server's clock, then the origin server
// MUST replace that value with the message origination date."
//
// fasthttp writes Date itself, from a line a goroutine of its own re-renders
// once a second, so Date lags the clock by up to a second or more, and the
// API offers no way to set Date or to read the line it will write. A file
// written a moment ago (a live playlist) would get a Last-Modified later
// than its Date. The clamp reads the Date fasthttp would write now, from a
// throw-away header's serialisation; the line only moves forward, so the
// Date actually sent is never earlier than the one read.
//
// Reading costs a header serialisation, so it happens only for a
// modification time later than the latest Date already seen: on almost
// every request (a segment written more than a second ago) the clamp is
// one atomic load and a comparison, and allocates nothing. (A wall clock
// stepped back leaves seen ahead of the Date until the clock catches up: a
// file modified within that gap could then carry a Last-Modified after the
// Date, as every response did before.)
type dateClamp struct {
	seen  atomic.Int64 // latest Date (Unix seconds) read from fasthttp; only grows
	probe sync.Pool    // *dateProbe
}

// dateProbe is an empty response header and the buffer it serialises into.
type dateProbe struct {
	h   fasthttp.ResponseHeader
	buf []byte
}

// lastModified returns the Last-Modified to send for a file whose
// modification time, truncated to seconds, is mt, and whether it had to be
// replaced by the Date (then it is not a strong validator: §8.8.2.2 needs
// it to be at least a second before the Date).
func (d *dateClamp) lastModified(mt time.Time) (time.Time, bool) {
	if mt.Unix() <= d.seen.Load() {
		return mt, false
	}
	date, ok := d.current()
	if !ok || !mt.After(date) {
		return mt, false
	}
	return date, true
}

// current reads the Date fasthttp writes now, and records it in seen.
func (d *dateClamp) current() (time.Time, bool) {
	p, _ := d.probe.Get().(*dateProbe)
	if p == nil {
		p = new(dateProbe)
	}
	p.buf = p.h.AppendBytes(p.buf[:0]) // status line, Date line, CRLF
	t, ok := parseDateLine(p.buf)
	d.probe.Put(p)
	if !ok {
		return time.Time{}, false
	}
	for {
		seen := d.seen.Load()
		if t.Unix() <= seen || d.seen.CompareAndSwap(seen, t.Unix()) {
			return t, true
		}
	}
}

var dateLinePrefix = []byte("\r\nDate: ")

// parseDateLine finds the Date field in a serialised response header.
func parseDateLine(hdr []byte) (time.Time, bool) {
	i := bytes.Index(hdr, dateLinePrefix)
	if i < 0 {
		return time.Time{}, false
	}
	v := hdr[i+len(dateLinePrefix):]
	if j := bytes.IndexByte(v, '\r'); j >= 0 {
		v = v[:j]
	}
	t, err := fasthttp.ParseHTTPDate(v)
	return t, err == nil
}
