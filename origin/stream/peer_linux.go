package stream

import (
	"encoding/binary"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerClosed reports whether the client has closed its side of nc, a
// Conn's Underlying connection (its FIN has arrived: poll(2)'s
// POLLRDHUP), without reading: for a response that waits for its next
// bytes while the connection's goroutine reads nothing, which would
// otherwise see the client leave only at its next write.
func PeerClosed(nc net.Conn) bool {
	raw := rawSocket(nc)
	if raw == nil {
		return false
	}
	closed := false
	raw.Control(func(fd uintptr) { closed = rdhup(fd) })
	return closed
}

// rawSocket is nc's socket, under TLS too; nil if it has none.
func rawSocket(nc net.Conn) syscall.RawConn {
	var raw syscall.RawConn
	switch nc := nc.(type) {
	case interface{ RawSocket() syscall.RawConn }: // under TLS (origin/conn)
		raw = nc.RawSocket()
	case syscall.Conn:
		raw, _ = nc.SyscallConn()
	}
	return raw
}

// rdhup: the client's FIN has arrived on fd, or it was reset (poll(2)
// with no wait).
func rdhup(fd uintptr) bool {
	fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
}

// ParkUntilGone parks c as Park does and, while it waits, watches the
// socket for the client leaving: its FIN (after any bytes it sent before
// it, such as a TLS close_notify), a reset or an error closes c, and the
// Handler's Closed lets the parked request go, as loop.Conn's
// ParkUntilGone does on the event loops. Bytes the client sends meanwhile
// without leaving (a pipelined request) wait, unread, for the answer.
func (c *Conn) ParkUntilGone() {
	c.parked = true
	c.watchPeer = true
}

// peerWatch watches the sockets of parked connections (ParkUntilGone)
// for their clients leaving. A goroutine each would cost a parked request
// its goroutine's heap and a netpoller wait; this is one epoll instance
// of the server's own, which asks only for a FIN, a hang-up or an error
// (EPOLLRDHUP, never EPOLLIN: a request sent behind the parked one is not
// the client leaving), one-shot, and one goroutine that waits on it,
// started with the first watch and ended by Shutdown (an eventfd wakes
// it). A watched connection costs an epoll entry and a map entry. Only
// the connection's own goroutine adds and removes it, before its socket
// closes, so a descriptor number is never taken for another's; events
// carry an id, not the descriptor.
type peerWatch struct {
	mu    sync.Mutex // protects all below
	epfd  int        // 0: not started
	evfd  int        // wakes the goroutine to end
	err   error      // why the watch could not start; parked requests then wait as Park's do
	log   *slog.Logger
	next  uint64
	conns map[uint64]*Conn
	done  chan struct{} // closed when the goroutine has ended
}

// watchPeer adds c's socket to its server's watch.
func watchPeer(c *Conn) {
	raw := rawSocket(c.nc)
	if raw == nil {
		return
	}
	c.watchID = c.s.peers.add(c, raw)
}

// unwatchPeer takes c's socket off the watch; c's goroutine, before the
// socket closes.
func unwatchPeer(c *Conn) {
	if c.watchID == 0 {
		return
	}
	id := c.watchID
	c.watchID = 0
	c.s.peers.remove(id, rawSocket(c.nc))
}

// add watches raw for c and returns its id; 0 where the watch could not
// start or raw could not be added (the request then waits as Park's do).
func (w *peerWatch) add(c *Conn, raw syscall.RawConn) uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.epfd == 0 && w.err == nil {
		w.log = c.s.log
		w.err = w.start()
		if w.err != nil {
			c.s.log.Warn("stream: parked connections are not watched for their clients leaving", "err", w.err)
		}
	}
	if w.err != nil {
		return 0
	}
	w.next++
	id := w.next
	ev := unix.EpollEvent{Events: unix.EPOLLRDHUP | unix.EPOLLHUP | unix.EPOLLERR | unix.EPOLLONESHOT,
		Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
	var err error
	if cerr := raw.Control(func(fd uintptr) { err = unix.EpollCtl(w.epfd, unix.EPOLL_CTL_ADD, int(fd), &ev) }); cerr != nil || err != nil {
		return 0
	}
	w.conns[id] = c
	return id
}

// remove takes id off the watch; raw, the socket, still open.
func (w *peerWatch) remove(id uint64, raw syscall.RawConn) {
	w.mu.Lock()
	delete(w.conns, id)
	epfd := w.epfd
	w.mu.Unlock()
	if raw != nil && epfd != 0 {
		// EBADF or ENOENT: the socket closed under Shutdown's deadline
		// (the kernel took it off); nothing else can fail here.
		raw.Control(func(fd uintptr) { unix.EpollCtl(epfd, unix.EPOLL_CTL_DEL, int(fd), nil) })
	}
}

// start makes the epoll instance and the eventfd and starts the
// goroutine; w.mu is held.
func (w *peerWatch) start() error {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return fmt.Errorf("epoll_create1: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN} // id 0
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return fmt.Errorf("epoll_ctl the eventfd: %w", err)
	}
	w.epfd, w.evfd, w.conns, w.done = epfd, evfd, map[uint64]*Conn{}, make(chan struct{})
	go w.run(epfd, w.done)
	return nil
}

// run waits for the watched sockets and posts the close of each whose
// client left; it ends when the eventfd is written (stop).
func (w *peerWatch) run(epfd int, done chan struct{}) {
	defer close(done)
	var evs [64]unix.EpollEvent
	for {
		n, err := unix.EpollWait(epfd, evs[:], -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return // epfd is the watch's own: EBADF only after stop
		}
		for _, ev := range evs[:n] {
			id := uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32
			if id == 0 {
				return
			}
			w.mu.Lock()
			c := w.conns[id]
			w.mu.Unlock()
			if c != nil {
				c.Post(func() { leftWhileParked(c) })
			}
		}
	}
}

// leftWhileParked closes c if its request is still parked: its client
// left (peerWatch). Run on c's goroutine.
func leftWhileParked(c *Conn) {
	if c.parked && !c.closed {
		c.close()
	}
}

// stop ends the goroutine and closes the watch (Shutdown, once every
// connection has ended).
func (w *peerWatch) stop() {
	w.mu.Lock()
	epfd, evfd, done, log := w.epfd, w.evfd, w.done, w.log
	w.epfd, w.evfd, w.conns, w.done = 0, 0, nil, nil
	w.mu.Unlock()
	if epfd == 0 {
		return
	}
	var one [8]byte
	binary.NativeEndian.PutUint64(one[:], 1) // the eventfd counter's increment
	if _, err := unix.Write(evfd, one[:]); err != nil {
		// Only EAGAIN at a counter near 2^64, which nothing else
		// writes: the goroutine is left waiting, said once.
		log.Error("stream: the peer watch's goroutine cannot be woken to end", "err", err)
		return
	}
	<-done
	unix.Close(epfd)
	unix.Close(evfd)
}
