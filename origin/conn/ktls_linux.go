//go:build linux

package conn

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"

	"segorigin/origin/ktls"
)

// ulpList is where the kernel lists the TCP upper-layer protocols it has
// loaded; "tls" appears once the tls module is (CONFIG_TLS).
const ulpList = "/proc/sys/net/ipv4/tcp_available_ulp"

// ktlsProbe is what the start-up probe found.
type ktlsProbe struct {
	ok      bool
	reason  string        // why not, when !ok
	ciphers []ktls.Cipher // those TLS_TX accepted
	// noModule: TCP_ULP said ENOENT and the kernel lists no tls ULP: the
	// module is not loaded (or the kernel lacks CONFIG_TLS). netAdmin
	// says whether this process has CAP_NET_ADMIN, without which the
	// kernel does not load the module on demand.
	noModule bool
	netAdmin bool
}

// probeKTLS tries the hand-over once on a loopback connection per cipher:
// setsockopt(TCP_ULP, "tls") (which also loads the tls module when the
// kernel has it as a module and we may), then TLS_TX with dummy keys.
func probeKTLS() ktlsProbe {
	var p ktlsProbe
	var firstErr error
	for _, c := range ktls.Ciphers {
		err := probeCipher(c)
		if err == nil {
			p.ciphers = append(p.ciphers, c)
			continue
		}
		if firstErr == nil {
			firstErr = err
		}
		if se := (*setsockoptError)(nil); !errors.As(err, &se) || se.opt == "TCP_ULP" {
			break // no ULP (or no socket): no cipher will do
		}
	}
	if len(p.ciphers) > 0 {
		p.ok = true
		return p
	}
	p.reason = probeReason(firstErr)
	var se *setsockoptError
	p.noModule = errors.As(firstErr, &se) && se.opt == "TCP_ULP" && errors.Is(firstErr, unix.ENOENT) && !ulpListed()
	p.netAdmin = hasNetAdmin()
	return p
}

// ulpListed reports whether the kernel lists the tls ULP (a missing or
// unreadable list counts as not).
func ulpListed() bool {
	b, err := os.ReadFile(ulpList)
	return err == nil && slices.Contains(strings.Fields(string(b)), "tls")
}

// hasNetAdmin reports whether CAP_NET_ADMIN is in this process's
// effective set: the kernel's TCP_ULP autoloads the tls module only then.
func hasNetAdmin() bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[unix.CAP_NET_ADMIN/32].Effective&(1<<(unix.CAP_NET_ADMIN%32)) != 0
}

// probeReason words the start-up log line's ktls_reason.
func probeReason(err error) string {
	listed := "lacks tls"
	if _, rerr := os.Stat(ulpList); rerr != nil {
		listed = "unreadable"
	} else if ulpListed() {
		listed = "lists tls"
	}
	var se *setsockoptError
	var errno unix.Errno
	if errors.As(err, &se) && se.opt == "TCP_ULP" && errors.As(err, &errno) {
		return fmt.Sprintf("tls ULP not available: %s %s; setsockopt(TCP_ULP, \"tls\"): %s (%v): kernel without CONFIG_TLS, or module tls not loaded (modprobe tls)",
			ulpList, listed, unix.ErrnoName(errno), errno)
	}
	return fmt.Sprintf("kTLS probe failed: %v (%s %s)", err, ulpList, listed)
}

// probeCipher offers dummy key material for c to the kernel on a fresh
// loopback connection (TCP_ULP needs an established socket).
func probeCipher(c ktls.Cipher) error {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err
	}
	defer ln.Close()
	cc, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return err
	}
	defer cc.Close()
	sc, err := ln.AcceptTCP()
	if err != nil {
		return err
	}
	defer sc.Close()
	raw, err := sc.SyscallConn()
	if err != nil {
		return err
	}
	k, iv, salt, _ := c.Sizes()
	in := ktls.Info{Version: ktls.VersionTLS13, Cipher: c, Key: make([]byte, k), IV: make([]byte, iv), Salt: make([]byte, salt)}
	b, err := in.AppendBinary(nil)
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) { serr = setTX(int(fd), b) }); err != nil {
		return err
	}
	return serr
}

// enableKTLS is the production Offloader: it hands info to the
// kernel for c's transmit direction. On error the socket still carries
// userspace TLS records unchanged (a tls ULP without TLS_TX passes writes
// through), so the connection goes on in user space.
func enableKTLS(c *TCP, info []byte) (OffloadedTX, bool, error) {
	if c == nil {
		return nil, false, errors.New("not a TCP connection")
	}
	var serr error
	if err := c.raw.Control(func(fd uintptr) { serr = setTX(int(fd), info) }); err != nil {
		return nil, false, err
	}
	if serr != nil {
		return nil, false, serr
	}
	return c, true, nil
}

// setTX is setsockopt(fd, SOL_TCP, TCP_ULP, "tls") then
// setsockopt(fd, SOL_TLS, TLS_TX, info).
func setTX(fd int, info []byte) error {
	if err := unix.SetsockoptString(fd, unix.SOL_TCP, unix.TCP_ULP, "tls"); err != nil {
		return &setsockoptError{opt: "TCP_ULP", err: err}
	}
	// x/sys/unix has no setsockopt for a byte slice but the string form,
	// which would copy the key into an immutable string: call it directly.
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_TLS, ktls.OptTX,
		uintptr(unsafe.Pointer(&info[0])), uintptr(len(info)), 0)
	if errno != 0 {
		return &setsockoptError{opt: "TLS_TX", err: errno}
	}
	return nil
}

// closeAlert is a close_notify alert: level warning (1), description
// close_notify (0).
var closeAlert = [2]byte{1, 0}

// CloseNotify sends close_notify on a kTLS socket: sendmsg with a SOL_TLS
// TLS_SET_RECORD_TYPE control message makes the kernel seal the bytes as
// one record of type alert (21) instead of application data.
func (c *TCP) CloseNotify() error {
	oob := alertCmsg()
	var serr error
	err := c.raw.Write(func(fd uintptr) bool {
		_, serr = unix.SendmsgN(int(fd), closeAlert[:], oob, nil, unix.MSG_NOSIGNAL)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// alertCmsg builds the TLS_SET_RECORD_TYPE control message for an alert.
func alertCmsg() []byte {
	b := make([]byte, unix.CmsgSpace(1))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_TLS
	h.Type = ktls.CmsgSetRecordType
	h.SetLen(unix.CmsgLen(1))
	b[unix.CmsgLen(0)] = ktls.RecordAlert
	return b
}

var _ OffloadedTX = (*TCP)(nil)
