//go:build linux

package conn

import (
	"bytes"
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk bounds one sendfile(2) call (the kernel caps a call at
// 0x7ffff000 bytes anyway); short sends just loop.
const maxSendfileChunk = 1 << 30

// SendfileAvailable: this platform has the sendfile body path.
const SendfileAvailable = true

// CorkHeader marks the connection so the header about to be flushed goes
// out with MSG_MORE: the kernel then holds it until the body's first
// bytes fill the segment, so header and body share a segment.
func (c *TCP) CorkHeader() { c.more = true }

// UncorkHeader clears a mark no write consumed (the response failed
// before its header was written), so a later response's write does not
// carry it.
func (c *TCP) UncorkHeader() { c.more = false }

// SetTail makes body ride on the next Write that flushes a response
// header: that Write sends the header and body with one writev, so a small
// response costs one send(2) (and leaves as one segment when it fits).
// bufSize is the size of the caller's buffered writer (see isHeaderFlush).
// TakeTail reports the outcome, and must be called once the response is
// done whether or not a Write took the tail. It reports whether the tail
// was set (false off Linux: the caller writes the body itself).
func (c *TCP) SetTail(body []byte, bufSize int) bool {
	c.tail, c.tailBuf = body, bufSize
	c.tailSent, c.tailErr = 0, nil
	return true
}

// TakeTail clears the tail and reports what the header's Write sent of
// it; pending is true when no Write carried it (the caller must then send
// the body itself, or end the connection).
func (c *TCP) TakeTail() (sent int64, pending bool, err error) {
	pending = c.tail != nil
	sent, err = c.tailSent, c.tailErr
	c.tail, c.tailSent, c.tailErr = nil, 0, nil
	return sent, pending, err
}

// Write sends p; when marked by CorkHeader, with MSG_MORE; when a tail is
// set and p is the header's flush, p and the tail with one writev. Writes
// wait on Go's netpoller and honour the write deadline set on the
// connection.
func (c *TCP) Write(p []byte) (int, error) {
	if c.tail != nil && isHeaderFlush(p, c.tailBuf) {
		return c.writeTail(p)
	}
	if !c.more {
		return c.TCPConn.Write(p)
	}
	c.more = false
	n, err := c.WriteMore(p)
	return int(n), err
}

// isHeaderFlush reports whether p, written while a tail is set, is the
// flush of the caller's buffered writer (of bufSize bytes) after a
// response header: the rest of its buffer, ending with the header's blank
// line. Only that write may carry the body. The buffered writer also
// writes while the header is being serialised, when earlier pipelined
// responses left too little room:
//
//  1. Two pipelined 304s and part of our header fill the 4096-byte buffer.
//  2. The writer flushes that full buffer: a Write of exactly 4096 bytes
//     that ends in the middle of our header.
//  3. If it carried the body, the body would sit inside the header.
//
// Such writes are always a full buffer (or, from an empty buffer, longer
// than it), and the flush after the header is shorter than the buffer and
// ends with the blank line, so both tests together pick the right one. If
// no write qualifies, TakeTail says so and the caller sends the body on
// its own after the header: two sends, still the right bytes.
func isHeaderFlush(p []byte, bufSize int) bool {
	return len(p) < bufSize && bytes.HasSuffix(p, headerEnd)
}

var headerEnd = []byte("\r\n\r\n")

// writeTail sends p (the buffered header) and then the tail with one
// writev through net.Buffers: poll.FD.Writev waits on the netpoller on
// EAGAIN, honours the write deadline, and reuses its iovec array, so no
// allocation. No MSG_MORE: nothing follows. It reports p's bytes to the
// caller (the buffered writer); TakeTail reports the tail's.
func (c *TCP) writeTail(p []byte) (int, error) {
	c.vec[0], c.vec[1] = p, c.tail
	c.tail = nil
	c.more = false
	c.bufs = c.vec[:]
	n, err := c.bufs.WriteTo(c.TCPConn)
	c.bufs, c.vec = nil, [2][]byte{}
	c.tailSent, c.tailErr = max(n-int64(len(p)), 0), err
	if n < int64(len(p)) {
		return int(n), err
	}
	return len(p), err
}

// WriteMore sends all of p with MSG_MORE (more bytes follow at once).
func (c *TCP) WriteMore(p []byte) (int64, error) {
	c.op = ioOp{buf: p}
	if err := c.raw.Write(c.writeFn); err != nil {
		return c.op.n, wrapNetErr("sendmsg", err)
	}
	n, err := c.op.n, c.op.err
	c.op = ioOp{}
	return n, err
}

// writeMoreOnce is the RawConn.Write callback of WriteMore. It returns
// false to wait for writability (EAGAIN), true when done or failed.
func (c *TCP) writeMoreOnce(fd uintptr) bool {
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

// Sendfile sends n bytes of the file src from off with sendfile(2). The
// kernel advances our private offset variable, never the fd's shared one.
// A file that ends first returns ErrTruncated; a file system that refuses
// sendfile before any byte returns ErrSendfileUnsupported.
func (c *TCP) Sendfile(src int, off, n int64) (int64, error) {
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

// sendfileOnce is the RawConn.Write callback of Sendfile.
func (c *TCP) sendfileOnce(fd uintptr) bool {
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
				c.op.err = ErrSendfileUnsupported
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
			c.op.err = ErrTruncated
			return true
		}
	}
	return true
}

// wrapNetErr keeps deadline and closed-connection errors recognisable
// (errors.Is(err, os.ErrDeadlineExceeded)) while naming the syscall.
func wrapNetErr(op string, err error) error {
	if err == nil || errors.Is(err, ErrTruncated) || err == io.EOF {
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
