//go:build linux

package conn

import (
	"crypto/tls"
	"errors"
	"io"
	"sync"

	"golang.org/x/sys/unix"
)

// UserLoopConn is an HTTPS connection whose records crypto/tls seals and
// opens in user space (the kernel has no kTLS, or refused it), detached
// from its goroutine once the handshake is over, for an event loop to
// serve (origin/loop's Sealer): the goroutine's stack, its read buffer
// and two wake-ups a request go, as they did for plain HTTP.
//
// The same crypto/tls connection goes on, so nothing it read past the
// client's Finished is lost and session tickets, KeyUpdate and alerts
// keep working: under it, recordConn reads the socket without blocking
// (one read(2) per readiness; nothing there is a temporary error, which
// crypto/tls hands back without failing the connection) and gathers the
// records crypto/tls writes. Read opens what arrived; Seal seals a
// response's plaintext and sends the records in one write, as far as the
// socket takes them; Flush sends the rest once it has room; Closing
// sends close_notify. Its methods run on the loop's thread.
type UserLoopConn struct {
	adoptedGate
	fd  int
	tc  *tls.Conn
	rec *recordConn

	outp *[]byte // the gatherPool buffer rec.out is in; nil when nothing waits
	sent int     // of rec.out, what the socket took
	full bool    // Seal's send was short: the socket has no room until the loop sees EPOLLOUT

	started  bool  // Read has run once (what the handshake read ahead is opened then)
	more     bool  // the last Read filled its buffer: crypto/tls may hold more
	err      error // what ended reading, given after the bytes read before it
	notified bool  // close_notify was sealed
}

// wouldBlock is a loop connection's read when its socket has nothing
// more now: a temporary net.Error, which crypto/tls hands back without
// failing the connection.
type wouldBlock struct{}

func (wouldBlock) Error() string   { return "conn: the socket has nothing more to read now" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// readLoop is recordConn's Read once a loop serves the connection: one
// read(2) per readiness (loopDrained says the socket had no more).
func (r *recordConn) readLoop(p []byte) (int, error) {
	if r.loopDrained {
		return 0, wouldBlock{}
	}
	n, err := unix.Read(r.loopFD, p)
	switch {
	case err == unix.EAGAIN || err == unix.EINTR:
		r.loopDrained = true
		return 0, wouldBlock{}
	case err != nil:
		return 0, err
	case n == 0:
		return 0, io.EOF
	}
	r.loopDrained = n < len(p)
	return n, nil
}

// handOffUser detaches c, whose records crypto/tls seals and opens, to an
// event loop (adopt): true when it went, or was lost on the way (counted).
func (c *tlsConn) handOffUser(adopt func(fd int, a Adopted) error) bool {
	stats := c.tls.stats
	uc, err := c.detachUser()
	if err != nil {
		stats.TransportStreamUserspace.Add(1)
		stats.HandOffDetach.Add(1)
		c.tls.logHandOff(err)
		return false
	}
	if err := adopt(uc.fd, uc); err != nil {
		stats.HandOffEngine.Add(1)
		c.tls.log.Debug("TLS: an event loop refused the connection: closed", "client", uc.remote, "err", err)
		return true
	}
	stats.TransportLoopUserspace.Add(1)
	return true
}

// detachUser takes c's socket away from its goroutine, as detach does,
// keeping its crypto/tls connection, whose recordConn reads and writes
// the duplicate descriptor without blocking from then on.
func (c *tlsConn) detachUser() (*UserLoopConn, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.rec.broken.Load() || c.rec.denied.Load() {
		return nil, errors.New("the connection's stream is broken")
	}
	fd, err := c.dupSocket()
	if err != nil {
		return nil, err
	}
	rec := c.rec
	rec.loopFD, rec.onLoop, rec.gather, rec.framing = fd, true, true, false
	uc := &UserLoopConn{adoptedGate: c.gate(), fd: fd, tc: c.Conn, rec: rec}
	uc.state = uc.tc.ConnectionState
	c.closed = true
	c.tcp.Close()
	return uc, nil
}

// Read reads plaintext into p as read(2) does (EAGAIN: nothing yet): it
// opens what the socket has now, until p is full (Buffered then says more
// may be held) or crypto/tls needs more than arrived. 0 and an error or
// io.EOF once the connection ended (close_notify, an alert, a bad record).
func (uc *UserLoopConn) Read(p []byte) (int, error) {
	if uc.err != nil {
		return 0, uc.err
	}
	uc.started, uc.more, uc.rec.loopDrained = true, false, false
	k := 0
	for k < len(p) {
		n, err := uc.tc.Read(p[k:])
		k += n
		if _, ok := err.(wouldBlock); ok {
			break
		}
		if err != nil {
			uc.err = err
			if errors.Is(err, io.EOF) {
				uc.err = io.EOF
			}
			return k, nil // the bytes first; the error at the next Read
		}
	}
	uc.more = k == len(p)
	if k == 0 {
		return 0, unix.EAGAIN
	}
	return k, nil
}

// Buffered reports whether Read may return bytes the socket will not
// announce again: before the first Read (the handshake may have read a
// request with the client's Finished), and after a Read that filled its
// buffer. A Read that stops for want of bytes has opened every whole
// record it read.
func (uc *UserLoopConn) Buffered() bool { return !uc.started || uc.more }

// sealPool holds the buffers Seal joins a response's memory parts in, so
// that a header and a small body leave as one record, as the stream
// transport's one write of them does.
var sealPool = sync.Pool{New: func() any {
	b := make([]byte, 0, TLSRecordSize)
	return &b
}}

// Seal seals p's plaintext into records (one for all of it when it fits)
// and sends them as far as the socket takes them; Flush sends the rest.
func (uc *UserLoopConn) Seal(p ...[]byte) error {
	if uc.outp == nil {
		uc.outp = gatherPool.Get().(*[]byte)
		uc.rec.out = (*uc.outp)[:0]
	}
	total := 0
	for _, b := range p {
		total += len(b)
	}
	var err error
	if len(p) > 1 && total <= TLSRecordSize {
		jp := sealPool.Get().(*[]byte)
		j := (*jp)[:0]
		for _, b := range p {
			j = append(j, b...)
		}
		_, err = uc.tc.Write(j)
		*jp = j[:0]
		sealPool.Put(jp)
	} else {
		for _, b := range p {
			if _, err = uc.tc.Write(b); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err
	}
	done, err := uc.send()
	uc.full = !done
	return err
}

// Flush sends the sealed records Seal left: done when none is left. A
// short send stops it (the socket is full: the loop waits for room), and
// after Seal's own was short, the first Flush reports not done without
// trying again.
func (uc *UserLoopConn) Flush() (done bool, err error) {
	if uc.full {
		uc.full = false
		return false, nil
	}
	return uc.send()
}

// send writes what waits in rec.out, once.
func (uc *UserLoopConn) send() (done bool, err error) {
	out := uc.rec.out
	if uc.sent < len(out) {
		n, err := unix.SendmsgN(uc.fd, out[uc.sent:], nil, nil, unix.MSG_NOSIGNAL)
		switch {
		case err == unix.EAGAIN || err == unix.EINTR:
			return false, nil
		case err != nil:
			uc.rec.broken.Store(true)
			return false, err
		}
		uc.sent += n
		if uc.sent < len(out) {
			return false, nil
		}
	}
	uc.sent = 0
	uc.rec.out = out[:0]
	if uc.outp != nil {
		*uc.outp = out[:0]
		gatherPool.Put(uc.outp)
		uc.outp, uc.rec.out = nil, nil
	}
	return true, nil
}

// Closing sends close_notify after what Seal left, once, without
// waiting: false when the socket has no room for it all yet (try again
// once it has). After a failed send (a record may have been cut short)
// nothing more is sent.
func (uc *UserLoopConn) Closing() bool {
	if uc.rec.broken.Load() {
		return true
	}
	if !uc.notified {
		uc.notified = true
		// crypto/tls seals the alert into rec.out; its error is only
		// that of setting a deadline on the socket's closed original.
		_ = uc.tc.CloseWrite()
	}
	done, err := uc.Flush()
	return done || err != nil
}
