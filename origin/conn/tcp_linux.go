//go:build linux

package conn

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"
)

// maxSendfileChunk bounds one sendfile(2) call (the kernel caps a call at
// 0x7ffff000 bytes anyway); short sends just loop.
const maxSendfileChunk = 1 << 30

// SendfileAvailable: this platform has the sendfile body path.
const SendfileAvailable = true

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
