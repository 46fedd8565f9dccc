//go:build linux

package loop

import (
	"net"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The system calls a loop makes once per connection (accept4, the
// TCP_NODELAY setsockopt, getsockname, close), as raw system calls, for
// the reason wait.go gives for those of a wake-up: none of them waits
// (the listener and the sockets never block, and a socket's close hands
// any lingering to the kernel), and an ordinary system call would wake
// Go's sysmon from its sleep, back to polling every 20 µs: about fifty
// nanosleeps for each connection a client opens. They are written here
// rather than taken from x/sys/unix also because its Accept4 and
// Getsockname ask the socket its protocol (getsockopt SO_PROTOCOL, to
// tell L2TP from TCP) on every call: one more system call each.

// rawAccept4 takes a connection from the non-blocking listener lfd, non-blocking
// and close-on-exec, with its peer's address.
func rawAccept4(lfd int) (int, *net.TCPAddr, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	fd, _, e := unix.RawSyscall6(unix.SYS_ACCEPT4, uintptr(lfd), uintptr(unsafe.Pointer(&rsa)),
		uintptr(unsafe.Pointer(&n)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, nil, e
	}
	return int(fd), rawToTCP(&rsa), nil
}

// rawGetsockname is the local address of the connected socket fd.
func rawGetsockname(fd int) (*net.TCPAddr, error) { return rawName(unix.SYS_GETSOCKNAME, fd) }

// rawGetpeername is the peer address of the connected socket fd.
func rawGetpeername(fd int) (*net.TCPAddr, error) { return rawName(unix.SYS_GETPEERNAME, fd) }

// rawName is getsockname(2) or getpeername(2) (trap) of fd.
func rawName(trap uintptr, fd int) (*net.TCPAddr, error) {
	var rsa unix.RawSockaddrAny
	n := uint32(unix.SizeofSockaddrAny)
	_, _, e := unix.RawSyscall(trap, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&n)))
	if e != 0 {
		return nil, e
	}
	return rawToTCP(&rsa), nil
}

// rawNoDelay sets TCP_NODELAY on fd.
func rawNoDelay(fd int) error {
	one := int32(1)
	_, _, e := unix.RawSyscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY,
		uintptr(unsafe.Pointer(&one)), 4, 0)
	if e != 0 {
		return e
	}
	return nil
}

// rawClose closes the socket fd. The descriptor is gone whatever close
// returns (Linux frees it even on EINTR), and a socket's close reports
// nothing about data already sent: there is nothing to act on.
func rawClose(fd int) {
	unix.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0)
}

// rawToTCP is the TCP address in rsa (IPv4 as a 16-byte IP, as the net
// package gives it); an empty one for another family.
func rawToTCP(rsa *unix.RawSockaddrAny) *net.TCPAddr {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		a := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		return &net.TCPAddr{IP: net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3]), Port: netPort(a.Port)}
	case unix.AF_INET6:
		a := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		return &net.TCPAddr{IP: net.IP(append([]byte(nil), a.Addr[:]...)), Port: netPort(a.Port)}
	}
	return &net.TCPAddr{}
}

// netPort is a port as the kernel stores it (network byte order) in host
// order.
func netPort(p uint16) int {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return int(b[0])<<8 | int(b[1])
}
