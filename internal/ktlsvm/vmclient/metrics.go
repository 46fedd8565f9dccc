package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// probeSessions is how many TLS_TX sessions a -ktls auto server opens at
// start: its probe hands dummy keys for each of the three ciphers to the
// kernel on a loopback connection.
const probeSessions = 3

// bodyPaths are the transport paths: the one a run's bodies of files over
// -inline-max must take (ktls, or copy with -ktls off) and the others,
// which must stay at 0. Bodies of smaller files take path "inline" in
// every run (see inlineMax).
func (r *runState) bodyPaths() (want string, others []string) {
	if r.mode == "off" {
		return "copy", []string{"ktls", "sendfile"}
	}
	return "ktls", []string{"copy", "sendfile"}
}

// pathInline is the path of bodies sent from the cache's memory.
const pathInline = "inline"

// pathTally is the tally of one body path, by its name.
type pathTally struct {
	path string
	b    *bodyTally
}

// byPath pairs t's bodies with their paths: the files over -inline-max
// with path (the run's), the others with pathInline.
func (t *tally) byPath(path string) []pathTally {
	return []pathTally{{path, &t.file}, {pathInline, &t.inline}}
}

// covered: the client counted bodies on both paths, so that the plan
// still proves each (a change of the files' sizes or of inlineMax could
// leave one with nothing to compare).
func (t *tally) covered(path string) error {
	var errs []error
	for _, c := range t.byPath(path) {
		if c.b.bodies.Load() == 0 {
			errs = append(errs, fmt.Errorf("the client counted no body on path %q (files vs -inline-max %d)", c.path, inlineMax))
		}
	}
	return errors.Join(errs...)
}

// checkMetrics compares the server's /metrics with what the client saw.
// Counters the server bumps after the client's last read (a reset body
// is counted once the server's write fails) may lag, so a mismatch is
// scraped again for up to 10 s.
func (r *runState) checkMetrics(s *server) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := r.metricsOnce(s)
		if err == nil {
			path, _ := r.bodyPaths()
			r.rep.Info("run %s, %s server: %d bodies via %s, %d via %s", r.run, s.name,
				s.tally.file.bodies.Load(), path, s.tally.inline.bodies.Load(), pathInline)
		}
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// metricsOnce compares one scrape of s's /metrics with what the client
// saw it serve.
func (r *runState) metricsOnce(s *server) error {
	m, err := scrape(s.admin)
	if err != nil {
		return err
	}
	t := &s.tally
	path, others := r.bodyPaths()
	var errs0 []error
	want := r.wantMetrics(t, path, others)
	if got, min := m[`segorigin_tls_control_records_total{kind="close_notify"}`], t.closeNotes.Load(); r.mode == "auto" && got < float64(min) {
		errs0 = append(errs0, fmt.Errorf("control records close_notify = %v, want at least %d", got, min))
	}
	errs := append(errs0, t.covered(path))
	keys := make([]string, 0, len(want))
	for k := range want {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		got, ok := m[k]
		if !ok || got != float64(want[k]) {
			errs = append(errs, fmt.Errorf("%s = %v (present %v), want %d", k, got, ok, want[k]))
		}
	}
	for _, c := range t.byPath(path) {
		k := `segorigin_body_bytes_total{path="` + c.path + `"}`
		if got := m[k]; got < float64(c.b.bytesMin.Load()) || got > float64(c.b.bytesMax.Load()) {
			errs = append(errs, fmt.Errorf("%s = %v, want %d to %d", k, got, c.b.bytesMin.Load(), c.b.bytesMax.Load()))
		}
	}
	if l := s.logsMatching("kTLS hand-over failed"); len(l) > 0 {
		errs = append(errs, fmt.Errorf("hand-over failures logged: %s", strings.Join(l, "; ")))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s server: %w", s.name, err)
	}
	return nil
}

// wantMetrics: each exported series whose value the client's tally
// decides, for body path (others: the paths this mode must not take).
func (r *runState) wantMetrics(t *tally, path string, others []string) map[string]int64 {
	offloaded := t.handshakes.Load()
	if r.mode == "off" {
		offloaded = 0
	}
	tlsEvent := func(ev string) string { return `segorigin_tls_events_total{event="` + ev + `"}` }
	paths := map[string]int64{"ktls": offloaded, "ktls_tx": 0, "userspace": t.handshakes.Load() - offloaded}
	keyUpdates := t.keyUpdates.Load()
	if r.mode == "off" {
		keyUpdates = 0 // read by crypto/tls
	}
	want := map[string]int64{
		tlsEvent("ktls_rx_failed"):                                  0,
		`segorigin_tls_control_records_total{kind="key_update"}`:    keyUpdates,
		`segorigin_tls_control_records_total{kind="alert"}`:         0,
		`segorigin_tls_rekeys_total{direction="rx"}`:                t.rekeysRX.Load(),
		`segorigin_tls_rekeys_total{direction="tx"}`:                t.rekeysTX.Load(),
		`segorigin_tls_rekeys_total{direction="unsupported"}`:       t.noRekey.Load(),
		`segorigin_body_responses_total{path="` + path + `"}`:       t.file.bodies.Load(),
		`segorigin_body_responses_total{path="` + pathInline + `"}`: t.inline.bodies.Load(),
		tlsEvent("handshake"):                                       t.handshakes.Load(),
		tlsEvent("handshake_error"):                                 0,
		tlsEvent("ktls_offloaded"):                                  offloaded,
		tlsEvent("ktls_unsupported"):                                0,
		tlsEvent("ktls_ulp_failed"):                                 0,
		tlsEvent("ktls_tx_failed"):                                  0,
		tlsEvent("ktls_write_denied"):                               t.denied.Load(),
		"segorigin_aborted_total":                                   t.aborted.Load(),
		"segorigin_truncated_total":                                 0,
		"segorigin_sendfile_fallbacks_total":                        0,
	}
	for p, n := range paths {
		want[`segorigin_tls_connections_total{path="`+p+`"}`] = n
	}
	// Every connection is served by an event loop (the default engine):
	// the kernel sealing and opening, or crypto/tls on the loop.
	transport := map[string]int64{"loop_ktls": offloaded, "loop_userspace": t.handshakes.Load() - offloaded,
		"stream_ktls": 0, "stream_ktls_tx": 0, "stream_userspace": 0}
	for p, n := range transport {
		want[`segorigin_tls_transport_total{path="`+p+`"}`] = n
	}
	for _, reason := range []string{"detach", "engine", "limit"} {
		want[`segorigin_tls_handoff_failures_total{reason="`+reason+`"}`] = 0
	}
	for _, o := range others {
		want[`segorigin_body_responses_total{path="`+o+`"}`] = 0
		want[`segorigin_body_bytes_total{path="`+o+`"}`] = 0
	}
	return want
}

// scrape reads the Prometheus text of /metrics into series -> value; a
// series is written as the exposition writes it (`name{label="v"}`).
func scrape(admin string) (map[string]float64, error) {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("/metrics: status %d", resp.StatusCode)
	}
	m := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("/metrics line %q: %v", line, err)
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// checkAccess: after the server's exit, its access log names the run's
// path for every body of a file over -inline-max the client counted,
// including the drain's, "inline" for every smaller one, and no other
// path.
func (r *runState) checkAccess(s *server) error {
	path, _ := r.bodyPaths()
	s.mu.Lock()
	lines := slices.Clone(s.access)
	s.mu.Unlock()
	n, bytes := map[string]int64{}, map[string]int64{}
	var errs []error
	for _, a := range lines {
		switch a.Via {
		case "":
		case path, pathInline:
			n[a.Via]++
			bytes[a.Via] += a.Bytes
		default:
			errs = append(errs, fmt.Errorf("%s %s %d: %d bytes via %s, want %s or %s", a.Method, a.Path, a.Status, a.Bytes, a.Via, path, pathInline))
		}
	}
	for _, c := range s.tally.byPath(path) {
		if got, want := n[c.path], c.b.bodies.Load(); got != want {
			errs = append(errs, fmt.Errorf("%d access lines via %s, want %d (of %d lines)", got, c.path, want, len(lines)))
		}
		if got := bytes[c.path]; got < c.b.bytesMin.Load() || got > c.b.bytesMax.Load() {
			errs = append(errs, fmt.Errorf("%d bytes via %s in the access log, want %d to %d", got, c.path, c.b.bytesMin.Load(), c.b.bytesMax.Load()))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s server: %w", s.name, err)
	}
	return nil
}

// checkTLSStat prints the kernel's kTLS counters and checks them: every
// transmit and receive session the servers opened is accounted for (the
// connections handed over, both ways, and the start-up probes'), none is
// left open, and nothing failed to decrypt.
func (e *env) checkTLSStat() error {
	f, err := os.Open("/proc/net/tls_stat")
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		return err
	}
	stat := map[string]int64{}
	var line []string
	for _, l := range strings.Split(string(b), "\n") {
		fs := strings.Fields(l)
		if len(fs) != 2 {
			continue
		}
		v, err := strconv.ParseInt(fs[1], 10, 64)
		if err != nil {
			return fmt.Errorf("/proc/net/tls_stat line %q: %v", l, err)
		}
		stat[fs[0]] = v
		line = append(line, fs[0]+"="+fs[1])
	}
	e.rep.Info("/proc/net/tls_stat: %s", strings.Join(line, " "))
	want := map[string]int64{
		"TlsTxSw":         e.offloaded + probeSessions*e.autoStarts,
		"TlsCurrTxSw":     0,
		"TlsRxSw":         e.offloaded + probeSessions*e.autoStarts,
		"TlsCurrRxSw":     0,
		"TlsDecryptError": 0,
	}
	keys := []string{"TlsTxSw", "TlsCurrTxSw", "TlsRxSw", "TlsCurrRxSw", "TlsDecryptError"}
	rekeys, err := kernelRekeys()
	if err != nil {
		return err
	}
	if rekeys { // the kernel counts the new keys it took (Linux 6.14)
		want["TlsRxRekeyOk"], want["TlsTxRekeyOk"] = e.rekeysRX, e.rekeysTX
		want["TlsRxRekeyError"], want["TlsTxRekeyError"] = 0, 0
		keys = append(keys, "TlsRxRekeyOk", "TlsTxRekeyOk", "TlsRxRekeyError", "TlsTxRekeyError")
	}
	var errs []error
	for _, k := range keys {
		if got, ok := stat[k]; !ok || got != want[k] {
			errs = append(errs, fmt.Errorf("%s = %d (present %v), want %d", k, got, ok, want[k]))
		}
	}
	if len(errs) > 0 {
		errs = append(errs, fmt.Errorf("(%d connections handed over, %d -ktls auto starts)", e.offloaded, e.autoStarts))
	}
	return errors.Join(errs...)
}
