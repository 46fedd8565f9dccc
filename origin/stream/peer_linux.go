package stream

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// PeerClosed reports whether the client has closed its side of nc, a
// Conn's Underlying connection (its FIN has arrived: poll(2)'s
// POLLRDHUP), without reading: for a response that waits for its next
// bytes while the connection's goroutine reads nothing, which would
// otherwise see the client leave only at its next write.
func PeerClosed(nc net.Conn) bool {
	var raw syscall.RawConn
	switch nc := nc.(type) {
	case interface{ RawSocket() syscall.RawConn }: // under TLS (origin/conn)
		raw = nc.RawSocket()
	case syscall.Conn:
		raw, _ = nc.SyscallConn()
	}
	if raw == nil {
		return false
	}
	closed := false
	raw.Control(func(fd uintptr) {
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
		n, err := unix.Poll(fds, 0)
		closed = err == nil && n > 0 && fds[0].Revents&(unix.POLLRDHUP|unix.POLLHUP|unix.POLLERR) != 0
	})
	return closed
}
