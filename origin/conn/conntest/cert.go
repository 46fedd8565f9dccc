package conntest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"testing"
	"time"
)

// Cert is a self-signed ECDSA certificate for 127.0.0.1 and localhost,
// with its key, as PEM files a TLS listener loads.
type Cert struct {
	CertPEM, KeyPEM []byte
	Leaf            *x509.Certificate
	Pool            *x509.CertPool // trusts Leaf
}

// NewCert makes a certificate with common name cn, or fails the test.
func NewCert(t testing.TB, cn string) *Cert {
	t.Helper()
	p, err := MakeCert(cn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// MakeCert makes a certificate with common name cn, valid from an hour
// ago for a day.
func MakeCert(cn string) (*Cert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:     []string{"localhost"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return &Cert{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder}),
		Leaf:    leaf, Pool: pool,
	}, nil
}

// Write replaces the files by rename, as deployment tools do: the key
// first, then the certificate.
func (p *Cert) Write(t testing.TB, certFile, keyFile string) {
	t.Helper()
	p.WriteKey(t, keyFile)
	writeAtomic(t, certFile, p.CertPEM)
}

// WriteKey replaces only the key file (a mismatched pair, when the
// certificate file holds another certificate).
func (p *Cert) WriteKey(t testing.TB, keyFile string) {
	t.Helper()
	writeAtomic(t, keyFile, p.KeyPEM)
}

func writeAtomic(t testing.TB, name string, b []byte) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.WriteFile(tmp, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}
