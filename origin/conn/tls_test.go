package conn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"segorigin/internal/testwait"
	"segorigin/origin/conn"
	"segorigin/origin/conn/conntest"
)

// serveTLS serves "ok\n" on every connection of an HTTPS listener made by
// s over a gate's listener, until the test ends; it returns the address.
func serveTLS(t *testing.T, s *conn.TLS) string {
	t.Helper()
	gl, addr := gateListener(t)
	l := s.Wrap(gl)
	var wg sync.WaitGroup
	wg.Go(func() { // ends when the cleanup closes l
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			c.Write([]byte("ok\n")) // the handshake runs first
			c.Close()
		}
	})
	t.Cleanup(func() { l.Close(); wg.Wait() })
	return addr
}

// servedCN dials addr trusting pool and returns the common name of the
// certificate served, after reading the connection's greeting.
func servedCN(t *testing.T, addr string, pool *x509.CertPool) string {
	t.Helper()
	c, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", addr,
		&tls.Config{RootCAs: pool, ServerName: "127.0.0.1", NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "ok\n" {
		t.Fatalf("read %q, %v; want \"ok\\n\" then close_notify", b, err)
	}
	if p := c.ConnectionState().NegotiatedProtocol; p != "http/1.1" {
		t.Errorf("ALPN = %q, want http/1.1", p)
	}
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSListenerCertificateReload: the HTTPS listener serves the pair on
// disk; a changed pair is picked up by the poll, a broken one leaves the
// previous pair in service (counted), and Reload reloads at once.
func TestTLSListenerCertificateReload(t *testing.T) {
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	a, b := conntest.NewCert(t, "cert-a"), conntest.NewCert(t, "cert-b")
	a.Write(t, certFile, keyFile)
	s, err := conn.NewTLS(conn.TLSParams{
		Config: conn.TLSConfig{CertFile: certFile, KeyFile: keyFile, KTLS: conn.KTLSOff, ReloadEvery: 20 * time.Millisecond},
		Logger: quietLogger(),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.PollCertificates(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	addr := serveTLS(t, s)
	pool := x509.NewCertPool()
	pool.AddCert(a.Leaf)
	pool.AddCert(b.Leaf)

	if got := servedCN(t, addr, pool); got != "cert-a" {
		t.Fatalf("serving %q at start, want cert-a", got)
	}
	st := s.Stats()
	b.Write(t, certFile, keyFile)
	testwait.For(t, 5*time.Second, "the poll to load cert-b", func() bool { return st.CertReloads.Load() == 1 })
	if got := servedCN(t, addr, pool); got != "cert-b" {
		t.Fatalf("serving %q after the files changed, want cert-b", got)
	}
	a.WriteKey(t, keyFile) // does not match cert-b
	testwait.For(t, 5*time.Second, "the failed reload", func() bool { return st.CertReloadFails.Load() >= 1 })
	if got := servedCN(t, addr, pool); got != "cert-b" {
		t.Fatalf("serving %q after a broken reload, want cert-b", got)
	}
	if err := s.Reload(); err == nil {
		t.Errorf("Reload with a mismatched key: no error")
	}
	a.Write(t, certFile, keyFile)
	if err := s.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if got := servedCN(t, addr, pool); got != "cert-a" {
		t.Fatalf("serving %q after Reload, want cert-a", got)
	}
	if n := st.Handshakes.Load(); n != 4 {
		t.Errorf("Handshakes = %d, want 4", n)
	}
}

// TestTLSDevCertificate: -tls-dev serves a self-signed certificate for
// localhost, 127.0.0.1 and ::1 made in memory; Reload has nothing to do.
func TestTLSDevCertificate(t *testing.T) {
	s, _ := newKTLSTest(t, conn.KTLSOff)
	leaf := conn.Leaf(s)
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	for _, host := range []string{"localhost", "127.0.0.1", "::1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: host}); err != nil {
			t.Errorf("dev certificate does not verify for %s: %v", host, err)
		}
	}
	if got := servedCN(t, serveTLS(t, s), pool); got != "segorigin development certificate" {
		t.Errorf("served %q, want the development certificate", got)
	}
	if err := s.Reload(); err != nil {
		t.Errorf("Reload with -tls-dev: %v, want nil", err)
	}
}

// TestTLSConfigValidation: contradictory or incomplete settings are
// refused at NewTLS.
func TestTLSConfigValidation(t *testing.T) {
	for _, tt := range []struct {
		name string
		cfg  conn.TLSConfig
		want string
	}{
		{"nothing", conn.TLSConfig{}, "without a certificate"},
		{"cert without key", conn.TLSConfig{CertFile: "c.pem"}, "give both"},
		{"dev and files", conn.TLSConfig{Dev: true, CertFile: "c.pem", KeyFile: "k.pem"}, "excludes"},
		{"bad ktls mode", conn.TLSConfig{Dev: true, KTLS: "sometimes"}, "ktls"},
		{"missing files", conn.TLSConfig{CertFile: "/nonexistent/c.pem", KeyFile: "/nonexistent/k.pem"}, "no such file"},
	} {
		_, err := conn.NewTLS(conn.TLSParams{Config: tt.cfg, Logger: quietLogger()})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: NewTLS error %v, want one containing %q", tt.name, err, tt.want)
		}
	}
}
