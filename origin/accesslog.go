package origin

import (
	"context"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/valyala/fasthttp"
)

// accessLog writes one structured line per response (or one in Sample),
// when configured. It is off by default; when on, a line costs one slog
// record with attributes, no formatting on the request path beyond that.
type accessLog struct {
	l      *slog.Logger // nil: off
	sample uint64       // log one response in sample
	n      atomic.Uint64
}

// latencyBuckets span a cached playlist (~100 µs) to a slow 2 MiB segment.
var latencyBuckets = prometheus.ExponentialBuckets(0.0001, 2.5, 12)

func newLatency() *prometheus.HistogramVec {
	return prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "segorigin_response_seconds",
		Help:    "Time from reading the request to the last body byte handed to the kernel, by kind of file.",
		Buckets: latencyBuckets,
	}, []string{"kind"})
}

// finish records a completed response: latency, and the access log line.
// via is the body path ("sendfile", "ktls", "copy", or "" for no body).
func (s *Server) finish(ctx *fasthttp.RequestCtx, k kind, sent int64, via string) {
	d := time.Since(ctx.Time())
	s.latencyBy[k].Observe(d.Seconds())
	a := &s.access
	if a.l == nil || a.n.Add(1)%a.sample != 0 {
		return
	}
	a.l.LogAttrs(context.Background(), slog.LevelInfo, "access",
		slog.String("method", string(ctx.Method())),
		slog.String("path", string(ctx.URI().PathOriginal())),
		slog.Int("status", ctx.Response.StatusCode()),
		slog.String("range", string(ctx.Request.Header.Peek("Range"))),
		slog.Int64("bytes", sent),
		slog.Duration("duration", d),
		slog.String("via", via),
		slog.String("client", s.clientIP(ctx)),
	)
}

// finishNoStream records a response whose body (if any) fasthttp writes
// from memory: errors, 304, HEAD, empty files.
func (s *Server) finishNoStream(ctx *fasthttp.RequestCtx, k kind) {
	n := int64(len(ctx.Response.Body()))
	s.finish(ctx, k, n, "")
}
