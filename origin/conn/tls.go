package conn

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"segorigin/internal/ratelog"
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
	// KTLS chooses whether connections hand their records to the kernel
	// (kTLS) after the handshake, so that bodies go out with sendfile and
	// requests are read as plaintext: KTLSAuto (probe at start; both
	// directions where the kernel opens records too, else transmit only),
	// KTLSTX (transmit only: requests read through crypto/tls), KTLSOff,
	// or KTLSAlways (attempt both on every connection whatever the probe
	// said; for diagnosis). A direction the kernel refuses stays in user
	// space.
	KTLS KTLSMode
	// ReloadEvery is how often the certificate files' metadata is checked
	// for a change; 0 disables the check (SIGHUP still reloads).
	ReloadEvery time.Duration
}

// KTLSMode is TLSConfig.KTLS.
type KTLSMode string

const (
	KTLSAuto   KTLSMode = "auto"
	KTLSTX     KTLSMode = "tx"
	KTLSOff    KTLSMode = "off"
	KTLSAlways KTLSMode = "always"
)

// Enabled: HTTPS is configured (a certificate, or -tls-dev).
func (c *TLSConfig) Enabled() bool { return c.Dev || c.CertFile != "" || c.KeyFile != "" }

// Validate checks the configuration once and sets the KTLS default.
func (c *TLSConfig) Validate() error {
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
	case KTLSAuto, KTLSTX, KTLSOff, KTLSAlways:
	default:
		errs = append(errs, fmt.Errorf("ktls: %q, want auto, tx, off or always", c.KTLS))
	}
	if c.ReloadEvery < 0 {
		errs = append(errs, fmt.Errorf("tls-reload-every: %v, want >= 0", c.ReloadEvery))
	}
	return errors.Join(errs...)
}

// TLSCounters count handshakes, the kTLS hand-over per outcome, the TLS
// path each connection took, what the kernel's receive direction met, and
// certificate reloads: declared once for C = atomic.Int64 (TLSStats, what
// the TLS listener increments) and C = int64 (a snapshot of them).
type TLSCounters[C any] struct {
	Handshakes      C // completed TLS handshakes
	HandshakeErrors C // failed handshakes (client left, no common parameters, timeout)
	PlainHTTP       C // of those, plain HTTP requests sent to the HTTPS port: answered 400
	KTLSOffloaded   C // connections whose transmit direction the kernel took over
	KTLSUnsupported C // offload attempted but the version, cipher or key material did not allow it: userspace TLS
	KTLSULPFailed   C // setsockopt(TCP_ULP, "tls") refused (ENOENT: no kTLS in this kernel): userspace TLS
	KTLSTXFailed    C // setsockopt(SOL_TLS, TLS_TX) refused (cipher not in this kernel): userspace TLS
	KTLSRXFailed    C // setsockopt(SOL_TLS, TLS_RX) refused after TLS_TX took: transmit only
	KTLSWriteDenied C // crypto/tls tried to write after the hand-over (a KeyUpdate, an alert): connection closed

	// The path of each handshaken connection: all in user space, the
	// kernel sealing (kTLS transmit only), or the kernel sealing and
	// opening (kTLS both directions).
	PathUserspace C
	PathKTLSTX    C
	PathKTLSBoth  C

	// Where each handshaken connection is served (HandOff): on an
	// event loop, the kernel sealing and opening (LoopConn) or crypto/tls
	// on the loop's thread (UserLoopConn), or on a goroutine of its own
	// (the stream transport) with the kernel sealing and opening (the
	// loops are not the engine, or the hand-over failed), sealing only,
	// or neither.
	TransportLoopKTLS        C
	TransportLoopUserspace   C
	TransportStreamKTLS      C
	TransportStreamKTLSTX    C
	TransportStreamUserspace C
	// Hand-overs to a loop that failed, by reason: the socket could not
	// be detached (the connection stays on the stream transport); the
	// engine refused it (shutting down: closed); the connection limit
	// refused it when the loop admitted it again (closed).
	HandOffDetach C
	HandOffEngine C
	HandOffLimit  C

	// On kTLS-both connections: the client's control records by kind
	// (ktls.Kinds), the TLS 1.3 KeyUpdates followed (RekeysRX; RekeysTX
	// when the client asked for ours too), and those the kernel could not
	// follow (before Linux 6.14): the connection closed cleanly after the
	// response in flight.
	ControlCloseNotify C
	ControlAlert       C
	ControlKeyUpdate   C
	ControlHandshake   C
	ControlOther       C
	RekeysRX           C
	RekeysTX           C
	RekeyUnsupported   C

	CertReloads     C // certificate pairs loaded after start
	CertReloadFails C // reloads that failed (the previous pair stays in service)
}

// TLSStats are the live TLS counters.
type TLSStats = TLSCounters[atomic.Int64]

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

// TLSParams is what NewTLS needs besides the operator's TLSConfig.
type TLSParams struct {
	Config TLSConfig
	// HandshakeTimeout bounds the server's handshake flights (the read
	// deadline bounds the client's); 0: none.
	HandshakeTimeout time.Duration
	// Logger receives certificate loads, reload failures and hand-over
	// failures; nil uses slog.Default().
	Logger *slog.Logger
	// Stats is where the HTTPS side counts; nil: its own (see TLS.Stats).
	Stats *TLSStats
	// Now is the clock (dev certificate validity, log limiter); nil uses
	// time.Now.
	Now func() time.Time
}

// TLS is a server's HTTPS side: certificates, the crypto/tls
// configuration, what the kTLS probe found, and the hand-over of each
// connection's transmit direction to the kernel.
type TLS struct {
	cfg       TLSConfig
	hsTimeout time.Duration
	certs     *certStore
	base      *tls.Config
	probe     ktlsProbe
	attempt   bool // try the kTLS hand-over on every TCP connection
	attemptRX bool // and of the receive direction
	stats     *TLSStats
	log       *slog.Logger
	failLog   ratelog.Limiter // hand-over failures, once per interval
	plainLog  ratelog.Limiter // plain HTTP on the HTTPS port, once per interval

	// offload hands a crypto_info to the kernel (enableKTLS), or to a
	// stand-in (SetOffloader).
	offload Offloader
}

// Offloader hands crypto_info structs to the kernel: tx for c's transmit
// direction, then rx (nil: not asked) for its receive direction.
// Production calls setsockopt; tests put a stand-in for the kernel here.
// An error means the transmit direction was refused; a refused receive
// direction leaves Offload.RX nil, with RXErr saying why.
type Offloader func(c *TCP, tx, rx []byte) (Offload, error)

// Offload is what the kernel took of a connection.
type Offload struct {
	TX     OffloadedTX
	RX     OffloadedRX // nil: requests are read through crypto/tls
	RXErr  error
	Kernel bool // the socket itself seals (sendfile may serve)
}

// OffloadedTX is the transmit side of a connection after the hand-over.
type OffloadedTX interface {
	Write(p []byte) (int, error)          // application data; the kernel makes the records
	SendRecord(typ uint8, p []byte) error // one record of another type: an alert, a KeyUpdate
	Rekey(info []byte) error              // the next TLS 1.3 keys (a KeyUpdate sent)
}

// OffloadedRX is the receive side of a connection whose records the
// kernel opens: Read returns application data, and ErrControlRecord when
// the next record is of another type, which ReadControl then reads.
type OffloadedRX interface {
	Read(p []byte) (int, error)
	ReadControl(buf []byte) (typ uint8, n int, err error)
	Rekey(info []byte) error // the client's next TLS 1.3 keys (a KeyUpdate read)
}

// ErrControlRecord: the next record on a kTLS receive direction is not
// application data (the kernel's EIO to a read with no room for its type).
var ErrControlRecord = errors.New("origin: the next TLS record is a control record")

// NewTLS validates p, loads the certificate (or makes the development
// one) and probes kTLS unless it is off.
func NewTLS(p TLSParams) (*TLS, error) {
	cfg := p.Config
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("conn: TLS without a certificate")
	}
	if p.Logger == nil {
		p.Logger = slog.Default()
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	if p.Stats == nil {
		p.Stats = new(TLSStats)
	}
	log, stats, now := p.Logger, p.Stats, p.Now
	st := &TLS{cfg: cfg, hsTimeout: p.HandshakeTimeout, stats: stats, log: log, offload: enableKTLS}
	st.failLog.Every, st.failLog.Now = 10*time.Second, now
	st.plainLog.Every, st.plainLog.Now = 10*time.Second, now
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
		if st.probe.noModule {
			logLoadModule(log, st.probe.netAdmin)
		}
	}
	st.attemptRX = st.attempt && cfg.KTLS != KTLSTX && (len(st.probe.rxCiphers) > 0 || cfg.KTLS == KTLSAlways)
	if st.attempt {
		st.base.GetConfigForClient = st.configForClient
	}
	return st, nil
}

// logLoadModule is the one line that says how to load the kernel's tls
// module when the probe found it missing. Under the shipped systemd unit
// (CAP_NET_BIND_SERVICE only) the kernel will not load it for us, so it
// must be loaded beforehand: now with modprobe, and at every boot by
// systemd-modules-load (the Debian package installs
// /usr/lib/modules-load.d/segorigin.conf).
func logLoadModule(log *slog.Logger, netAdmin bool) {
	why := "the kernel loads it on demand only for a process with CAP_NET_ADMIN, which this one lacks"
	if netAdmin {
		why = "the kernel could not load it on demand: it lacks CONFIG_TLS, or modprobe failed"
	}
	log.Warn("kTLS off: the kernel's tls module is not loaded; load it with `modprobe tls`, and at every boot with `echo tls > /etc/modules-load.d/tls.conf`",
		"why", why, "cap_net_admin", netAdmin)
}

// configForClient gives a connection that will try the kTLS hand-over its
// own configuration: a KeyLogWriter that collects its secrets, and a
// WrapSession that counts the TLS 1.3 session tickets sent. A TLS 1.3
// ticket is sealed with the server's application keys during the
// handshake, so each moves the first sequence number the kernel must use
// by one; counted, they keep tickets on. A TLS 1.2 resumption logs no
// master secret (crypto/tls writes the key log line only in a full
// handshake), and the kernel's keys come from it: a client that cannot
// speak TLS 1.3 gets no tickets, so it never resumes out of kTLS.
func (st *TLS) configForClient(hello *tls.ClientHelloInfo) (*tls.Config, error) {
	rc, ok := hello.Conn.(*recordConn)
	if !ok || rc.keys == nil {
		return nil, nil
	}
	c := st.base.Clone()
	c.GetConfigForClient = nil
	c.KeyLogWriter = rc.keys
	if slices.Contains(hello.SupportedVersions, tls.VersionTLS13) {
		base := st.base
		c.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
			if cs.Version == tls.VersionTLS13 {
				rc.tickets.Add(1)
			}
			return base.EncryptTicket(cs, ss)
		}
	} else {
		c.SessionTicketsDisabled = true
	}
	return c, nil
}

// kernelTakes says whether to offer cipher c to the kernel for the
// transmit direction (rx false) or the receive direction: a cipher the
// probe saw refused is not tried again per connection, unless
// -ktls=always.
func (st *TLS) kernelTakes(c ktls.Cipher, rx bool) bool {
	if st.cfg.KTLS == KTLSAlways {
		return true
	}
	if rx {
		return st.attemptRX && slices.Contains(st.probe.rxCiphers, c)
	}
	return slices.Contains(st.probe.ciphers, c)
}

// Stats returns the HTTPS side's counters (live, not a copy).
func (st *TLS) Stats() *TLSStats { return st.stats }

// SetOffloader replaces the kernel in the kTLS hand-over by o, for tests
// on a kernel without kTLS. Call it before serving.
func (st *TLS) SetOffloader(o Offloader) { st.offload = o }

// KTLSCiphers are the ciphers the kernel took at the start-up probe.
func (st *TLS) KTLSCiphers() []ktls.Cipher { return st.probe.ciphers }

// KTLSRXCiphers are the ciphers the kernel opened records with at the
// start-up probe (TLS_RX).
func (st *TLS) KTLSRXCiphers() []ktls.Cipher { return st.probe.rxCiphers }

// KTLSRXReason says why the kernel opens no records when it seals them:
// what TLS_RX answered at the start-up probe, or -ktls=tx.
func (st *TLS) KTLSRXReason() string {
	switch {
	case st.cfg.KTLS == KTLSTX:
		return "transmit only (-ktls=tx)"
	case st.probe.ok && len(st.probe.rxCiphers) == 0:
		return st.probe.rxReason
	}
	return ""
}

// TLSPath names the path new HTTPS connections take, as the start-up log
// and the metrics say it: "ktls" (the kernel seals and opens records),
// "ktls_tx" (the kernel seals; requests are read through crypto/tls) or
// "userspace". A connection whose cipher the kernel lacks takes a lesser
// one, counted.
func (st *TLS) TLSPath() string {
	switch {
	case !st.attempt:
		return "userspace"
	case st.attemptRX:
		return "ktls"
	}
	return "ktls_tx"
}

// KTLSStatus says whether kTLS is in use, and why not when it is not.
func (st *TLS) KTLSStatus() (bool, string) {
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

// Wrap wraps ln (a gate's listener) so that it yields HTTPS connections;
// the handshake happens on the connection's first Read, in the serving
// goroutine, under its read deadline.
func (st *TLS) Wrap(ln net.Listener) net.Listener { return &tlsListener{Listener: ln, tls: st} }

// tlsListener yields *tlsConn over the connections of a gate's listener.
type tlsListener struct {
	net.Listener
	tls *TLS
}

func (l *tlsListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return l.tls.newTLSConn(c), nil
}

// Reload re-reads the certificate and key files now (SIGHUP). On error
// the previous pair stays in service. With a development certificate
// there is nothing on disk to reload.
func (st *TLS) Reload() error {
	if st.cfg.Dev {
		return nil
	}
	_, err := st.certs.reload(true)
	return err
}

// PollCertificates reloads the pair when its files change, checked every
// ReloadEvery, until ctx is done; it returns at once when there is
// nothing to poll (-tls-dev, or ReloadEvery 0). The caller owns the
// goroutine.
func (st *TLS) PollCertificates(ctx context.Context) {
	if st.cfg.CertFile == "" || st.cfg.ReloadEvery <= 0 {
		return
	}
	st.certs.poll(ctx, st.cfg.ReloadEvery)
}

// IsTLS reports whether c is an HTTPS connection of a TLS listener
// (Wrap).
func IsTLS(c net.Conn) bool {
	_, ok := c.(*tlsConn)
	return ok
}

// Of is the HTTPS side serving ln when ln is one of its listeners
// (Wrap), else nil.
func Of(ln net.Listener) *TLS {
	if l, ok := ln.(*tlsListener); ok {
		return l.tls
	}
	return nil
}

// TransportPath names where new HTTPS connections are served, as the
// start-up log and segorigin_tls_transport_total say it: when loops serve
// them, "loop_ktls" (the kernel seals and opens) or "loop_userspace"
// (crypto/tls does, on the loop), else "stream_" and the TLS path
// (TLSPath): kernel transmit only stays on the stream transport.
func (st *TLS) TransportPath(loops bool) string {
	p := st.TLSPath()
	if loops && (p == "ktls" || p == "userspace") {
		return "loop_" + p
	}
	return "stream_" + p
}
