//go:build linux

package origin

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"segorigin/cache"
	"segorigin/ranges"
)

// maxSendfileChunk bounds one sendfile(2) call (the kernel caps a call at
// 0x7ffff000 bytes anyway); short sends just loop.
const maxSendfileChunk = 1 << 30

// corkHeader marks the connection so the header fasthttp is about to flush
// goes out with MSG_MORE: the kernel then holds it until the body's first
// bytes fill the segment, so header and body share a segment.
func corkHeader(c any) {
	if tc, ok := c.(*tcpConn); ok {
		tc.more = true
	}
}

// uncorkHeader clears a mark no write consumed (the response failed before
// its header was written), so a later response's write does not carry it.
func uncorkHeader(c any) {
	if tc, ok := c.(*tcpConn); ok {
		tc.more = false
	}
}

// Write sends p; when marked by corkHeader, with MSG_MORE. Writes wait on
// Go's netpoller and honour the write deadline fasthttp set.
func (c *tcpConn) Write(p []byte) (int, error) {
	if !c.more {
		return c.TCPConn.Write(p)
	}
	c.more = false
	n, err := c.writeMore(p)
	return int(n), err
}

// writeMore sends all of p with MSG_MORE (more bytes follow at once).
func (c *tcpConn) writeMore(p []byte) (int64, error) {
	c.op = ioOp{buf: p}
	if err := c.raw.Write(c.writeFn); err != nil {
		return c.op.n, wrapNetErr("sendmsg", err)
	}
	n, err := c.op.n, c.op.err
	c.op = ioOp{}
	return n, err
}

// writeMoreOnce is the RawConn.Write callback of writeMore. It returns false
// to wait for writability (EAGAIN), true when done or failed.
func (c *tcpConn) writeMoreOnce(fd uintptr) bool {
	for c.op.n < int64(len(c.op.buf)) {
		n, err := unix.SendmsgN(int(fd), c.op.buf[c.op.n:], nil, nil, unix.MSG_MORE|unix.MSG_NOSIGNAL)
		if n > 0 {
			c.op.n += int64(n)
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err != nil:
			c.op.err = wrapNetErr("sendmsg", err)
			return true
		}
	}
	return true
}

// sendfile sends n bytes of the file src from off with sendfile(2). The
// kernel advances our private offset variable, never the fd's shared one.
func (c *tcpConn) sendfile(src int, off, n int64) (int64, error) {
	c.op = ioOp{src: src, off: off, remain: n}
	if err := c.raw.Write(c.sendfnFn); err != nil {
		sent := c.op.n
		c.op = ioOp{}
		return sent, wrapNetErr("sendfile", err)
	}
	sent, err := c.op.n, c.op.err
	c.op = ioOp{}
	return sent, err
}

// errSendfileUnsupported: the file system cannot sendfile (EINVAL, ENOSYS,
// EOPNOTSUPP); nothing was sent and the copy path must serve.
var errSendfileUnsupported = errors.New("origin: sendfile unsupported for this file")

// sendfileOnce is the RawConn.Write callback of sendfile.
func (c *tcpConn) sendfileOnce(fd uintptr) bool {
	for c.op.remain > 0 {
		n, err := unix.Sendfile(int(fd), c.op.src, &c.op.off, int(min(c.op.remain, maxSendfileChunk)))
		if n > 0 {
			c.op.n += int64(n)
			c.op.remain -= int64(n)
		}
		switch {
		case err == unix.EINTR:
		case err == unix.EAGAIN:
			return false
		case err == unix.EINVAL || err == unix.ENOSYS || err == unix.EOPNOTSUPP:
			if c.op.n == 0 {
				c.op.err = errSendfileUnsupported
			} else {
				c.op.err = wrapNetErr("sendfile", err)
			}
			return true
		case err != nil:
			c.op.err = wrapNetErr("sendfile", err)
			return true
		case n == 0:
			// sendfile returns 0 at end of file: the file is shorter
			// than the span we announced.
			c.op.err = errTruncated
			return true
		}
	}
	return true
}

// sendfileWriter is the plain TCP body path: part framing with MSG_MORE,
// file spans with sendfile(2). If the file system refuses sendfile, the
// span (and the rest of the body) goes through the copy path instead.
type sendfileWriter struct {
	c        *tcpConn
	fallback *copyWriter
	srv      *Server
	used     bool  // at least one span went through sendfile
	refused  bool  // sendfile refused: copy from here on
	sent     int64 // bytes sent by this path (framing included)
}

func (w *sendfileWriter) reset(s *Server, c *tcpConn, fb *copyWriter) {
	*w = sendfileWriter{c: c, fallback: fb, srv: s}
}

func (w *sendfileWriter) framing(p []byte, more bool) (int64, error) {
	if w.refused {
		return w.fallback.framing(p, more)
	}
	var n int
	var err error
	if more {
		var n64 int64
		n64, err = w.c.writeMore(p)
		n = int(n64)
	} else {
		n, err = w.c.TCPConn.Write(p)
	}
	w.sent += int64(n)
	return int64(n), err
}

func (w *sendfileWriter) span(h *cache.Handle, sp ranges.Span) (int64, error) {
	if !w.refused {
		n, err := w.c.sendfile(h.Fd(), sp.Start, sp.Length)
		w.sent += n
		if !errors.Is(err, errSendfileUnsupported) {
			w.used = true
			return n, err
		}
		w.refused = true
		w.srv.stats.Transport.SendfileFallbacks.Add(1)
	}
	return w.fallback.span(h, sp)
}

// wrapNetErr keeps deadline and closed-connection errors recognisable
// (errors.Is(err, os.ErrDeadlineExceeded)) while naming the syscall.
func wrapNetErr(op string, err error) error {
	if err == nil || errors.Is(err, errTruncated) || err == io.EOF {
		return err
	}
	return &opError{op: op, err: err}
}

type opError struct {
	op  string
	err error
}

func (e *opError) Error() string { return "origin: " + e.op + ": " + e.err.Error() }
func (e *opError) Unwrap() error { return e.err }

const sendfileAvailable = true
