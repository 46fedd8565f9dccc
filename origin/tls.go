package origin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/big"
	"net"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"segorigin/origin/ktls"
)

// TLSConfig configures HTTPS. Field comments are the operator's
// documentation; cmd/segorigin maps -tls-cert, -tls-key, -tls-dev and
// -ktls onto them.
type TLSConfig struct {
	// CertFile and KeyFile are the PEM certificate chain and private key
	// served on HTTPS listeners. Both files are re-read when either
	// changes (checked every ReloadEvery) and on Server.ReloadCertificates
	// (SIGHUP); a pair that fails to load leaves the previous one in
	// service.
	CertFile string
	KeyFile  string
	// Dev serves a self-signed ECDSA certificate for localhost, 127.0.0.1
	// and ::1, made in memory at start: for trying HTTPS without setup,
	// never for production. It excludes CertFile and KeyFile.
	Dev bool
	// KTLS chooses whether connections hand their transmit direction to
	// the kernel (kTLS) so bodies still go out with sendfile: KTLSAuto
	// (probe at start, offload when the kernel offers it), KTLSOff, or
	// KTLSAlways (attempt on every connection whatever the probe said; for
	// diagnosis). Requests are always read through crypto/tls, and any
	// failure leaves the connection on userspace TLS.
	KTLS KTLSMode
	// ReloadEvery is how often the certificate files' metadata is checked
	// for a change; 0 disables the check (SIGHUP still reloads).
	ReloadEvery time.Duration
}

// KTLSMode is TLSConfig.KTLS.
type KTLSMode string

const (
	KTLSAuto   KTLSMode = "auto"
	KTLSOff    KTLSMode = "off"
	KTLSAlways KTLSMode = "always"
)

func (c *TLSConfig) enabled() bool { return c.Dev || c.CertFile != "" || c.KeyFile != "" }

func (c *TLSConfig) validate() error {
	var errs []error
	switch {
	case c.Dev && (c.CertFile != "" || c.KeyFile != ""):
		errs = append(errs, errors.New("tls-dev: excludes tls-cert and tls-key"))
	case (c.CertFile == "") != (c.KeyFile == ""):
		errs = append(errs, errors.New("tls-cert and tls-key: give both"))
	}
	switch c.KTLS {
	case "":
		c.KTLS = KTLSAuto
	case KTLSAuto, KTLSOff, KTLSAlways:
	default:
		errs = append(errs, fmt.Errorf("ktls: %q, want auto, off or always", c.KTLS))
	}
	if c.ReloadEvery < 0 {
		errs = append(errs, fmt.Errorf("tls-reload-every: %v, want >= 0", c.ReloadEvery))
	}
	return errors.Join(errs...)
}

// TLSStats count handshakes, the kTLS hand-over per outcome, and
// certificate reloads.
type TLSStats struct {
	Handshakes      atomic.Int64 // completed TLS handshakes
	HandshakeErrors atomic.Int64 // failed handshakes (client left, no common parameters, timeout)
	KTLSOffloaded   atomic.Int64 // connections whose transmit direction the kernel took over
	KTLSUnsupported atomic.Int64 // offload attempted but the version, cipher or key material did not allow it: userspace TLS
	KTLSULPFailed   atomic.Int64 // setsockopt(TCP_ULP, "tls") refused (ENOENT: no kTLS in this kernel): userspace TLS
	KTLSTXFailed    atomic.Int64 // setsockopt(SOL_TLS, TLS_TX) refused (cipher not in this kernel): userspace TLS
	KTLSWriteDenied atomic.Int64 // crypto/tls tried to write after the hand-over (a KeyUpdate, an alert): connection closed
	CertReloads     atomic.Int64 // certificate pairs loaded after start
	CertReloadFails atomic.Int64 // reloads that failed (the previous pair stays in service)
}

// tlsAEADSuites are the TLS 1.2 suites offered: ECDHE with an AEAD only.
// TLS 1.3 suites are not configurable in crypto/tls and are all AEAD.
var tlsAEADSuites = []uint16{
	tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
}

// tlsState is a server's HTTPS side: certificates, the crypto/tls
// configuration and what the kTLS probe found.
type tlsState struct {
	cfg     TLSConfig
	certs   *certStore
	base    *tls.Config
	probe   ktlsProbe
	attempt bool // try the kTLS hand-over on every TCP connection
	stats   *TLSStats
	log     *slog.Logger
	failLog rateLimitedLog // hand-over failures, once per interval

	// offload hands info (a crypto_info struct) to the kernel for c's
	// transmit direction and returns where plaintext now goes; kernel
	// says the socket itself encrypts (so sendfile may serve). Production
	// calls setsockopt; tests put an emulator here.
	offload func(c *tcpConn, info []byte) (tx offloadedTX, kernel bool, err error)
}

// offloadedTX is the transmit side of a connection after the hand-over.
type offloadedTX interface {
	Write(p []byte) (int, error) // application data; the kernel makes the records
	closeNotify() error          // the close_notify alert, as an alert record
}

func newTLSState(cfg TLSConfig, log *slog.Logger, stats *TLSStats, now func() time.Time) (*tlsState, error) {
	st := &tlsState{cfg: cfg, stats: stats, log: log, offload: enableKTLS}
	st.failLog.every, st.failLog.now = 10*time.Second, now
	st.certs = &certStore{certFile: cfg.CertFile, keyFile: cfg.KeyFile, log: log, stats: stats}
	if cfg.Dev {
		c, err := devCertificate(now())
		if err != nil {
			return nil, err
		}
		st.certs.cur.Store(c)
		fp := sha256.Sum256(c.Certificate[0])
		log.Warn("TLS: serving a self-signed development certificate (-tls-dev); not for production",
			"hosts", "localhost,127.0.0.1,::1", "not_after", c.Leaf.NotAfter.Format(time.RFC3339),
			"sha256", hex.EncodeToString(fp[:]))
	} else if _, err := st.certs.reload(true); err != nil {
		return nil, err
	}
	st.base = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		CipherSuites:   tlsAEADSuites,
		NextProtos:     []string{"http/1.1"},
		GetCertificate: st.certs.get,
		// Full 16 KiB records from the first byte, as nginx sends: bodies
		// here are media, read by players and CDNs for throughput.
		DynamicRecordSizingDisabled: true,
	}
	if cfg.KTLS != KTLSOff {
		st.probe = probeKTLS()
		st.attempt = st.probe.ok || cfg.KTLS == KTLSAlways
	}
	if st.attempt {
		st.base.GetConfigForClient = st.configForClient
	}
	return st, nil
}

// configForClient gives a connection that will try the kTLS hand-over its
// own configuration: a KeyLogWriter that collects its secrets, and no
// session tickets. A TLS 1.3 ticket is sealed with the application keys
// after the handshake, so it would move the first sequence number the
// kernel must use; without tickets that number is 0 (TLS 1.3) or what
// the record count after ChangeCipherSpec says (TLS 1.2). Offloaded
// connections give up resumption for that: media connections are long
// keep-alive ones, and a CDN reuses them.
func (st *tlsState) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	rc, ok := hello.Conn.(*recordConn)
	if !ok || rc.keys == nil {
		return nil, nil
	}
	c := st.base.Clone()
	c.GetConfigForClient = nil
	c.SessionTicketsDisabled = true
	c.KeyLogWriter = rc.keys
	return c, nil
}

// kernelTakes says whether to offer cipher c to the kernel: a cipher the
// probe saw refused is not tried again per connection, unless -ktls=always.
func (st *tlsState) kernelTakes(c ktls.Cipher) bool {
	return st.cfg.KTLS == KTLSAlways || slices.Contains(st.probe.ciphers, c)
}

// status says whether kTLS is in use, and why not when it is not.
func (st *tlsState) status() (bool, string) {
	switch {
	case st.cfg.KTLS == KTLSOff:
		return false, "disabled (-ktls=off)"
	case !st.probe.ok && st.cfg.KTLS == KTLSAlways:
		return false, st.probe.reason + "; attempting on every connection anyway (-ktls=always)"
	case !st.probe.ok:
		return false, st.probe.reason
	}
	return true, ""
}

// tlsMarked is a listener Run serves as HTTPS.
type tlsMarked struct{ net.Listener }

// TLSListener marks ln, a TCP listener, for Run to serve as HTTPS with the
// server's certificate (Config.TLS).
func TLSListener(ln net.Listener) net.Listener { return &tlsMarked{ln} }

// serveListener wraps a listener given to Run: connection limits for all,
// and TLS for those marked by TLSListener.
func (s *Server) serveListener(ln net.Listener) (net.Listener, error) {
	m, ok := ln.(*tlsMarked)
	if !ok {
		return s.wrapListener(ln), nil
	}
	if s.tls == nil {
		return nil, fmt.Errorf("origin: HTTPS listener %s but no certificate configured", ln.Addr())
	}
	return &tlsListener{Listener: s.wrapListener(m.Listener), srv: s}, nil
}

// tlsListener yields *tlsConn over the connections of the limiting
// listener; the handshake happens on the connection's first Read, in
// fasthttp's worker, under its read timeout.
type tlsListener struct {
	net.Listener
	srv *Server
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.srv.newTLSConn(c), nil
}

// ReloadCertificates re-reads the certificate and key files now (cmd
// calls it on SIGHUP). On error the previous pair stays in service.
func (s *Server) ReloadCertificates() error {
	if s.tls == nil {
		return errors.New("origin: no TLS certificate configured")
	}
	if s.tls.cfg.Dev {
		return nil // nothing on disk to reload
	}
	_, err := s.tls.certs.reload(true)
	return err
}

// certStore holds the certificate in service and reloads it from disk.
type certStore struct {
	certFile, keyFile string
	log               *slog.Logger
	stats             *TLSStats
	cur               atomic.Pointer[tls.Certificate]

	mu        sync.Mutex     // serialises reloads; protects seen, failed and failedMsg
	seen      [2]fs.FileInfo // the files as last loaded
	failed    [2]fs.FileInfo // the files as last failed to load
	failedMsg string         // and the error then (each failure is logged once)
}

func (cs *certStore) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cs.cur.Load(), nil }

// reload loads the pair if force is set or either file changed (by
// size, mtime or identity: a rename or symlink swap counts). It reports
// whether a new pair went into service.
func (cs *certStore) reload(force bool) (bool, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var now [2]fs.FileInfo
	var err error
	for i, name := range []string{cs.certFile, cs.keyFile} {
		if now[i], err = os.Stat(name); err != nil {
			return false, cs.failedLocked(now, fmt.Errorf("tls certificate: %w", err), force)
		}
	}
	if !force && sameFiles(now, cs.seen) {
		return false, nil
	}
	if !force && cs.failedMsg != "" && sameFiles(now, cs.failed) {
		return false, nil // already reported; wait for the next change
	}
	c, err := tls.LoadX509KeyPair(cs.certFile, cs.keyFile)
	if err != nil {
		return false, cs.failedLocked(now, fmt.Errorf("tls certificate %s, key %s: %w", cs.certFile, cs.keyFile, err), force)
	}
	first := cs.cur.Load() == nil
	cs.cur.Store(&c)
	cs.seen, cs.failed, cs.failedMsg = now, [2]fs.FileInfo{}, ""
	if !first {
		cs.stats.CertReloads.Add(1)
	}
	cs.log.Info("TLS certificate loaded", "cert", cs.certFile, "subject", c.Leaf.Subject.String(),
		"dns", c.Leaf.DNSNames, "not_after", c.Leaf.NotAfter.Format(time.RFC3339), "reload", !first)
	return true, nil
}

func (cs *certStore) failedLocked(now [2]fs.FileInfo, err error, force bool) error {
	if cs.cur.Load() == nil {
		return err // at start: New fails
	}
	cs.stats.CertReloadFails.Add(1)
	if force || err.Error() != cs.failedMsg || !sameFiles(now, cs.failed) {
		cs.log.Error("TLS certificate reload failed: the previous certificate stays in service", "err", err)
	}
	cs.failed, cs.failedMsg = now, err.Error()
	return err
}

// sameFiles: the same files (identity, size, mtime); nil (not there)
// equals only nil.
func sameFiles(a, b [2]fs.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil || b[i] == nil:
			if a[i] != b[i] {
				return false
			}
		case !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()):
			return false
		}
	}
	return true
}

// poll reloads the pair when the files change, until ctx is done. Run owns
// the goroutine.
func (cs *certStore) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cs.reload(false) // failures are logged and counted inside
		}
	}
}

// devCertificate makes the -tls-dev certificate: ECDSA P-256, self-signed,
// for localhost, 127.0.0.1 and ::1, valid 30 days from now.
func devCertificate(now time.Time) (*tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: "segorigin development certificate", Organization: []string{"segorigin -tls-dev"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(30 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, nil
}
