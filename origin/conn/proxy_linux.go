//go:build linux

package conn

import (
	"errors"
	"io"

	"golang.org/x/sys/unix"

	"segorigin/origin/clientaddr"
)

// peekProxy reads the connection's first bytes with MSG_PEEK, leaving
// them in the socket, until clientaddr.ParseProxy can decide. While the
// bytes are a valid start of a header it waits, on Go's netpoller and
// under the read deadline, for more to arrive: after a peek that changed
// nothing the poller reports readable once more at most, then blocks
// until new bytes come (it is edge-triggered).
//
// Peeking, rather than a buffered reader as github.com/pires/go-proxyproto
// uses, is why this is hand-written: its reader reads ahead, so the first
// request bytes would sit in its buffer and every later Read would have to
// pass through its wrapper, while the TLS handshake, fasthttp and the body
// paths all use this *net.TCPConn directly. Here the socket holds exactly
// the request bytes once the header is consumed.
func (c *TCP) peekProxy(buf []byte) (clientaddr.ProxyHeader, int, error) {
	var (
		h    clientaddr.ProxyHeader
		n    int
		perr error
	)
	err := c.raw.Read(func(fd uintptr) bool {
		for {
			m, _, err := unix.Recvfrom(int(fd), buf, unix.MSG_PEEK)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				return false
			case err != nil:
				perr = err
				return true
			case m == 0:
				perr = io.EOF
				return true
			}
			h, n, perr = clientaddr.ParseProxy(buf[:m])
			return !errors.Is(perr, clientaddr.ErrIncomplete) || m == len(buf)
		}
	})
	if err != nil {
		return h, 0, wrapNetErr("recvfrom", err)
	}
	return h, n, perr
}
