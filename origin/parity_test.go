package origin_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
)

// parityTransport is one way segorigin serves HTTP/1.1: the plain
// engines and the two kinds of HTTPS (this kernel has no kTLS, so "auto"
// is userspace TLS; the emulated mode hands every connection over).
type parityTransport struct {
	name string
	mode serverMode
}

func parityTransports(t *testing.T) []parityTransport {
	tlsNamed := func(name string) *tlsMode {
		for i := range tlsModes {
			if tlsModes[i].name == name {
				return &tlsModes[i]
			}
		}
		t.Fatalf("no tlsMode %q", name)
		return nil
	}
	return []parityTransport{
		{"loop", serverMode{engine: origin.EngineLoop}},
		{"fasthttp", serverMode{engine: origin.EngineFastHTTP}},
		{"TLS1.3", serverMode{tls: tlsNamed("TLS1.3")}}, // on the loops: crypto/tls on their threads without kTLS
		{"TLS1.3-stream", serverMode{tls: tlsNamed("TLS1.3"), engine: origin.EngineFastHTTP}},
		{"TLS1.3-ktls-emulated", serverMode{tls: tlsNamed("TLS1.3-ktls-emulated")}},
	}
}

// parityCase is one connection's bytes; the last request on it ends so
// that the server closes and the whole answer can be read. "%ETAG%" is
// replaced by the ETag the same server gave /a.txt in "GET small".
// parityCase is one scripted exchange. lingers: a refusal that leaves
// part of the request unread, after which every transport must keep the
// connection open, reading and dropping (RFC 9112 §9.6), once it has
// answered.
type parityCase struct {
	name, raw string
	lingers   bool
}

const parityClose = "GET /a.txt HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n"

func parityCases() []parityCase {
	req := func(method, target string, fields ...string) string {
		return method + " " + target + " HTTP/1.1\r\nHost: t\r\nConnection: close\r\n" + strings.Join(append(fields, ""), "\r\n") + "\r\n"
	}
	open := func(method, target string, fields ...string) string {
		return method + " " + target + " HTTP/1.1\r\nHost: t\r\n" + strings.Join(append(fields, ""), "\r\n") + "\r\n"
	}
	return []parityCase{
		{"GET small", req("GET", "/a.txt"), false},
		{"HEAD small", req("HEAD", "/a.txt"), false},
		{"GET large", req("GET", "/big.m4s"), false},
		{"HEAD large", req("HEAD", "/big.m4s"), false},
		{"pipelined", open("GET", "/a.txt") + open("HEAD", "/big.m4s") + open("GET", "/big.m4s", "Range: bytes=100-199") + open("GET", "/nope.ts") + parityClose, false},
		{"If-None-Match current", req("GET", "/a.txt", "If-None-Match: %ETAG%"), false},
		{"If-Match mismatch", req("GET", "/a.txt", `If-Match: "nope"`), false},
		{"If-Modified-Since now", req("GET", "/big.m4s", "If-Modified-Since: "+time.Now().UTC().Format(http.TimeFormat)), false},
		{"If-Modified-Since long ago", req("GET", "/a.txt", "If-Modified-Since: Sat, 01 Jan 2000 00:00:00 GMT"), false},
		{"range single", req("GET", "/big.m4s", "Range: bytes=17000-17999"), false},
		{"range multi", req("GET", "/big.m4s", "Range: bytes=0-9,18000-18009"), false},
		{"range unsatisfiable", req("GET", "/big.m4s", "Range: bytes=999999-"), false},
		{"404", req("GET", "/nope.ts"), false},
		{"405", req("POST", "/a.txt", "Content-Length: 3") + "abc", false},
		{"501", req("FOO", "/a.txt"), false},
		{"bare LF", "GET /a.txt HTTP/1.1\nHost: t\nConnection: close\n\n", true},
		{"obs-fold", req("GET", "/a.txt", "X-A: 1", " folded"), false},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", true},
		{"oversized header", req("GET", "/a.txt", "X-Pad: "+strings.Repeat("p", 9000)), true},
		{"over-long target", req("GET", "/a.txt?"+strings.Repeat("q", 9000)), true},
		{"body over 64 KiB", open("GET", "/a.txt", "Content-Length: 100000") + strings.Repeat("x", 1000), true},
		{"expect 100-continue", open("GET", "/a.txt", "Expect: 100-continue", "Content-Length: 4") + "body" + parityClose, false},
		{"chunk size of 16 digits", open("GET", "/a.txt", "Transfer-Encoding: chunked") + "0000000000000005\r\nhello\r\n0\r\n\r\n" + parityClose, false},
		{"HTTP/1.0 keep-alive", "GET /a.txt HTTP/1.0\r\nConnection: keep-alive\r\n\r\n" + parityClose, false},
		{"Connection: close", req("GET", "/big.m4s", "Range: bytes=0-0"), false},
	}
}

// parityReadTimeout is every server's -read-timeout, short: no case may
// wait for it.
const parityReadTimeout = time.Second

// parityResult is what one case did on one transport.
type parityResult struct {
	answer  []byte
	counts  map[string]int64 // Stats deltas, excluded fields left out
	access  []string         // access log lines, normalised
	lingers bool             // the server held the connection once it had answered
}

// TestParity drives the same scripted requests through every transport
// and compares the answers byte for byte (Date, an interim 100 Continue
// and the multipart boundary aside), the counters each case moved, and
// its access log lines: every transport must do what the loop does.
func TestParity(t *testing.T) {
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	cases := parityCases()
	results := map[string]map[string]parityResult{} // case, transport
	transports := parityTransports(t)
	for _, tr := range transports {
		for name, r := range runParity(t, tr, old, cases) {
			if results[name] == nil {
				results[name] = map[string]parityResult{}
			}
			results[name][tr.name] = r
		}
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			byTr := results[c.name]
			for _, tr := range transports[1:] {
				sameParity(t, transports[0].name, byTr[transports[0].name], tr.name, byTr[tr.name])
			}
		})
	}
}

// runParity starts one server on tr and runs every case on it, in order.
func runParity(t *testing.T, tr parityTransport, old time.Time, cases []parityCase) map[string]parityResult {
	var access syncBuffer
	ts := tr.mode.start(t, "", func(c *origin.Config) {
		c.AccessLog, c.AccessLogFormat = &access, accesslog.JSON
		c.ReadTimeout = parityReadTimeout
		// A miss stays remembered from one case to the next, however
		// long the cases take (the handshakes of an emulated guest).
		c.NegativeTTL = time.Hour
		// Written before the server starts, so that no late watcher
		// event turns a cache hit into a miss on one transport only.
		for _, p := range []string{writeFile(t, c.Root, "a.txt", "0123456789"), writeSynth(t, c.Root, "big.m4s", 20000)} {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	})
	out := map[string]parityResult{}
	var etag string
	for _, c := range cases {
		before, logged := ts.srv.Stats(), len(access.String())
		r := parityExchange(t, ts, strings.ReplaceAll(c.raw, "%ETAG%", etag), c.lingers)
		if c.lingers && !r.lingers {
			t.Errorf("%s: %s: the server closed at once after its answer, want it to linger (RFC 9112 §9.6)", tr.name, c.name)
		}
		r.counts = statsDelta(before, ts.srv.Stats())
		if n := r.counts[otherCode]; n != 0 {
			t.Errorf("%s: %s: %d responses counted under code \"other\": every code the server sends is counted on its own", tr.name, c.name, n)
		}
		r.access = normaliseAccess(t, access.String()[logged:])
		out[c.name] = r
		if c.name == "GET small" {
			m := etagField.FindSubmatch(r.answer)
			if m == nil {
				t.Fatalf("%s: GET small: no ETag in %q", tr.name, r.answer)
			}
			etag = string(m[1])
		}
	}
	return out
}

// parityExchange writes raw on a fresh connection, reads the answer to the
// server's close, and closes its side; it returns once the server has
// closed the connection too. With watchLinger it records whether the
// server held the connection after its answer: on the loop (isLoop) the
// connection must still be open when the answer has been read; elsewhere
// it must close while the client still holds its side.
func parityExchange(t *testing.T, ts *testServer, raw string, watchLinger bool) parityResult {
	t.Helper()
	open := func() int64 { return ts.srv.Stats().ConnsOpen }
	c := ts.dial()
	if _, err := io.WriteString(c.conn, raw); err != nil {
		t.Fatalf("write: %v", err)
	}
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	got, err := io.ReadAll(c.br)
	if err != nil && len(got) == 0 {
		t.Fatalf("reading the answer: %v", err)
	}
	r := parityResult{answer: normaliseBoundary(normalise(got))}
	if watchLinger {
		// The answer ended (EOF) while the server, lingering for up
		// to 5 s, still holds the connection.
		r.lingers = open() == 1
	}
	c.conn.Close()
	waitFor(t, 10*time.Second, "the connection to close", func() bool { return open() == 0 })
	return r
}

// otherCode is the counter of responses whose code has no counter of its
// own.
var otherCode = func() string {
	i := 0
	for origin.StatusLabel(i) != "other" {
		i++
	}
	return fmt.Sprintf("ByStatus[%d]", i)
}()

var etagField = regexp.MustCompile(`(?i)\r\netag: ([^\r]*)\r\n`)

var boundaryParam = regexp.MustCompile(`boundary=([0-9a-f]{30})`)

// normaliseBoundary replaces the random multipart boundary by one of the
// same length, so Content-Length stays exact.
func normaliseBoundary(b []byte) []byte {
	m := boundaryParam.FindSubmatch(b)
	if m == nil {
		return b
	}
	return bytes.ReplaceAll(b, m[1], bytes.Repeat([]byte("B"), len(m[1])))
}

// normaliseAccess drops from JSON access lines what differs by
// connection or by transport: the time and duration, the client's
// address (its port), and via, the body path (sendfile, inline, copy).
func normaliseAccess(t *testing.T, lines string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSuffix(lines, "\n"), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("access line %q: %v", l, err)
		}
		for _, k := range []string{"time", "duration", "client", "via"} {
			if _, ok := m[k]; !ok {
				t.Errorf("access line %q lacks %q", l, k)
			}
			delete(m, k)
		}
		b, _ := json.Marshal(m) // keys sorted
		out = append(out, string(b))
	}
	return out
}

// parityExcluded are the counters that name the transport, left out of
// the comparison:
//   - Transport.{Sendfile,KTLS,Inline,Copy}{Responses,Bytes}: the body
//     path is the transport's (sendfile on plain TCP, copy on userspace
//     TLS, the kTLS hand-over emulated); their sums are compared instead.
//   - TLS.*: handshakes and offloads happen on HTTPS only.
//   - Loop.*: only the loop engine has event loops.
//   - *Nanos: durations (the cold path's waits, where files are not in
//     the page cache), never the same twice.
//
// Everything else is compared, the listeners' counters included: every
// transport passes through the same gate, and ConnsOpen is 0 after each
// case.
var parityExcluded = regexp.MustCompile(`^(Transport\.(Sendfile|KTLS|Inline|Copy)(Responses|Bytes)|TLS\.|Loop\.|.*Nanos$)`)

// statsDelta is what moved between two snapshots, by field path, the
// excluded fields replaced by the body paths' sums.
func statsDelta(before, after origin.Stats) map[string]int64 {
	a, b := map[string]int64{}, map[string]int64{}
	flattenStats("", reflect.ValueOf(before), b)
	flattenStats("", reflect.ValueOf(after), a)
	d := map[string]int64{}
	for k, v := range a {
		if v == b[k] {
			continue
		}
		if m := parityExcluded.FindStringSubmatch(k); m != nil {
			if m[3] != "" {
				d["Transport.*"+m[3]] += v - b[k]
			}
			continue
		}
		d[k] = v - b[k]
	}
	return d
}

func flattenStats(path string, v reflect.Value, out map[string]int64) {
	switch v.Kind() {
	case reflect.Int64:
		out[path] = v.Int()
	case reflect.Array:
		for i := range v.Len() {
			flattenStats(fmt.Sprintf("%s[%d]", path, i), v.Index(i), out)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			f := v.Type().Field(i)
			p := strings.TrimPrefix(path+"."+f.Name, ".")
			if f.Anonymous {
				p = path // ListenerCounters' fields read as the server's own
			}
			flattenStats(p, v.Field(i), out)
		}
	}
}

// sameParity compares two transports' results for one case.
func sameParity(t *testing.T, na string, a parityResult, nb string, b parityResult) {
	t.Helper()
	if !bytes.Equal(a.answer, b.answer) {
		t.Errorf("%s and %s answer differently (at byte %d):\n%s: %q\n%s: %q", na, nb, firstDiff(a.answer, b.answer), na, a.answer, nb, b.answer)
	}
	if !reflect.DeepEqual(a.counts, b.counts) {
		t.Errorf("%s and %s count differently:\n%s: %v\n%s: %v", na, nb, na, a.counts, nb, b.counts)
	}
	if !slices.Equal(a.access, b.access) {
		t.Errorf("%s and %s log differently:\n%s: %q\n%s: %q", na, nb, na, a.access, nb, b.access)
	}
}
