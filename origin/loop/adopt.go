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

// Sealer is a ConnIO that also seals what the loop sends: TLS in user
// space, where the kernel neither seals nor opens records. The loop hands
// it a response's plaintext instead of sending it, and its file spans are
// read (pread, from resident pages, as the copy path reads them) and
// handed over too, never sendfile'd. Its methods run on the loop's
// thread.
type Sealer interface {
	ConnIO
	// Seal takes plaintext of the response in flight, every slice
	// whole: it is sealed and sent as far as the socket takes it, and
	// what is left waits for Flush. An error ends the connection.
	Seal(p ...[]byte) error
	// Flush sends what Seal left: done when nothing is left (the loop
	// hands it nothing more until then); an error ends the connection.
	Flush() (done bool, err error)
	// Buffered reports whether Read would return bytes the socket will
	// not announce again: records already read from the socket and not
	// yet returned. The loop reads again before it waits.
	Buffered() bool
}

// sealer is c's Sealer, or nil when the loop sends c's bytes itself.
func sealer(c *Conn) Sealer {
	s, _ := c.io.(Sealer)
	return s
}

// flushSealed sends what c's Sealer still holds: false when c now waits
// for room (EPOLLOUT) or has failed.
func flushSealed(c *Conn, s Sealer) bool {
	done, err := s.Flush()
	switch {
	case err != nil:
		c.l.fail(c, err)
		return false
	case !done:
		c.l.e.stats.ShortSends.Add(1)
		c.setEvents(unix.EPOLLOUT)
		return false
	}
	return true
}

// sealMem hands the memory parts from r's cursor on, up to the next file
// part, to s.
func sealMem(c *Conn, s Sealer, r *Response) (n, want int64, err error) {
	bufs := c.l.bufs[:0]
	for i := r.Cursor.Part; i < len(r.Parts) && r.Parts[i].Mem != nil; i++ {
		m := r.Parts[i].Mem
		if i == r.Cursor.Part {
			m = m[r.Cursor.Off:]
		}
		bufs = append(bufs, m)
		want += int64(len(m))
	}
	err = s.Seal(bufs...)
	clear(bufs) // the loop keeps no reference to a response's memory
	c.l.bufs = bufs[:0]
	if err != nil {
		return 0, want, err
	}
	return want, want, nil
}

// readAgain (a function, as sent) reads the connections whose Sealer
// holds what their socket will not announce again (Buffered), queued by
// settle.
func readAgain(l *loop) {
	again := l.again
	l.again = l.spareAgain[:0]
	for i, c := range again {
		again[i] = nil
		if !c.closed {
			l.read(c)
		}
	}
	l.spareAgain = again[:0]
}

// queueRead queues c for readAgain when it waits to read and its Sealer
// holds what its socket will not announce again.
func queueRead(l *loop, c *Conn) {
	if s := sealer(c); s != nil && s.Buffered() {
		l.again = append(l.again, c)
	}
}
