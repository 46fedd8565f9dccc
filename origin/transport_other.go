//go:build !linux

package origin

import (
	"segorigin/cache"
	"segorigin/ranges"
)

// Off Linux there is no sendfile path: every body goes through the copy
// path, and the header is not corked.

func corkHeader(any)   {}
func uncorkHeader(any) {}

func (c *tcpConn) writeMoreOnce(uintptr) bool { return true }
func (c *tcpConn) sendfileOnce(uintptr) bool  { return true }

type sendfileWriter struct {
	fallback *copyWriter
	used     bool
	sent     int64
}

func (w *sendfileWriter) reset(_ *Server, _ *tcpConn, fb *copyWriter) {
	*w = sendfileWriter{fallback: fb}
}

func (w *sendfileWriter) framing(p []byte, more bool) (int64, error) {
	return w.fallback.framing(p, more)
}

func (w *sendfileWriter) span(h *cache.Handle, sp ranges.Span) (int64, error) {
	return w.fallback.span(h, sp)
}

const sendfileAvailable = false
