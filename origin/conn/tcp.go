package conn

import (
	"errors"
	"net"
	"sync"
	"syscall"
)

// TCP is every plain TCP connection a gate's listener accepts. It keeps
// the *net.TCPConn reachable for sendfile, remembers its RawConn (so the
// hot path does not allocate one per response), and writes with MSG_MORE
// (WriteMore) so a
// response header and the first body bytes leave in one TCP segment.
//
// All methods but Close run on the connection's serving goroutine.
type TCP struct {
	*net.TCPConn
	raw  syscall.RawConn
	ln   *Listener
	once sync.Once

	// PROXY protocol state, touched only by the serving goroutine (the
	// first Read) before RemoteAddr is asked.
	trusted      bool     // the peer is a trusted proxy
	proxyPending bool     // the first Read must take the PROXY header first
	proxyErr     error    // the header was refused: every Read fails
	remote       net.Addr // the client a PROXY header named; nil: the peer

	// Per-call state of the RawConn callbacks, kept here so the callbacks
	// can be method values bound once at accept (no closure per call).
	op       ioOp
	writeFn  func(fd uintptr) bool
	sendfnFn func(fd uintptr) bool
}

// ioOp is the argument and result block of one RawConn callback.
type ioOp struct {
	buf    []byte // writeMore: bytes to send
	src    int    // sendfile: file descriptor
	off    int64  // sendfile: file offset (advanced by the kernel)
	remain int64  // sendfile: bytes still to send
	n      int64  // bytes sent so far in this operation
	err    error
}

// ErrTruncated reports a file that ended before the span announced in
// Content-Length: it shrank while being sent. The connection must close.
var ErrTruncated = errors.New("origin: file shrank while being sent")

// ErrSendfileUnsupported: the file system cannot sendfile (EINVAL,
// ENOSYS, EOPNOTSUPP); nothing was sent and the copy path must serve.
var ErrSendfileUnsupported = errors.New("origin: sendfile unsupported for this file")

func newTCP(tc *net.TCPConn, l *Listener) (*TCP, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &TCP{TCPConn: tc, raw: raw, ln: l}
	c.writeFn = c.writeMoreOnce
	c.sendfnFn = c.sendfileOnce
	return c, nil
}

// Close releases the connection's place in the listener's limits once.
func (c *TCP) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(c.ln.release)
	return err
}

// Socket returns the TCP connection under c: c itself when it is one, the
// socket under an HTTPS connection, or nil (not accepted by a gate).
func Socket(c net.Conn) *TCP {
	switch t := c.(type) {
	case *TCP:
		return t
	case *tlsConn:
		return t.tcp
	}
	return nil
}
