package conn

import (
	"crypto/x509"
	"net"
)

// Leaf is the certificate t serves (tests trust it).
func Leaf(t *TLS) *x509.Certificate { return t.certs.cur.Load().Leaf }

// HandedOver: c, an HTTPS connection, gave its transmit direction to the
// kernel (or its stand-in).
func HandedOver(c net.Conn) bool {
	t, ok := c.(*tlsConn)
	return ok && t.off.Load() != nil
}
