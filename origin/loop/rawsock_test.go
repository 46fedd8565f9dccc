//go:build linux

package loop

import (
	"errors"
	"net"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestRawAccept: the raw accept4, getpeername and getsockname give the
// addresses the net package gives for the same connection, over IPv4 and IPv6.
func TestRawAccept(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("no %s here: %v", addr, err) // a host without IPv6
			}
			defer ln.Close()
			rc, err := ln.(*net.TCPListener).SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var lfd int
			if err := rc.Control(func(fd uintptr) { lfd = int(fd) }); err != nil {
				t.Fatal(err)
			}
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var fd int
			var remote *net.TCPAddr
			for deadline := time.Now().Add(5 * time.Second); ; {
				fd, remote, err = rawAccept4(lfd)
				if !errors.Is(err, unix.EAGAIN) || time.Now().After(deadline) {
					break
				}
				time.Sleep(time.Millisecond)
			}
			if err != nil {
				t.Fatalf("accept4: %v", err)
			}
			defer rawClose(fd)
			if want := c.LocalAddr().(*net.TCPAddr); !remote.IP.Equal(want.IP) || remote.Port != want.Port {
				t.Errorf("peer %v, want %v", remote, want)
			}
			if peer, err := rawGetpeername(fd); err != nil || !peer.IP.Equal(remote.IP) || peer.Port != remote.Port {
				t.Errorf("getpeername %v (%v), want %v", peer, err, remote)
			}
			local, err := rawGetsockname(fd)
			if want := ln.Addr().(*net.TCPAddr); err != nil || !local.IP.Equal(want.IP) || local.Port != want.Port {
				t.Errorf("local %v (%v), want %v", local, err, want)
			}
			if err := rawNoDelay(fd); err != nil {
				t.Errorf("TCP_NODELAY: %v", err)
			}
			if v, err := unix.GetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY); err != nil || v == 0 {
				t.Errorf("TCP_NODELAY reads %d (%v)", v, err)
			}
			flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
			if err != nil || flags&unix.O_NONBLOCK == 0 {
				t.Errorf("accepted socket's flags %#x (%v): want O_NONBLOCK", flags, err)
			}
		})
	}
}
