package conn

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"slices"

	"segorigin/origin/ktls"
)

// kernelRX is the receive side of a connection whose records the kernel
// opens (kTLS both directions): requests are read as plaintext, and the
// control records the kernel will not hand to a plain read are read and
// acted on here. It runs on the connection's serving goroutine.
//
// An event loop serving the socket (LoopConn) reads and acts through it
// too, on the socket's descriptor.
type kernelRX struct {
	rx   OffloadedRX
	tx   OffloadedTX
	tls  *TLS
	peer string

	suite                uint16 // TLS 1.3: what a KeyUpdate derives with; 0 on TLS 1.2 (no KeyUpdate there)
	serverApp, clientApp []byte // TLS 1.3: the current traffic secrets
	ended                error  // set once a control record ended reading: every later read returns it
}

func newKernelRX(c *tlsConn, rx OffloadedRX, st tls.ConnectionState, keys handOverKeys) *kernelRX {
	k := &kernelRX{rx: rx, tx: c.off.Load().tx, tls: c.tls, peer: c.RemoteAddr().String()}
	if st.Version == tls.VersionTLS13 {
		k.suite = st.CipherSuite
		k.serverApp, k.clientApp = slices.Clone(keys.serverApp), slices.Clone(keys.clientApp)
	}
	return k
}

// readKernel reads a request's bytes from the kernel, acting on the
// control records between them.
func (c *tlsConn) readKernel(p []byte) (int, error) { return c.rx.read(p) }

// read reads plaintext into p, acting on the control records met before
// it (Control); once one ended reading, every read returns why.
func (k *kernelRX) read(p []byte) (int, error) {
	for k.ended == nil {
		n, err := k.rx.Read(p)
		if !errors.Is(err, ErrControlRecord) {
			return n, err
		}
		if err := k.Control(); err != nil {
			k.ended = err
			k.forget()
		}
	}
	return 0, k.ended
}

// Control reads the control record at the head of the receive side and
// acts on it: nil when reading goes on (a KeyUpdate followed); io.EOF
// when the connection ends cleanly after the response in flight (the
// client's close_notify, or a KeyUpdate the kernel cannot follow); an
// error when it ends for a fault.
func (k *kernelRX) Control() error {
	var buf [64]byte // an alert is 2 bytes, a KeyUpdate 5; anything longer is refused
	typ, n, err := k.rx.ReadControl(buf[:])
	if err != nil {
		return err
	}
	ctl, perr := ktls.ParseControl(typ, buf[:n])
	k.count(ctl.Kind)
	switch {
	case ctl.Kind == ktls.KindCloseNotify:
		return io.EOF
	case ctl.Kind == ktls.KindKeyUpdate && k.suite != 0:
		return k.keyUpdate(ctl.UpdateRequested)
	case perr == nil:
		perr = fmt.Errorf("alert %d", ctl.Alert)
	}
	k.tls.log.Debug("TLS: the client's control record ends the connection", "client", k.peer, "kind", ctl.Kind.String(), "err", perr)
	return fmt.Errorf("origin: TLS %v record from the client: %w", ctl.Kind, perr)
}

// keyUpdate follows a client's KeyUpdate (RFC 8446 §4.6.3): the client's
// next records are sealed with its next traffic secret, which the kernel
// must take before it opens another (Linux 6.14 pauses the receive side
// until then). With update_requested the server's KeyUpdate goes out
// under the old keys, then the kernel seals with the next ones. A kernel
// that refuses new keys (before 6.14: TLS_RX once only) cannot open what
// follows: reading ends cleanly, and the connection closes after the
// response in flight, with a close_notify under the server's keys, which
// did not change.
func (k *kernelRX) keyUpdate(requested bool) error {
	next, err := ktls.NextTrafficSecret(k.suite, k.clientApp)
	if err != nil {
		return err
	}
	if err := k.rekey(k.rx.Rekey, next); err != nil {
		clear(next)
		k.tls.stats.RekeyUnsupported.Add(1)
		if k.tls.failLog.Allow() {
			k.tls.log.Info("kTLS: the kernel cannot take a client's KeyUpdate (Linux 6.14 can): the connection closes after the response in flight (logged once per 10s)",
				"client", k.peer, "err", err)
		}
		return io.EOF
	}
	clear(k.clientApp)
	k.clientApp = next
	k.tls.stats.RekeysRX.Add(1)
	if !requested {
		return nil
	}
	if err := k.tx.SendRecord(ktls.RecordHandshake, ktls.KeyUpdateMessage); err != nil {
		return err
	}
	if next, err = ktls.NextTrafficSecret(k.suite, k.serverApp); err != nil {
		return err
	}
	if err := k.rekey(k.tx.Rekey, next); err != nil {
		// The client now opens with keys the kernel does not seal with:
		// nothing more can reach it, not even a close_notify.
		clear(next)
		k.tls.stats.RekeyUnsupported.Add(1)
		return fmt.Errorf("origin: kTLS: the kernel took the client's new keys but not the server's: %w", err)
	}
	clear(k.serverApp)
	k.serverApp = next
	k.tls.stats.RekeysTX.Add(1)
	return nil
}

// rekey passes set the crypto_info of a traffic secret's keys at sequence
// 0 (RFC 8446 §5.3: the sequence restarts with each key).
func (k *kernelRX) rekey(set func([]byte) error, secret []byte) error {
	in, err := ktls.TLS13(k.suite, secret, 0)
	if err != nil {
		return err
	}
	defer clear(in.Key)
	var buf [64]byte
	b, err := in.AppendBinary(buf[:0])
	if err != nil {
		return err
	}
	defer clear(buf[:])
	return set(b)
}

// count counts a control record by kind.
func (k *kernelRX) count(kind ktls.Kind) {
	st := k.tls.stats
	switch kind {
	case ktls.KindCloseNotify:
		st.ControlCloseNotify.Add(1)
	case ktls.KindAlert:
		st.ControlAlert.Add(1)
	case ktls.KindKeyUpdate:
		st.ControlKeyUpdate.Add(1)
	case ktls.KindHandshake:
		st.ControlHandshake.Add(1)
	default:
		st.ControlOther.Add(1)
	}
}

// forget zeroes the secrets once no KeyUpdate can follow.
func (k *kernelRX) forget() {
	clear(k.serverApp)
	clear(k.clientApp)
	k.serverApp, k.clientApp = nil, nil
}
