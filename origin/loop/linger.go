//go:build linux

package loop

import (
	"time"

	"golang.org/x/sys/unix"
)

// lingerTimeout bounds how long a connection closed by the server keeps
// reading (and dropping) what its client still sends, from the moment its
// write side is shut; nginx's lingering_timeout is 5 s.
const lingerTimeout = 5 * time.Second

// lingerReads bounds the reads one wake-up spends dropping a lingering
// connection's bytes; epoll (level-triggered) reports the rest.
const lingerReads = 16

// LingerOnClose says the Handler is closing c after an answer to a
// request it did not read to its end (refused before or while its body
// arrived): the client may still be sending, so the close lingers.
func (c *Conn) LingerOnClose() { c.lingerWanted = true }

// closeAfterResponse closes c once its last response is handed to the
// kernel. Closing a socket with unread bytes in it, or with bytes still
// on their way, makes the kernel answer with a reset, and a reset can
// destroy the response before the client has read it (RFC 9112 §9.6:
// a server "SHOULD NOT close the connection ... until it has received
// a reply ... or it has read all of the request", the reason nginx's
// lingering_close exists). So when the client may still be sending (the
// Handler asked, or bytes wait unread) the write side is shut first (the
// response, then a FIN, leave in order) and what arrives is read and
// dropped until the client closes or lingerTimeout passes. A draining
// loop closes at once.
func (l *loop) closeAfterResponse(c *Conn) {
	if c.closed || !lastWord(c) {
		return
	}
	if l.draining || !(c.lingerWanted || l.p.buffered(c.fd) || unread(c.fd)) {
		l.close(c)
		return
	}
	if err := unix.Shutdown(c.fd, unix.SHUT_WR); err != nil {
		l.close(c)
		return
	}
	c.lingering = true
	if c.in != nil {
		l.putBuf(c.in)
		c.in = nil
	}
	l.lingering.push(c, l.now)
	c.setEvents(unix.EPOLLIN)
	if !c.closed {
		l.drop(c)
	}
}

// unread reports whether bytes wait in fd's receive queue.
func unread(fd int) bool {
	n, err := unix.IoctlGetInt(fd, unix.SIOCINQ)
	return err == nil && n > 0
}

// drop reads and discards what a lingering connection received; the
// client's close (or an error) ends it.
func (l *loop) drop(c *Conn) {
	if l.dropBuf == nil {
		l.dropBuf = make([]byte, 64<<10)
	}
	for range lingerReads {
		n, err := l.p.read(c.fd, l.dropBuf)
		switch {
		case err == unix.EAGAIN:
			return
		case err == unix.EINTR:
			continue
		case err != nil || n == 0:
			l.close(c)
			return
		}
	}
}
