package main

import (
	"crypto/hkdf"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/tls"
	"errors"
	"fmt"
	"hash"

	"segorigin/internal/ktlstest"
	"segorigin/internal/ktlsvm"
	"segorigin/origin/ktls"
)

// keyUpdate: a client KeyUpdate (RFC 8446 §4.6.3) after the hand-over,
// between two requests. crypto/tls has no call that sends one, so on this
// connection the client seals its own records, with its traffic secret
// from its key log (ktlstest.Sealer, as the kernel would), while responses
// are still read through crypto/tls.
//
// Over kTLS the kernel opens the client's records, and hands the
// KeyUpdate to the server as a control record. A kernel that takes new
// keys on a live socket (Linux 6.14) gets the client's next ones (and,
// with update_requested, the server's KeyUpdate goes out and the kernel
// seals with the server's next keys): the connection goes on serving.
// One that does not (Debian's 6.1 and 6.12) cannot open what follows, so
// the connection must end cleanly: no response to the request after the
// KeyUpdate, the close_notify sealed by the kernel with the server's keys,
// which did not change, and counted as an unsupported rekey. With -ktls
// off crypto/tls follows it (and answers update_requested) and the
// connection goes on.
func (r *runState) keyUpdate(c ktlsvm.Combo, requested bool) error {
	rekeys, err := kernelRekeys()
	if err != nil {
		return err
	}
	seg, play := r.media["seg.m4s"], r.media["play.m3u8"]
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	// Closed without the client's close_notify: crypto/tls would seal it
	// with the keys the client has given up.
	defer cn.raw.Close()
	w, err := newRecordWriter(c.Suite, cn.keys.ClientTrafficSecret())
	if err != nil {
		return err
	}
	if err := w.write(cn, ktls.RecordApplicationData, []byte(request("GET", "/play.m3u8"))); err != nil {
		return err
	}
	resp, body, err := cn.response("GET", "/play.m3u8")
	if err == nil {
		err = wantFull(resp, body, play)
	}
	if err != nil {
		return fmt.Errorf("before the KeyUpdate: %w", err)
	}

	req := byte(0)
	if requested {
		req = 1
	}
	// HandshakeType key_update (24), a 3-byte length of 1, KeyUpdateRequest.
	if err := w.write(cn, ktls.RecordHandshake, []byte{24, 0, 0, 1, req}); err != nil {
		return err
	}
	r.v4.tally.keyUpdates.Add(1)
	closes := r.mode == "auto" && !rekeys
	switch {
	case closes:
		r.v4.tally.noRekey.Add(1)
	case r.mode == "auto":
		r.v4.tally.rekeysRX.Add(1)
		if requested {
			r.v4.tally.rekeysTX.Add(1)
		}
	}
	if err := w.next(); err != nil {
		return err
	}
	for i, sp := range []span{{16380, 16390}, {50000, 90000}} {
		if err := w.write(cn, ktls.RecordApplicationData, []byte(request("GET", "/seg.m4s", rangeHeader(sp)))); err != nil {
			return err
		}
		if closes {
			if err := cn.expectCloseNotify(); err != nil {
				return fmt.Errorf("KeyUpdate over kTLS on a kernel that cannot rekey: want the connection closed with close_notify and no response: %w", err)
			}
			return nil
		}
		resp, body, err := cn.response("GET", "/seg.m4s")
		if err == nil {
			err = wantRange(resp, body, seg, sp)
		}
		if err != nil {
			return fmt.Errorf("request %d after the KeyUpdate: %w", i+1, err)
		}
	}
	return nil
}

// recordWriter seals the client's records for one TLS 1.3 connection
// and follows its KeyUpdates.
type recordWriter struct {
	suite  uint16
	hash   func() hash.Hash
	secret []byte // the current client_application_traffic_secret_N
	sealer *ktlstest.Sealer
}

func newRecordWriter(suite uint16, secret []byte) (*recordWriter, error) {
	if secret == nil {
		return nil, errors.New("no CLIENT_TRAFFIC_SECRET_0 in the client's key log")
	}
	w := &recordWriter{suite: suite, hash: sha256.New, secret: secret}
	if suite == tls.TLS_AES_256_GCM_SHA384 {
		w.hash = sha512.New384
	}
	return w, w.rekey()
}

// rekey starts sealing with the keys of the current secret, at sequence
// 0 (RFC 8446 §5.3: the sequence restarts with each key).
func (w *recordWriter) rekey() error {
	in, err := ktls.TLS13(w.suite, w.secret, 0)
	if err != nil {
		return err
	}
	w.sealer, err = ktlstest.NewSealer(in)
	return err
}

// next moves to the next traffic secret (RFC 8446 §7.2):
// HKDF-Expand-Label(secret, "traffic upd", "", Hash.length).
func (w *recordWriter) next() error {
	n := w.hash().Size()
	label := "tls13 traffic upd"
	info := append([]byte{byte(n >> 8), byte(n), byte(len(label))}, label...)
	info = append(info, 0) // empty context
	s, err := hkdf.Expand(w.hash, w.secret, string(info), n)
	if err != nil {
		return err
	}
	w.secret = s
	return w.rekey()
}

// write seals p as one record of type typ and sends it under crypto/tls,
// on the TCP connection.
func (w *recordWriter) write(cn *conn, typ uint8, p []byte) error {
	rec, err := w.sealer.Seal(nil, typ, p)
	if err != nil {
		return err
	}
	_, err = cn.raw.Write(rec)
	return err
}
