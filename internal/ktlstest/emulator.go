package ktlstest

import (
	"sync"
	"sync/atomic"

	"segorigin/origin/conn"
	"segorigin/origin/ktls"
)

// KTLSEmulator stands in for the kernel's TLS_TX: it takes exactly the
// crypto_info bytes setsockopt would get, parses them back, and seals
// what the connection writes into records in user space (Sealer
// builds nonces and sequence numbers as the kernel does). A stock TLS
// client that reads those records proves the key, IV, salt and sequence
// number handed over are right.
type KTLSEmulator struct {
	mu    sync.Mutex // protects infos
	infos []ktls.Info

	// SeqShift is added to the handed-over sequence number (negative
	// tests: an off-by-one must fail with bad record MAC).
	SeqShift uint64
	Records  atomic.Int64 // records sealed
}

// EmulateKTLS makes t hand connections to an emulator instead of the
// kernel. Call it before serving, with KTLSAlways (other modes attempt
// the hand-over only if the start-up probe succeeded).
func EmulateKTLS(t *conn.TLS) *KTLSEmulator {
	e := &KTLSEmulator{}
	t.SetOffloader(e.offload)
	return e
}

// Infos returns what every hand-over passed to the "kernel".
func (e *KTLSEmulator) Infos() []ktls.Info {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]ktls.Info(nil), e.infos...)
}

func (e *KTLSEmulator) offload(c *conn.TCP, info []byte) (conn.OffloadedTX, bool, error) {
	in, err := ktls.ParseInfo(info)
	if err != nil {
		return nil, false, err
	}
	e.mu.Lock()
	e.infos = append(e.infos, in)
	e.mu.Unlock()
	in.Seq += e.SeqShift
	s, err := NewSealer(in)
	if err != nil {
		return nil, false, err
	}
	return &emulatedTX{c: c, s: s, e: e}, false, nil
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

func (x *emulatedTX) CloseNotify() error {
	_, err := x.seal(ktls.RecordAlert, closeNotifyAlert)
	return err
}

// closeNotifyAlert: level warning (1), description close_notify (0).
var closeNotifyAlert = []byte{1, 0}

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
