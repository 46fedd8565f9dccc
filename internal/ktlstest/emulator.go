package ktlstest

import (
	"bytes"
	"errors"
	"sync"
	"sync/atomic"
	"syscall"

	"segorigin/origin/conn"
	"segorigin/origin/ktls"
)

// KTLSEmulator stands in for the kernel's TLS_TX and TLS_RX: it takes
// exactly the crypto_info bytes setsockopt would get, parses them back,
// seals what the connection writes into records and opens what the
// client sends, in user space (Sealer and Opener build nonces and
// sequence numbers as the kernel does). A stock TLS client that reads
// those records, and requests it sent that open, prove the key, IV, salt
// and sequence number handed over are right.
//
// Set its fields before the first connection.
type KTLSEmulator struct {
	mu      sync.Mutex // protects infos and rxInfos
	infos   []ktls.Info
	rxInfos []ktls.Info

	// SeqShift and RXSeqShift are added to the handed-over sequence
	// numbers (negative tests: an off-by-one must fail with bad record
	// MAC).
	SeqShift, RXSeqShift uint64
	// RefuseRX makes TLS_RX fail, as on a kernel with kTLS transmit only.
	RefuseRX bool
	// Rekey takes new TLS 1.3 keys on a live socket, as Linux 6.14 does;
	// without it a second TLS_TX or TLS_RX fails with EBUSY, as before.
	Rekey bool

	Records atomic.Int64 // records sealed
	Opened  atomic.Int64 // records opened
}

// EmulateKTLS makes t hand connections to an emulator instead of the
// kernel. Call it before serving, with KTLSAlways (other modes attempt
// the hand-over only if the start-up probe succeeded).
func EmulateKTLS(t *conn.TLS) *KTLSEmulator {
	e := &KTLSEmulator{}
	t.SetOffloader(e.offload)
	return e
}

// Infos returns what every hand-over passed to the "kernel" for the
// transmit direction.
func (e *KTLSEmulator) Infos() []ktls.Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ktls.Info(nil), e.infos...)
}

// RXInfos returns what every hand-over passed for the receive direction
// (also when RefuseRX refused it).
func (e *KTLSEmulator) RXInfos() []ktls.Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ktls.Info(nil), e.rxInfos...)
}

// errRefused is what a refused setsockopt says.
var errRefused = errors.New("ktlstest: setsockopt refused (emulated kernel)")

func (e *KTLSEmulator) offload(c *conn.TCP, tx, rx []byte) (conn.Offload, error) {
	in, err := ktls.ParseInfo(tx)
	if err != nil {
		return conn.Offload{}, err
	}
	e.mu.Lock()
	e.infos = append(e.infos, in)
	e.mu.Unlock()
	in.Seq += e.SeqShift
	s, err := NewSealer(in)
	if err != nil {
		return conn.Offload{}, err
	}
	off := conn.Offload{TX: &emulatedTX{c: c, s: s, e: e}}
	if rx == nil {
		return off, nil
	}
	rin, err := ktls.ParseInfo(rx)
	if err != nil {
		off.RXErr = err
		return off, nil
	}
	e.mu.Lock()
	e.rxInfos = append(e.rxInfos, rin)
	e.mu.Unlock()
	if e.RefuseRX {
		off.RXErr = errRefused
		return off, nil
	}
	rin.Seq += e.RXSeqShift
	o, err := NewOpener(rin)
	if err != nil {
		off.RXErr = err
		return off, nil
	}
	off.RX = &emulatedRX{c: c, o: o, e: e}
	return off, nil
}

// emulatedTX is one connection's emulated kTLS transmit side.
type emulatedTX struct {
	mu  sync.Mutex // protects s and buf (Close may race a Write)
	c   *conn.TCP
	s   *Sealer
	e   *KTLSEmulator
	buf []byte
}

func (x *emulatedTX) Write(p []byte) (int, error) {
	return x.seal(ktls.RecordApplicationData, p)
}

func (x *emulatedTX) SendRecord(typ uint8, p []byte) error {
	_, err := x.seal(typ, p)
	return err
}

func (x *emulatedTX) Rekey(info []byte) error {
	if !x.e.Rekey {
		return syscall.EBUSY
	}
	in, err := ktls.ParseInfo(info)
	if err != nil {
		return err
	}
	s, err := NewSealer(in)
	if err != nil {
		return err
	}
	x.mu.Lock()
	x.s = s
	x.mu.Unlock()
	return nil
}

// seal cuts p into records of at most 16 KiB, as the kernel does, and
// writes them through the TCP connection (MSG_MORE marks apply).
func (x *emulatedTX) seal(typ uint8, p []byte) (int, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.buf = x.buf[:0]
	for rest := p; len(rest) > 0; {
		n := min(len(rest), ktls.MaxPlaintext)
		var err error
		if x.buf, err = x.s.Seal(x.buf, typ, rest[:n]); err != nil {
			return 0, err
		}
		x.e.Records.Add(1)
		rest = rest[n:]
	}
	if _, err := x.c.Write(x.buf); err != nil {
		return 0, err
	}
	return len(p), nil
}

// emulatedRX is one connection's emulated kTLS receive side: it reads
// whole records from the socket and opens them, hands application data
// to Read and stops at any other record (the kernel's EIO) until
// ReadControl takes it. After a KeyUpdate it opens nothing until Rekey
// (Linux 6.14 pauses the same way). All calls come from the serving
// goroutine.
type emulatedRX struct {
	c *conn.TCP
	o *Opener
	e *KTLSEmulator

	in      []byte // ciphertext read, not yet opened
	plain   []byte // plaintext of the application data record in progress
	ctl     []byte // a control record waiting for ReadControl
	ctlType uint8
	hasCtl  bool
	paused  bool
	err     error // a record that did not open: every later read fails (EBADMSG)
}

func (x *emulatedRX) Read(p []byte) (int, error) {
	for len(x.plain) == 0 {
		if x.hasCtl {
			return 0, conn.ErrControlRecord
		}
		if err := x.next(); err != nil {
			return 0, err
		}
	}
	n := copy(p, x.plain)
	x.plain = x.plain[n:]
	return n, nil
}

func (x *emulatedRX) ReadControl(buf []byte) (uint8, int, error) {
	if !x.hasCtl {
		return 0, 0, errors.New("ktlstest: no control record at the head")
	}
	x.hasCtl = false
	return x.ctlType, copy(buf, x.ctl), nil
}

func (x *emulatedRX) Rekey(info []byte) error {
	if !x.e.Rekey {
		return syscall.EBUSY
	}
	in, err := ktls.ParseInfo(info)
	if err != nil {
		return err
	}
	if x.o, err = NewOpener(in); err != nil {
		return err
	}
	x.paused = false
	return nil
}

// next reads and opens one record.
func (x *emulatedRX) next() error {
	switch {
	case x.err != nil:
		return x.err
	case x.paused:
		return syscall.EKEYEXPIRED
	}
	var buf [4096]byte
	whole := func() bool { n := RecordLen(x.in); return n > 0 && len(x.in) >= n }
	for !whole() {
		k, err := x.c.Read(buf[:])
		x.in = append(x.in, buf[:k]...)
		if err != nil && !whole() {
			return err
		}
	}
	n := RecordLen(x.in)
	typ, pt, err := x.o.Open(nil, x.in[:n])
	x.in = x.in[n:]
	if err != nil {
		x.err = syscall.EBADMSG
		return x.err
	}
	x.e.Opened.Add(1)
	if typ == ktls.RecordApplicationData {
		x.plain = pt
		return nil
	}
	x.ctl, x.ctlType, x.hasCtl = pt, typ, true
	x.paused = typ == ktls.RecordHandshake && bytes.HasPrefix(pt, []byte{24})
	return nil
}
