package ktlsvm

import (
	"crypto/tls"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"
)

// Prefix starts every line of the protocol the client prints on the
// serial console; the kernel's own lines and anything else are ignored.
const Prefix = "KTLSVM "

// Plans: what one boot runs. PlanFull is every case over kTLS, then every
// case again with -ktls off (one vCPU); PlanSMP is concurrent connections
// on two vCPUs, over kTLS.
const (
	PlanFull = "full"
	PlanSMP  = "smp2"
	// PlanKTLS is PlanFull without its -ktls off run, which does not
	// depend on the kernel: what another kernel is booted for.
	PlanKTLS = "ktls"
	// PlanMeasure measures instead of testing (BenchmarkKTLSMeasure):
	// the server's memory per idle connection and its system calls per
	// request, plain HTTP against HTTPS on the loops, in one boot.
	PlanMeasure = "measure"
	// PlanConformance runs origin's own conformance and parity tests
	// (its test binary, as root) on this kernel: over HTTPS their
	// servers hand every connection to the event loops.
	PlanConformance = "conformance"
)

// The results of PlanMeasure.
const (
	MeasureRSS      = "measure/rss"
	MeasureSyscalls = "measure/syscalls"
)

// Combo is one TLS version and cipher suite the client pins.
type Combo struct {
	Name    string
	Version uint16
	Suite   uint16
}

// Combos are every version and cipher the kernel seals: TLS 1.2 and 1.3,
// each with AES-128-GCM, AES-256-GCM and ChaCha20-Poly1305 (the server's
// -tls-dev certificate is ECDSA).
var Combos = []Combo{
	{"tls1.2-aes128gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256},
	{"tls1.2-aes256gcm", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384},
	{"tls1.2-chacha20", tls.VersionTLS12, tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256},
	{"tls1.3-aes128gcm", tls.VersionTLS13, tls.TLS_AES_128_GCM_SHA256},
	{"tls1.3-aes256gcm", tls.VersionTLS13, tls.TLS_AES_256_GCM_SHA384},
	{"tls1.3-chacha20", tls.VersionTLS13, tls.TLS_CHACHA20_POLY1305_SHA256},
}

// Cases a combo runs in each run of PlanFull, in order. The first eleven
// share one keep-alive connection.
var Cases = []string{
	"full", "range", "range-records", "range-suffix", "range-open", "multirange",
	"head", "not-modified", "not-found", "unsatisfiable", "playlist",
	"pipelined", "slow-reader", "abort", "close-notify", "write-timeout",
	"keyupdate", "keyupdate-requested", // TLS 1.3 only
	"ipv6",
	"hrr",                // TLS 1.3 only
	"pipelined-finished", // TLS 1.3 only
	"resumption",         // TLS 1.3 only
	"client-close-notify",
	"drain",
}

// tls13Only are the cases TLS 1.2 does not have: KeyUpdate and
// HelloRetryRequest are TLS 1.3 messages (RFC 8446 §4.6.3, §4.1.4); a
// TLS 1.2 client's Finished comes before the server's, so nothing can
// follow it before the handshake ends; segorigin gives TLS 1.2 clients no
// session tickets where it hands connections to the kernel (crypto/tls
// logs no master secret on a TLS 1.2 resumption).
var tls13Only = map[string]bool{"keyupdate": true, "keyupdate-requested": true, "hrr": true,
	"pipelined-finished": true, "resumption": true}

// CasesFor are the Cases combo c runs.
func CasesFor(c Combo) []string {
	var out []string
	for _, name := range Cases {
		if c.Version == tls.VersionTLS12 && tls13Only[name] {
			continue
		}
		out = append(out, name)
	}
	return out
}

// Runs of PlanFull: the same client against -ktls auto, then -ktls off.
const (
	RunKTLS = "ktls"
	RunCopy = "copy"
)

// Runs are the runs plan makes: PlanFull both, PlanKTLS the first.
func Runs(plan string) []string {
	switch plan {
	case PlanFull:
		return []string{RunKTLS, RunCopy}
	case PlanKTLS:
		return []string{RunKTLS}
	}
	return nil
}

// runChecks end each run: the IPv4 server's and the IPv6 server's metrics,
// the access log of both, and their exit after SIGTERM.
var runChecks = []string{"metrics-v4", "metrics-v6", "access-log", "exit-v4", "exit-v6"}

// Checks every plan begins with, before any server that uses kTLS. The
// guest boots without the tls module and every server runs with the
// shipped unit's privileges (not root, CAP_NET_BIND_SERVICE only):
// CheckNoModule (PlanFull and PlanKTLS) starts one then, which must serve without
// kTLS, log how to load the module, and not have it loaded by the kernel;
// CheckModulesLoad loads it as the Debian package has it loaded at boot,
// by modprobe of what its modules-load.d file names.
const (
	CheckNoModule    = "no-module"
	CheckModulesLoad = "modules-load"
)

// Expected lists every result name a boot with plan must report, each
// once: the checks above, run/combo/case and run/check for each run, then
// "tls-stat".
func Expected(plan string) []string {
	var out []string
	switch plan {
	case PlanFull, PlanKTLS:
		out = append(out, CheckNoModule, CheckModulesLoad)
		for _, run := range Runs(plan) {
			for _, c := range Combos {
				for _, name := range CasesFor(c) {
					out = append(out, run+"/"+c.Name+"/"+name)
				}
			}
			for _, name := range runChecks {
				out = append(out, run+"/"+name)
			}
		}
	case PlanSMP:
		out = append(out, CheckModulesLoad)
		for _, c := range Combos {
			out = append(out, PlanSMP+"/"+c.Name+"/concurrent")
		}
		out = append(out, PlanSMP+"/metrics-v4", PlanSMP+"/access-log", PlanSMP+"/exit-v4")
	case PlanMeasure:
		return []string{CheckModulesLoad, MeasureRSS, MeasureSyscalls}
	case PlanConformance:
		return []string{CheckModulesLoad, PlanConformance + "/1", PlanConformance + "/2"}
	default:
		return nil
	}
	return append(out, "tls-stat")
}

// Reporter prints protocol lines; safe for concurrent use, one write per
// line so lines from goroutines never interleave.
type Reporter struct {
	mu       sync.Mutex // protects w, seen and failures
	w        io.Writer
	seen     map[string]bool
	failures int
	start    time.Time // INFO lines say the time since
}

// NewReporter prints to w.
func NewReporter(w io.Writer) *Reporter {
	return &Reporter{w: w, seen: map[string]bool{}, start: time.Now()}
}

// Result reports the case name: PASS when err is nil, FAIL with err.
func (r *Reporter) Result(name string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen[name] = true
	if err != nil {
		r.failures++
		fmt.Fprintf(r.w, "%sFAIL %s: %s\n", Prefix, name, oneLine(err.Error()))
		return
	}
	fmt.Fprintf(r.w, "%sPASS %s\n", Prefix, name)
}

// Info prints a line the host keeps in its log but does not judge.
func (r *Reporter) Info(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.w, "%sINFO %.1fs %s\n", Prefix, time.Since(r.start).Seconds(), oneLine(fmt.Sprintf(format, args...)))
}

// Done reports every name of Expected(plan) not reported as a failure,
// then prints the verdict line, and returns whether all passed.
func (r *Reporter) Done(plan string) bool {
	for _, name := range Expected(plan) {
		r.mu.Lock()
		seen := r.seen[name]
		r.mu.Unlock()
		if !seen {
			r.Result(name, fmt.Errorf("not run"))
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.failures > 0 {
		fmt.Fprintf(r.w, "%sDONE FAIL %d\n", Prefix, r.failures)
		return false
	}
	fmt.Fprintf(r.w, "%sDONE PASS\n", Prefix)
	return true
}

// oneLine keeps a message on its protocol line.
func oneLine(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "\r", `\r`), "\n", `\n`)
}

// Report is what a console said, as the host judges it.
type Report struct {
	Passed   map[string]int    // name -> times reported PASS
	Failed   map[string]string // name -> the last FAIL message
	Done     string            // "PASS", "FAIL n", or "" when the verdict line never came
	Unparsed []string          // protocol lines of no known kind
}

// Parse reads the protocol lines of a console log.
func Parse(console string) Report {
	r := Report{Passed: map[string]int{}, Failed: map[string]string{}}
	for _, line := range strings.Split(console, "\n") {
		line = strings.TrimRight(line, "\r")
		i := strings.Index(line, Prefix)
		if i < 0 {
			continue
		}
		kind, rest, _ := strings.Cut(line[i+len(Prefix):], " ")
		switch kind {
		case "PASS":
			r.Passed[rest]++
		case "FAIL":
			name, msg, _ := strings.Cut(rest, ": ")
			r.Failed[name] = msg
		case "DONE":
			r.Done = rest
		case "INFO":
		default:
			r.Unparsed = append(r.Unparsed, line)
		}
	}
	return r
}

// Problems lists what makes the report a failure for plan: a missing
// verdict, a failed or missing result, a result reported twice.
func (r Report) Problems(plan string) []string {
	var out []string
	if r.Done != "PASS" {
		out = append(out, fmt.Sprintf("verdict %q, want PASS", r.Done))
	}
	want := map[string]bool{}
	for _, name := range Expected(plan) {
		want[name] = true
		switch msg, failed := r.Failed[name]; {
		case failed:
			out = append(out, name+": FAIL: "+msg)
		case r.Passed[name] == 0:
			out = append(out, name+": no result")
		case r.Passed[name] > 1:
			out = append(out, fmt.Sprintf("%s: reported %d times", name, r.Passed[name]))
		}
	}
	var extra []string
	for name, msg := range r.Failed {
		if !want[name] {
			extra = append(extra, name+": FAIL: "+msg)
		}
	}
	for name := range r.Passed {
		if !want[name] {
			extra = append(extra, name+": not an expected result")
		}
	}
	sort.Strings(extra)
	out = append(out, extra...)
	for _, line := range r.Unparsed {
		out = append(out, "unparsed protocol line: "+line)
	}
	return out
}
