package origin_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// corpusCase is one request of a public corpus (testdata/corpus) with the
// answers RFC 9110/9112 allows an origin that serves GET/HEAD of files.
type corpusCase struct {
	name      string     // "FILE: HEADING", the corpus's own name for it
	raw       []byte     // the bytes sent
	want      [][]string // the RFC's answers: statuses, then "close" if it closes (or "wait", see corpusWait)
	deviation [][]string // segorigin's answer where it is not the RFC's
	rfc       string     // the section that decides it
}

// corpusDeadline bounds reading one case's answer to its end: a server
// that keeps a connection the verdict says it must close fails here.
// corpusWait is the shorter one for a case whose answer is "wait" (only
// ever a transport's deviation): the server still waits for the rest of
// a request whose end it cannot find.
const (
	corpusDeadline = 3 * time.Second
	corpusWait     = 500 * time.Millisecond
)

// TestCorpus replays the request cases of llhttp's test corpus and of
// Go's net/http server tests, each on a fresh connection, and compares
// the statuses (and whether the server closed) with the RFC's verdict.
func TestCorpus(t *testing.T) { everyMode(t, testCorpus) }

func testCorpus(t *testing.T, mode serverMode) {
	ts := mode.start(t, "", nil)
	writeFile(t, ts.root, "a.txt", "0123456789")
	for _, file := range []string{"llhttp.txt", "go.txt"} {
		cases := readCorpus(t, filepath.Join("testdata", "corpus", file))
		for _, cc := range cases {
			t.Run(file+"/"+cc.name, func(t *testing.T) {
				// Each case has its own connection; run together, the
				// ones that wait out a deadline wait at the same time.
				t.Parallel()
				allowed := cc.want
				if cc.deviation != nil {
					allowed = cc.deviation
				}
				got, err := replay(ts, cc.raw, keepsAny(allowed), endsIn(allowed, "wait"))
				if err != nil {
					t.Fatalf("%s: %v (answers so far %v); want %s (%s)", cc.name, err, got, answers(allowed), cc.rfc)
				}
				if !matchesAny(got, allowed) {
					t.Errorf("%s: answers %v, want %s (%s)", cc.name, got, answers(allowed), cc.rfc)
				}
			})
		}
	}
}

// replay sends raw, and the closing request after it when the case may
// leave the connection open, and reads the statuses of the answer to its
// end; "close" ends the list when the closing request went unanswered,
// "wait" when, with mayWait, the server neither answered nor closed
// within corpusWait.
func replay(ts *testServer, raw []byte, appendClosing, mayWait bool) ([]string, error) {
	c := ts.dial()
	msg := raw
	if appendClosing {
		msg = append(append([]byte(nil), raw...), closing...)
	}
	if _, err := c.conn.Write(msg); err != nil && !isReset(err) {
		return nil, fmt.Errorf("write: %w", err)
	}
	deadline := corpusDeadline
	if mayWait {
		deadline = corpusWait
	}
	c.conn.SetReadDeadline(time.Now().Add(deadline))
	b, err := io.ReadAll(c.br)
	var ne net.Error
	if mayWait && errors.As(err, &ne) && ne.Timeout() {
		return append(corpusStatuses(b, raw), "wait"), nil
	}
	if err != nil && !isReset(err) {
		return corpusStatuses(b, raw), fmt.Errorf("not closed within %v: %w", corpusDeadline, err)
	}
	got := corpusStatuses(b, raw)
	if appendClosing && len(got) > 0 && got[len(got)-1] == "200" {
		return got[:len(got)-1], nil
	}
	return append(got, "close"), nil
}

// isReset: a reset after the server's answer ends the connection as a FIN does.
func isReset(err error) bool { return errors.Is(err, syscall.ECONNRESET) }

// corpusStatuses lists the final statuses in b; the first answer is to
// a HEAD when raw is one, so it has no body.
func corpusStatuses(b, raw []byte) []string {
	br := bufio.NewReader(bytes.NewReader(b))
	method := "GET"
	if bytes.HasPrefix(raw, []byte("HEAD ")) {
		method = "HEAD"
	}
	var got []string
	for {
		if _, err := br.Peek(1); err != nil {
			return got
		}
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			return append(got, fmt.Sprintf("unreadable(%v)", err))
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode >= 200 {
			got = append(got, strconv.Itoa(resp.StatusCode))
			method = "GET"
		}
	}
}

// keepsAny reports whether an allowed answer leaves the connection open,
// so the closing request goes after the case.
func keepsAny(allowed [][]string) bool {
	for _, a := range allowed {
		if end := a[len(a)-1]; end != "close" && end != "wait" {
			return true
		}
	}
	return false
}

// endsIn reports whether an allowed answer ends in word.
func endsIn(allowed [][]string, word string) bool {
	for _, a := range allowed {
		if a[len(a)-1] == word {
			return true
		}
	}
	return false
}

func matchesAny(got []string, allowed [][]string) bool {
	for _, a := range allowed {
		// Kept open, the closing request was answered and replay
		// dropped its 200: got is a itself.
		if strings.Join(got, ",") == strings.Join(a, ",") {
			return true
		}
	}
	return false
}

func answers(allowed [][]string) string {
	var s []string
	for _, a := range allowed {
		s = append(s, strings.Join(a, ","))
	}
	return strings.Join(s, " | ")
}

// readCorpus parses a corpus file; its format is described at the top of
// testdata/corpus/llhttp.txt.
func readCorpus(t *testing.T, path string) []corpusCase {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var (
		cases []corpusCase
		cur   *corpusCase
		raw   []string
		inRaw bool
	)
	for i, line := range strings.Split(string(data), "\n") {
		switch {
		case inRaw && line == "~~~":
			inRaw = false
			cur.raw = llhttpBytes(strings.Join(raw, "\n"))
		case inRaw:
			raw = append(raw, line)
		case strings.HasPrefix(line, "=== "):
			cases = append(cases, corpusCase{name: line[len("=== "):]})
			cur = &cases[len(cases)-1]
		case line == "~~~" && cur != nil:
			inRaw, raw = true, nil
		case line == "" || strings.HasPrefix(line, "#"):
		default:
			key, val, ok := strings.Cut(line, ": ")
			if !ok || cur == nil {
				t.Fatalf("%s:%d: %q is no field", path, i+1, line)
			}
			switch key {
			case "want":
				cur.want = parseAnswers(val)
			case "deviation":
				// "ANSWERS: why".
				v, _, _ := strings.Cut(val, ": ")
				cur.deviation = parseAnswers(v)
			case "rfc":
				cur.rfc = val
			case "adapted":
			default:
				t.Fatalf("%s:%d: unknown field %q", path, i+1, key)
			}
		}
	}
	for _, cc := range cases {
		if cc.want == nil || cc.raw == nil || cc.rfc == "" {
			t.Fatalf("%s: case %q lacks want, rfc or its raw request", path, cc.name)
		}
	}
	return cases
}

// parseAnswers reads "405,close | 400" into its alternatives.
func parseAnswers(s string) [][]string {
	var alts [][]string
	for _, alt := range strings.Split(s, "|") {
		alts = append(alts, strings.Split(strings.TrimSpace(alt), ","))
	}
	return alts
}

// llhttpEscapes are llhttp's test/md-test.ts rewrites of a raw request,
// in its order, after its lines are joined by CRLF. \x takes two hex
// digits here (llhttp takes all that follow).
var llhttpEscapes = []struct {
	re   *regexp.Regexp
	repl func(string) string
}{
	{regexp.MustCompile(`\\r`), func(string) string { return "\r" }},
	{regexp.MustCompile(`\\n`), func(string) string { return "\n" }},
	{regexp.MustCompile(`\\t`), func(string) string { return "\t" }},
	{regexp.MustCompile(`\\f`), func(string) string { return "\f" }},
	{regexp.MustCompile(`\\x[0-9a-fA-F]{2}`), func(m string) string {
		v, _ := strconv.ParseUint(m[2:], 16, 8)
		return string([]byte{byte(v)})
	}},
	{regexp.MustCompile(`\\[0-7]{1,3}`), func(m string) string {
		v, _ := strconv.ParseUint(m[1:], 8, 8)
		return string([]byte{byte(v)})
	}},
}

// llhttpBytes turns a raw request as the corpus files write it into its
// bytes: a "\" ending a line joins it to the next, lines are joined by
// CRLF, and then the escapes.
func llhttpBytes(s string) []byte {
	s = strings.ReplaceAll(s, "\\\n", "")
	s = strings.ReplaceAll(s, "\n", "\r\n")
	for _, e := range llhttpEscapes {
		s = e.re.ReplaceAllStringFunc(s, e.repl)
	}
	return []byte(s)
}
