//go:build linux

package conn

import (
	"errors"
	"fmt"
	"io"
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
	ok        bool
	reason    string        // why not, when !ok
	ciphers   []ktls.Cipher // those TLS_TX accepted
	rxCiphers []ktls.Cipher // those TLS_RX accepted after TLS_TX
	rxReason  string        // why none, when TLS_TX took some but TLS_RX none
	// noModule: TCP_ULP said ENOENT and the kernel lists no tls ULP: the
	// module is not loaded (or the kernel lacks CONFIG_TLS). netAdmin
	// says whether this process has CAP_NET_ADMIN, without which the
	// kernel does not load the module on demand.
	noModule bool
	netAdmin bool
}

// probeKTLS tries the hand-over once on a loopback connection per cipher:
// setsockopt(TCP_ULP, "tls") (which also loads the tls module when the
// kernel has it as a module and we may), then TLS_TX and TLS_RX with
// dummy keys.
func probeKTLS() ktlsProbe {
	var p ktlsProbe
	var firstErr, rxErr error
	for _, c := range ktls.Ciphers {
		err, rerr := probeCipher(c)
		if err == nil {
			p.ciphers = append(p.ciphers, c)
			if rerr == nil {
				p.rxCiphers = append(p.rxCiphers, c)
			} else if rxErr == nil {
				rxErr = rerr
			}
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
		if len(p.rxCiphers) == 0 && rxErr != nil {
			p.rxReason = rxErr.Error()
		}
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
// loopback connection (TCP_ULP needs an established socket): txErr for
// TCP_ULP and TLS_TX, rxErr for TLS_RX after them.
func probeCipher(c ktls.Cipher) (txErr, rxErr error) {
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return err, err
	}
	defer ln.Close()
	cc, err := net.DialTCP("tcp", nil, ln.Addr().(*net.TCPAddr))
	if err != nil {
		return err, err
	}
	defer cc.Close()
	sc, err := ln.AcceptTCP()
	if err != nil {
		return err, err
	}
	defer sc.Close()
	raw, err := sc.SyscallConn()
	if err != nil {
		return err, err
	}
	k, iv, salt, _ := c.Sizes()
	in := ktls.Info{Version: ktls.VersionTLS13, Cipher: c, Key: make([]byte, k), IV: make([]byte, iv), Salt: make([]byte, salt)}
	b, err := in.AppendBinary(nil)
	if err != nil {
		return err, err
	}
	if err := raw.Control(func(fd uintptr) {
		if txErr = setTX(int(fd), b); txErr == nil {
			rxErr = setCryptoInfo(int(fd), ktls.OptRX, "TLS_RX", b)
		}
	}); err != nil {
		return err, err
	}
	return txErr, rxErr
}

// enableKTLS is the production Offloader: it hands tx to the kernel for
// c's transmit direction, then rx for its receive direction. On a
// transmit error the socket still carries userspace TLS records unchanged
// (a tls ULP without TLS_TX passes writes through), so the connection goes
// on in user space; on a receive error (TLS_RX refused) reads still pass
// ciphertext through to crypto/tls, and the kernel seals.
func enableKTLS(c *TCP, tx, rx []byte) (Offload, error) {
	if c == nil {
		return Offload{}, errors.New("not a TCP connection")
	}
	var txErr, rxErr error
	if err := c.raw.Control(func(fd uintptr) {
		if txErr = setTX(int(fd), tx); txErr == nil && rx != nil {
			rxErr = setCryptoInfo(int(fd), ktls.OptRX, "TLS_RX", rx)
		}
	}); err != nil {
		return Offload{}, err
	}
	if txErr != nil {
		return Offload{}, txErr
	}
	off := Offload{TX: sockTX{c}, Kernel: true}
	if rx != nil && rxErr == nil {
		off.RX = sockRX{c}
	}
	off.RXErr = rxErr
	return off, nil
}

// setTX is setsockopt(fd, SOL_TCP, TCP_ULP, "tls") then
// setsockopt(fd, SOL_TLS, TLS_TX, info).
func setTX(fd int, info []byte) error {
	if err := unix.SetsockoptString(fd, unix.SOL_TCP, unix.TCP_ULP, "tls"); err != nil {
		return &setsockoptError{opt: "TCP_ULP", err: err}
	}
	return setCryptoInfo(fd, ktls.OptTX, "TLS_TX", info)
}

// setCryptoInfo is setsockopt(fd, SOL_TLS, opt, info). x/sys/unix has no
// setsockopt for a byte slice but the string form, which would copy the
// key into an immutable string: call it directly.
func setCryptoInfo(fd, opt int, name string, info []byte) error {
	_, _, errno := unix.Syscall6(unix.SYS_SETSOCKOPT, uintptr(fd), unix.SOL_TLS, uintptr(opt),
		uintptr(unsafe.Pointer(&info[0])), uintptr(len(info)), 0)
	if errno != 0 {
		return &setsockoptError{opt: name, err: errno}
	}
	return nil
}

// sockTX is the transmit direction of a socket the kernel seals.
type sockTX struct{ c *TCP }

func (s sockTX) Write(p []byte) (int, error) { return s.c.TCPConn.Write(p) }

// SendRecord sends p as one record of type typ (sendRecord).
func (s sockTX) SendRecord(typ uint8, p []byte) error {
	var serr error
	err := s.c.raw.Write(func(fd uintptr) bool {
		serr = sendRecord(int(fd), typ, p)
		return serr != unix.EAGAIN
	})
	if err != nil {
		return err
	}
	return serr
}

// sendRecord sends p as one record of type typ: sendmsg with a SOL_TLS
// TLS_SET_RECORD_TYPE control message makes the kernel seal it as that
// type instead of application data.
func sendRecord(fd int, typ uint8, p []byte) error {
	_, err := unix.SendmsgN(fd, p, recordTypeCmsg(typ), nil, unix.MSG_NOSIGNAL|unix.MSG_DONTWAIT)
	return err
}

// Rekey gives the kernel the next transmit keys (Linux 6.14: TLS 1.3).
func (s sockTX) Rekey(info []byte) error { return s.c.setCryptoInfo(ktls.OptTX, "TLS_TX", info) }

// sockRX is the receive direction of a socket the kernel opens.
type sockRX struct{ c *TCP }

// Read reads application data: a read(2) on the socket, which fails with
// EIO at a record of another type (there is no room for its type).
func (s sockRX) Read(p []byte) (int, error) {
	n, err := s.c.TCPConn.Read(p)
	if errors.Is(err, unix.EIO) {
		return n, ErrControlRecord
	}
	return n, err
}

// ReadControl reads the record at the head (readControl).
func (s sockRX) ReadControl(buf []byte) (uint8, int, error) {
	var typ uint8
	var n int
	var rerr error
	err := s.c.raw.Read(func(fd uintptr) bool {
		typ, n, rerr = readControl(int(fd), buf)
		return rerr != unix.EAGAIN
	})
	if err != nil {
		return 0, 0, err
	}
	return typ, n, rerr
}

// readControl reads the record at the head of fd with recvmsg and a
// TLS_GET_RECORD_TYPE control message, which gives its type.
func readControl(fd int, buf []byte) (uint8, int, error) {
	var oob [32]byte // unix.CmsgSpace(1) is 24 on 64-bit Linux
	n, oobn, _, _, err := unix.Recvmsg(fd, buf, oob[:], unix.MSG_DONTWAIT)
	switch {
	case err != nil:
		return 0, 0, err
	case n == 0:
		return 0, 0, io.EOF
	}
	msgs, err := unix.ParseSocketControlMessage(oob[:oobn])
	if err != nil {
		return 0, 0, err
	}
	for _, m := range msgs {
		if m.Header.Level == unix.SOL_TLS && m.Header.Type == ktls.CmsgGetRecordType && len(m.Data) == 1 {
			return m.Data[0], n, nil
		}
	}
	return 0, 0, errors.New("recvmsg on a kTLS socket: no TLS_GET_RECORD_TYPE")
}

// Rekey gives the kernel the client's next keys (Linux 6.14: TLS 1.3;
// before, TLS_RX is refused once set).
func (s sockRX) Rekey(info []byte) error { return s.c.setCryptoInfo(ktls.OptRX, "TLS_RX", info) }

func (c *TCP) setCryptoInfo(opt int, name string, info []byte) error {
	var serr error
	if err := c.raw.Control(func(fd uintptr) { serr = setCryptoInfo(int(fd), opt, name, info) }); err != nil {
		return err
	}
	return serr
}

// recordTypeCmsg builds the TLS_SET_RECORD_TYPE control message for typ.
func recordTypeCmsg(typ uint8) []byte {
	b := make([]byte, unix.CmsgSpace(1))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level = unix.SOL_TLS
	h.Type = ktls.CmsgSetRecordType
	h.SetLen(unix.CmsgLen(1))
	b[unix.CmsgLen(0)] = typ
	return b
}

var (
	_ OffloadedTX = sockTX{}
	_ OffloadedRX = sockRX{}
)
