//go:build !linux

package origin

import (
	"errors"

	"segorigin/origin/ktls"
)

// Off Linux there is no kTLS: every HTTPS connection stays on userspace
// TLS and bodies go through the copy path.

type ktlsProbe struct {
	ok      bool
	reason  string
	ciphers []ktls.Cipher
}

func probeKTLS() ktlsProbe { return ktlsProbe{reason: "kTLS is Linux only"} }

var errNoKTLS = errors.New("kTLS is Linux only")

func enableKTLS(*tcpConn, []byte) (offloadedTX, bool, error) {
	return nil, false, &setsockoptError{opt: "TCP_ULP", err: errNoKTLS}
}

func (c *tcpConn) closeNotify() error { return errNoKTLS }

var _ offloadedTX = (*tcpConn)(nil)
