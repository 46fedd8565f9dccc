package load

import (
	"context"
	"io"
	"net/http/httptrace"
	"sync/atomic"
	"time"
)

// pacer caps a session's body reads at a bit rate, like a player on a link
// of that speed: it reads a chunk (whatever the connection has, up to the
// session's buffer), then sleeps until the bytes so far, over the time
// since the body began, are at most the rate. A 64 KiB chunk at 2 Mbit/s
// is a read and a timer every quarter second, so thousands of sessions
// cost the client little. One per session, reused for every body; not
// safe for concurrent use.
type pacer struct {
	bytesPerSec float64
	timer       *time.Timer // reused: one per session, not one per chunk
}

func newPacer(bitrate float64) *pacer {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &pacer{bytesPerSec: bitrate / 8, timer: t}
}

// reader returns r read at the pacer's rate from now on; its reads fail
// with ctx's error once ctx ends during a wait.
func (p *pacer) reader(ctx context.Context, r io.Reader) io.Reader {
	return &pacedReader{ctx: ctx, r: r, p: p, start: time.Now()}
}

// wait sleeps until start+d or the end of ctx.
func (p *pacer) wait(ctx context.Context, start time.Time, d time.Duration) error {
	left := time.Until(start.Add(d))
	if left <= 0 {
		return nil
	}
	// Since Go 1.23 Reset on a fired or stopped timer leaves no stale
	// value in its channel to drain.
	p.timer.Reset(left)
	select {
	case <-p.timer.C:
		return nil
	case <-ctx.Done():
		p.timer.Stop()
		return ctx.Err()
	}
}

// pacedReader is one body read through a pacer. The wait follows every
// read, the last included, so that a body of N bytes takes at least
// N*8/bitrate however the bytes arrive.
type pacedReader struct {
	ctx   context.Context
	r     io.Reader
	p     *pacer
	start time.Time // when the body began
	n     int64     // bytes read so far
}

func (pr *pacedReader) Read(b []byte) (int, error) {
	n, err := pr.r.Read(b)
	pr.n += int64(n)
	if n > 0 {
		due := time.Duration(float64(pr.n) / pr.p.bytesPerSec * float64(time.Second))
		if werr := pr.p.wait(pr.ctx, pr.start, due); werr != nil && err == nil {
			err = werr
		}
	}
	return n, err
}

// sentTrace records when the transport finished writing a request, for
// the time to the response's headers. One per session, its context made
// once: the trace costs no allocation per request. WroteRequest runs on
// the transport's writing goroutine, hence the atomic.
type sentTrace struct {
	base  time.Time    // the session's start: wrote counts from it
	wrote atomic.Int64 // nanoseconds from base to the request written; 0: not yet
}

// context returns ctx with the trace attached.
func (t *sentTrace) context(ctx context.Context) context.Context {
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) {
			t.wrote.Store(int64(time.Since(t.base)))
		},
	})
}

// reset forgets the previous request's time; call before each request.
func (t *sentTrace) reset() { t.wrote.Store(0) }

// since returns the time from the request's last write to now, or from
// fallback if the transport reported no write.
func (t *sentTrace) since(fallback time.Time) time.Duration {
	if w := t.wrote.Load(); w > 0 {
		return time.Since(t.base) - time.Duration(w)
	}
	return time.Since(fallback)
}
