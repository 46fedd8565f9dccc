package origin

import (
	"errors"
	"fmt"
	"net"
	"strings"

	"segorigin/origin/conn"
)

// TLSConfig configures HTTPS (see conn.TLSConfig); cmd/segorigin maps
// -tls-cert, -tls-key, -tls-dev, -ktls and -tls-reload-every onto it.
type TLSConfig = conn.TLSConfig

// KTLSMode is TLSConfig.KTLS.
type KTLSMode = conn.KTLSMode

const (
	KTLSAuto   = conn.KTLSAuto
	KTLSOff    = conn.KTLSOff
	KTLSAlways = conn.KTLSAlways
	KTLSTX     = conn.KTLSTX
)

// tlsMarked is a listener Run serves as HTTPS.
type tlsMarked struct{ net.Listener }

// TLSListener marks ln, a TCP listener, for Run to serve as HTTPS with the
// server's certificate (Config.TLS).
func TLSListener(ln net.Listener) net.Listener { return &tlsMarked{ln} }

// serveListener wraps a listener given to Run: connection limits for all,
// and TLS for those marked by TLSListener.
func (s *Server) serveListener(ln net.Listener) (served net.Listener, gate *conn.Listener, err error) {
	m, ok := ln.(*tlsMarked)
	if !ok {
		gate = s.gate.Wrap(ln)
		return gate, gate, nil
	}
	if s.tls == nil {
		return nil, nil, fmt.Errorf("origin: HTTPS listener %s but no certificate configured", ln.Addr())
	}
	gate = s.gate.Wrap(m.Listener)
	return s.tls.Wrap(gate), gate, nil
}

// ReloadCertificates re-reads the certificate and key files now (cmd
// calls it on SIGHUP). On error the previous pair stays in service.
func (s *Server) ReloadCertificates() error {
	if s.tls == nil {
		return errors.New("origin: no TLS certificate configured")
	}
	return s.tls.Reload()
}

// tlsMetrics declares the TLS listener's metrics.
func tlsMetrics(t *table, st *TLSStats) {
	m := t.counter("tls_events_total", "TLS handshakes, kernel TLS hand-overs and certificate reloads by outcome.", "event")
	t.byLabel(m, map[string]int64{
		"handshake": st.Handshakes, "handshake_error": st.HandshakeErrors, "plain_http": st.PlainHTTP,
		"ktls_offloaded": st.KTLSOffloaded, "ktls_unsupported": st.KTLSUnsupported,
		"ktls_ulp_failed": st.KTLSULPFailed, "ktls_tx_failed": st.KTLSTXFailed, "ktls_rx_failed": st.KTLSRXFailed,
		"ktls_write_denied": st.KTLSWriteDenied, "cert_reload": st.CertReloads, "cert_reload_failed": st.CertReloadFails,
	})
	m = t.counter("tls_connections_total", "HTTPS connections by the TLS path they took after the handshake: userspace, ktls_tx (the kernel seals), ktls (the kernel seals and opens).", "path")
	t.byLabel(m, map[string]int64{"userspace": st.PathUserspace, "ktls_tx": st.PathKTLSTX, "ktls": st.PathKTLSBoth})
	m = t.counter("tls_transport_total", "HTTPS connections by where they are served after the handshake: an event loop, the kernel sealing and opening (loop_ktls) or crypto/tls (loop_userspace), or a goroutine each: stream_ktls, stream_ktls_tx, stream_userspace.", "path")
	t.byLabel(m, map[string]int64{
		"loop_ktls": st.TransportLoopKTLS, "loop_userspace": st.TransportLoopUserspace, "stream_ktls": st.TransportStreamKTLS,
		"stream_ktls_tx": st.TransportStreamKTLSTX, "stream_userspace": st.TransportStreamUserspace,
	})
	m = t.counter("tls_handoff_failures_total", "HTTPS connections whose hand-over to an event loop failed, by reason: detach (it stays on its goroutine), engine (the loops refused it, shutting down: closed), limit (the connection limit refused it on the loop: closed).", "reason")
	t.byLabel(m, map[string]int64{"detach": st.HandOffDetach, "engine": st.HandOffEngine, "limit": st.HandOffLimit})
	m = t.counter("tls_control_records_total", "Control records clients sent on connections whose records the kernel opens, by kind.", "kind")
	t.byLabel(m, map[string]int64{
		"close_notify": st.ControlCloseNotify, "alert": st.ControlAlert, "key_update": st.ControlKeyUpdate,
		"handshake": st.ControlHandshake, "other": st.ControlOther,
	})
	m = t.counter("tls_rekeys_total", "TLS 1.3 KeyUpdates followed by the kernel, by direction; unsupported: one the kernel could not take (before Linux 6.14), the connection closed after the response in flight.", "direction")
	t.byLabel(m, map[string]int64{"rx": st.RekeysRX, "tx": st.RekeysTX, "unsupported": st.RekeyUnsupported})
}

// tlsPaths are the start-up log's attributes for HTTPS: the path new
// connections take (conn.TLS.TLSPath), where they are served (loops: the
// loops are the engine), and the ciphers the kernel opens records with,
// or why it opens none.
func tlsPaths(st *conn.TLS, loops bool) []any {
	var rx []string
	for _, c := range st.KTLSRXCiphers() {
		rx = append(rx, c.String())
	}
	attrs := []any{"tls_path", st.TLSPath(), "tls_transport", st.TransportPath(loops), "ktls_rx_ciphers", strings.Join(rx, ",")}
	if r := st.KTLSRXReason(); r != "" {
		attrs = append(attrs, "ktls_rx_reason", r)
	}
	return attrs
}
