//go:build linux

package loop

import (
	"fmt"
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// ConnIO is an adopted connection's own read and close, for a socket
// whose bytes are not all the peer's request stream: on a socket whose
// TLS records the kernel opens (kTLS), a read fails with EIO at a
// control record, which must be read and acted on, and the server's
// close is preceded by a close_notify record. It is readiness-based:
// Read is called when the socket is readable, as read(2) would be, and
// never blocks. Sends are the loop's own (the kernel seals them). Its
// methods run on the loop's thread.
type ConnIO interface {
	// Read reads into p as read(2) on the connection's socket: EAGAIN
	// when nothing is ready (the loop waits for the next readiness),
	// 0 or another error when the connection ends.
	Read(p []byte) (int, error)
	// Closing is called before the server shuts the socket's write
	// side and before it closes the socket: its last words, sent once
	// and without blocking. false: the socket has no room for them yet;
	// on a clean close (after a response, an idle connection at the
	// drain) the loop waits until it has (under the write timeout) and
	// calls it again, on any other it closes without them. (A kTLS
	// socket closed with records the kernel has not yet pushed to TCP
	// drops them: room for the close_notify says they have left.)
	Closing() bool
}

// Serving reports whether the engine's loops run and take adopted
// connections (Serve has started them, Shutdown has not begun).
func (e *Engine) Serving() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.loops) > 0 && !e.draining.Load()
}

// WaitServing waits up to d for Serve to set the loops up, and reports
// whether they take adopted connections (Serving).
func (e *Engine) WaitServing(d time.Duration) bool {
	if !e.Serving() {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-e.started:
		case <-t.C:
		}
	}
	return e.Serving()
}

// listenerFD is ln's descriptor, or -1 for no listener (adopted
// connections only).
func listenerFD(ln *net.TCPListener) (int, error) {
	if ln == nil {
		return -1, nil
	}
	raw, err := ln.SyscallConn()
	if err != nil {
		return -1, fmt.Errorf("loop: listener: %w", err)
	}
	lfd := -1
	if err := raw.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
		return -1, fmt.Errorf("loop: listener: %w", err)
	}
	return lfd, nil
}

// IO is what reads and closes c when it was adopted with one (AdoptIO),
// or nil.
func (c *Conn) IO() ConnIO { return c.io }

// readIn reads what arrived at c into p.
func readIn(c *Conn, p []byte) (int, error) {
	if c.io != nil {
		return c.io.Read(p)
	}
	return c.l.p.read(c.fd, p)
}

// closeIO gives c's ConnIO its last words, best effort.
func closeIO(c *Conn) {
	if c.io != nil {
		c.io.Closing()
	}
}

// lastWord gives c's ConnIO its last words before a clean close: false
// when the socket has no room for them yet, and c waits for room (under
// the write timeout), when closeAfterResponse runs again.
func lastWord(c *Conn) bool {
	if c.io == nil || c.io.Closing() {
		c.wordWait = false
		return true
	}
	c.wordWait = true
	c.l.writing.push(c, c.l.now)
	c.setEvents(unix.EPOLLOUT)
	return false
}

// ioView is c as a net.Conn for fasthttp: the ConnIO's view of it when it
// has one (an HTTPS connection answers ConnectionState).
func ioView(c *Conn, v net.Conn) net.Conn {
	if w, ok := c.io.(interface{ View(net.Conn) net.Conn }); ok {
		return w.View(v)
	}
	return v
}
