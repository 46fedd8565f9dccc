//go:build !linux

package conn

import (
	"errors"

	"segorigin/origin/ktls"
)

// Off Linux there is no kTLS: every HTTPS connection stays on userspace
// TLS and bodies go through the copy path.

type ktlsProbe struct {
	ok        bool
	reason    string
	ciphers   []ktls.Cipher
	rxCiphers []ktls.Cipher
	rxReason  string
	noModule  bool // never: there is no module to load
	netAdmin  bool
}

func probeKTLS() ktlsProbe { return ktlsProbe{reason: "kTLS is Linux only"} }

var errNoKTLS = errors.New("kTLS is Linux only")

func enableKTLS(*TCP, []byte, []byte) (Offload, error) {
	return Offload{}, &setsockoptError{opt: "TCP_ULP", err: errNoKTLS}
}
