package playertest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// checkRequests judges every media request against the file on disk and
// returns how many carried a Range header.
func checkRequests(t *testing.T, c playerCase, r playerResult, pageOrigin string) (ranged int) {
	t.Helper()
	if len(r.Requests) == 0 {
		t.Fatalf("%s on %s: no requests to the media origin recorded", c.Player, c.Src)
	}
	aborted, unhashed := 0, 0
	for _, q := range r.Requests {
		if q.Range != "" {
			ranged++
		}
		if q.Failure != "" {
			// Players cancel requests they no longer need (ABR switches,
			// teardown): ERR_ABORTED. Chromium cancels requests in flight
			// when the host's network configuration changes (other processes
			// on a shared machine add addresses or namespaces), and players
			// retry: ERR_NETWORK_CHANGED. Anything else is a failure.
			if q.Failure == "net::ERR_ABORTED" || q.Failure == "net::ERR_NETWORK_CHANGED" {
				t.Logf("%s %s (Range %q): %s", q.Method, q.URL, q.Range, q.Failure)
				aborted++
				continue
			}
			t.Errorf("%s %s (Range %q): %s", q.Method, q.URL, q.Range, q.Failure)
			continue
		}
		if q.AllowOrigin != "*" && q.AllowOrigin != pageOrigin {
			t.Errorf("%s %s: Access-Control-Allow-Origin %q, want * or %s", q.Method, q.URL, q.AllowOrigin, pageOrigin)
		}
		if q.Method != "GET" {
			continue // preflights: none expected, but not wrong in themselves
		}
		if q.BodyError != "" {
			unhashed++
		}
		if err := checkQueryToken(q, c.token); err != nil {
			t.Error(err)
		}
		check := func(q mediaRequest) error { return checkAgainstDisk(q, c.root) }
		switch {
		case c.signed && isManifest(q.URL):
			check = func(q mediaRequest) error { return checkSigned(q, c.root) }
		case c.token != "" && isManifest(q.URL):
			check = func(q mediaRequest) error { return checkRewritten(q, c.token) }
		}
		if err := check(q); err != nil {
			t.Error(err)
		}
	}
	if c.stream.rangeOnly && ranged == 0 {
		t.Errorf("%s on %s: no Range requests, but its media is only reachable by Range", c.Player, c.Src)
	}
	if aborted > 0 || unhashed > 0 {
		t.Logf("%d requests cancelled by the player or the browser, %d bodies not readable from the browser (status and headers checked)", aborted, unhashed)
	}
	return ranged
}

// fileOf returns the file on disk that q names under root ("" for
// mediaRoot), and its bytes.
func fileOf(q mediaRequest, root string) (string, []byte, error) {
	u, err := url.Parse(q.URL)
	if err != nil {
		return "", nil, err
	}
	file := diskPathIn(root, u.Path)
	data, err := os.ReadFile(file)
	if err != nil {
		return "", nil, fmt.Errorf("GET %s: file on disk: %v", q.URL, err)
	}
	return file, data, nil
}

// checkAgainstDisk checks one GET's status, Content-Range and body against
// the file it names under root ("" for mediaRoot).
func checkAgainstDisk(q mediaRequest, root string) error {
	file, data, err := fileOf(q, root)
	if err != nil {
		return err
	}
	size := int64(len(data))
	var first, last int64 = 0, size - 1
	switch {
	case q.Range != "":
		if first, last, err = parseSingleRange(q.Range, size); err != nil {
			return fmt.Errorf("GET %s Range %q: %v", q.URL, q.Range, err)
		}
		want := fmt.Sprintf("bytes %d-%d/%d", first, last, size)
		if q.Status != 206 || q.ContentRange != want {
			return fmt.Errorf("GET %s Range %q (If-Range %q) = %d, Content-Range %q; want 206, %q",
				q.URL, q.Range, q.IfRange, q.Status, q.ContentRange, want)
		}
	case q.Status == 304:
		return nil
	case q.Status != 200:
		return fmt.Errorf("GET %s = %d, want 200", q.URL, q.Status)
	}
	switch {
	case q.ContentEncoding != "":
		// Compressed: Content-Length counts the encoded bytes, and the
		// body checked below is what the browser decoded. Only playlists
		// and manifests, whole, are ever compressed.
		if q.ContentEncoding != "gzip" || !isManifest(q.URL) || q.Range != "" {
			return fmt.Errorf("GET %s Range %q: Content-Encoding %q, want none (gzip only for a whole playlist or manifest)", q.URL, q.Range, q.ContentEncoding)
		}
	case q.ContentLength != strconv.FormatInt(last-first+1, 10):
		return fmt.Errorf("GET %s Range %q: Content-Length %q, want %d", q.URL, q.Range, q.ContentLength, last-first+1)
	}
	if q.BodyError != "" {
		return nil
	}
	sum := sha256.Sum256(data[first : last+1])
	if q.BodyLength != last-first+1 || q.SHA256 != hex.EncodeToString(sum[:]) {
		return fmt.Errorf("GET %s Range %q: body of %d bytes is not bytes %d-%d of %s", q.URL, q.Range, q.BodyLength, first, last, file)
	}
	return nil
}

// isManifest says whether u names a playlist or a manifest.
func isManifest(u string) bool {
	p, err := url.Parse(u)
	return err == nil && (strings.HasSuffix(p.Path, ".m3u8") || strings.HasSuffix(p.Path, ".mpd"))
}

// checkQueryToken: with a query token, every request carries it, so the
// player got every URL it asked for from a rewritten playlist.
func checkQueryToken(q mediaRequest, tok string) error {
	if tok == "" {
		return nil
	}
	u, err := url.Parse(q.URL)
	if err != nil {
		return err
	}
	if got := u.Query().Get("token"); got != tok {
		return fmt.Errorf("GET %s: token %q, want the page's query token %q", q.URL, got, tok)
	}
	return nil
}

// checkRewritten checks a playlist or manifest answered to a query token:
// 200 with its Content-Length, the token in it, and nothing else changed:
// without the inserted "?token=T", "&token=T" and "&amp;token=T" it is the
// file on disk.
func checkRewritten(q mediaRequest, tok string) error {
	file, data, err := fileOf(q, "")
	if err != nil {
		return err
	}
	if q.Status != 200 || q.ContentLength != strconv.Itoa(len(q.Text)) {
		return fmt.Errorf("GET %s = %d, Content-Length %q for a body of %d bytes; want 200 and its length", q.URL, q.Status, q.ContentLength, len(q.Text))
	}
	if !strings.Contains(q.Text, "token="+tok) {
		return fmt.Errorf("GET %s: the playlist does not carry the token:\n%s", q.URL, q.Text)
	}
	back := q.Text
	for _, s := range []string{"?token=" + tok, "&amp;token=" + tok, "&token=" + tok} {
		back = strings.ReplaceAll(back, s, "")
	}
	if back != string(data) {
		return fmt.Errorf("GET %s: without the token the body is not %s:\n%s", q.URL, file, q.Text)
	}
	return nil
}

// queryPartRE matches the query part of each URI in a playlist or
// manifest (up to a quote, blank or tag end): what a signing rewrite adds.
var queryPartRE = regexp.MustCompile(`\?[^"\s<>]*`)

// checkSigned checks a playlist or manifest answered to a credential
// signed for it alone (secure_link, an exact-path query token): 200 with
// its Content-Length, credentials written into it, and nothing else
// changed: with every query part removed from both, it is the file on
// disk under root. Whether each credential opens its URI, the requests
// for those URIs show.
func checkSigned(q mediaRequest, root string) error {
	file, data, err := fileOf(q, root)
	if err != nil {
		return err
	}
	if q.Status != 200 || q.ContentLength != strconv.Itoa(len(q.Text)) {
		return fmt.Errorf("GET %s = %d, Content-Length %q for a body of %d bytes; want 200 and its length", q.URL, q.Status, q.ContentLength, len(q.Text))
	}
	if q.Text == string(data) {
		return fmt.Errorf("GET %s: served as %s, with no credential written into it", q.URL, file)
	}
	if queryPartRE.ReplaceAllString(q.Text, "") != queryPartRE.ReplaceAllString(string(data), "") {
		return fmt.Errorf("GET %s: without its query parts the body is not %s:\n%s", q.URL, file, q.Text)
	}
	return nil
}

// parseSingleRange resolves the one byte range players send (RFC 9110
// §14.1.2: first-last, first-, -suffix) against size.
func parseSingleRange(h string, size int64) (first, last int64, err error) {
	spec, ok := strings.CutPrefix(h, "bytes=")
	if !ok || strings.Contains(spec, ",") {
		return 0, 0, fmt.Errorf("not a single byte range")
	}
	a, b, ok := strings.Cut(strings.TrimSpace(spec), "-")
	if !ok {
		return 0, 0, fmt.Errorf("no '-'")
	}
	if a == "" { // -suffix
		n, err := strconv.ParseInt(b, 10, 64)
		if err != nil || n <= 0 {
			return 0, 0, fmt.Errorf("bad suffix length")
		}
		return max(size-n, 0), size - 1, nil
	}
	if first, err = strconv.ParseInt(a, 10, 64); err != nil {
		return 0, 0, err
	}
	last = size - 1
	if b != "" {
		if last, err = strconv.ParseInt(b, 10, 64); err != nil {
			return 0, 0, err
		}
		last = min(last, size-1)
	}
	if first > last || first >= size {
		return 0, 0, fmt.Errorf("not satisfiable for size %d", size)
	}
	return first, last, nil
}

func TestParseSingleRange(t *testing.T) {
	const size = 100
	tests := []struct {
		name, header string
		first, last  int64
		wantErr      bool
	}{
		{"first-last", "bytes=10-19", 10, 19, false},
		{"open end", "bytes=90-", 90, 99, false},
		{"last past end", "bytes=90-500", 90, 99, false},
		{"suffix", "bytes=-10", 90, 99, false},
		{"suffix longer than file", "bytes=-500", 0, 99, false},
		{"whole", "bytes=0-", 0, 99, false},
		{"multi-range", "bytes=0-1,5-6", 0, 0, true},
		{"unsatisfiable", "bytes=100-", 0, 0, true},
		{"reversed", "bytes=20-10", 0, 0, true},
		{"other unit", "items=0-1", 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first, last, err := parseSingleRange(tt.header, size)
			if tt.wantErr {
				if err == nil {
					t.Errorf("parseSingleRange(%q, %d) = %d, %d, nil; want an error", tt.header, size, first, last)
				}
				return
			}
			if err != nil || first != tt.first || last != tt.last {
				t.Errorf("parseSingleRange(%q, %d) = %d, %d, %v; want %d, %d, nil", tt.header, size, first, last, err, tt.first, tt.last)
			}
		})
	}
}

// TestCheckRewritten proves the judge of rewritten playlists rejects a
// playlist served without the token, or changed beyond it.
func TestCheckRewritten(t *testing.T) {
	const p, tok = "/hls/ts/180p/index.m3u8", "exp=1~acl=/hls/ts/*~hmac=00"
	data, err := os.ReadFile(diskPath(p))
	if err != nil {
		t.Fatal(err)
	}
	rewritten := strings.ReplaceAll(string(data), ".ts\n", ".ts?token="+tok+"\n")
	u := "http://127.0.0.1:1" + p + "?token=x"
	runJudge(t, "checkRewritten", func(q mediaRequest) error { return checkRewritten(q, tok) }, []judgeCase{
		{"rewritten", manifestReply(u, 200, rewritten), true},
		{"served as the file", manifestReply(u, 200, string(data)), false},
		{"another change", manifestReply(u, 200, strings.Replace(rewritten, "#EXTINF", "#EXTINF ", 1)), false},
		{"error status", manifestReply(u, 403, rewritten), false},
	})
	if err := checkQueryToken(mediaRequest{URL: "http://127.0.0.1:1/hls/ts/180p/seg0.ts"}, tok); err == nil {
		t.Error("checkQueryToken of a URL without the token = nil, want an error")
	}
}

// TestCheckSigned proves the judge of manifests signed per URI rejects
// one served as the file, or changed beyond its URIs' query parts.
func TestCheckSigned(t *testing.T) {
	const p = "/dash/ondemand/manifest.mpd"
	data, err := os.ReadFile(diskPath(p))
	if err != nil {
		t.Fatal(err)
	}
	signed := strings.ReplaceAll(string(data), ".mp4</BaseURL>", ".mp4?md5=AbC-_9&amp;expires=1796348318</BaseURL>")
	u := "http://127.0.0.1:1" + p + "?md5=x&expires=1"
	runJudge(t, "checkSigned", func(q mediaRequest) error { return checkSigned(q, "") }, []judgeCase{
		{"signed", manifestReply(u, 200, signed), true},
		{"served as the file", manifestReply(u, 200, string(data)), false},
		{"another change", manifestReply(u, 200, strings.Replace(signed, `indexRange="760-847"`, `indexRange="760-848"`, 1)), false},
		{"a URI changed", manifestReply(u, 200, strings.Replace(signed, "180p.mp4?", "270p.mp4?", 1)), false},
		{"error status", manifestReply(u, 403, signed), false},
	})
}

// judgeCase is one reply a judge must accept (ok) or reject.
type judgeCase struct {
	name string
	q    mediaRequest
	ok   bool
}

// runJudge runs judge, named name, over cases.
func runJudge(t *testing.T, name string, judge func(mediaRequest) error, cases []judgeCase) {
	t.Helper()
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			if err := judge(tt.q); (err == nil) != tt.ok {
				t.Errorf("%s(%s) = %v, want ok=%v", name, tt.name, err, tt.ok)
			}
		})
	}
}

// manifestReply is a GET of the manifest u answered with status and body.
func manifestReply(u string, status int, body string) mediaRequest {
	return mediaRequest{URL: u, Method: "GET", Status: status, ContentLength: strconv.Itoa(len(body)), Text: body}
}

// TestCheckAgainstDisk proves the judge rejects what a broken origin would
// send, using fixtures/media/test/digits.txt.
func TestCheckAgainstDisk(t *testing.T) {
	const p = "/test/digits.txt"
	data, err := os.ReadFile(diskPath(p))
	if err != nil {
		t.Fatal(err)
	}
	size := int64(len(data))
	if size < 10 {
		t.Fatalf("%s has %d bytes; the cases below need at least 10", p, size)
	}
	hash := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }
	span := func(status int, cr string, body []byte) mediaRequest {
		return mediaRequest{URL: "http://127.0.0.1:1/t/tok" + p, Method: "GET", Range: "bytes=2-5", Status: status,
			ContentRange: cr, ContentLength: strconv.Itoa(len(body)), BodyLength: int64(len(body)), SHA256: hash(body)}
	}
	good := fmt.Sprintf("bytes 2-5/%d", size)
	tests := []struct {
		name string
		q    mediaRequest
		ok   bool
	}{
		{"span", span(206, good, data[2:6]), true},
		{"span answered 200", span(200, "", data), false},
		{"wrong Content-Range", span(206, fmt.Sprintf("bytes 2-6/%d", size), data[2:6]), false},
		{"wrong total", span(206, fmt.Sprintf("bytes 2-5/%d", size+1), data[2:6]), false},
		{"wrong bytes", span(206, good, data[3:7]), false},
		{"whole file", mediaRequest{URL: "http://127.0.0.1:1" + p, Method: "GET", Status: 200,
			ContentLength: strconv.FormatInt(size, 10), BodyLength: size, SHA256: hash(data)}, true},
		{"whole file truncated", mediaRequest{URL: "http://127.0.0.1:1" + p, Method: "GET", Status: 200,
			ContentLength: strconv.FormatInt(size-1, 10), BodyLength: size - 1, SHA256: hash(data[:size-1])}, false},
		{"error status", mediaRequest{URL: "http://127.0.0.1:1" + p, Method: "GET", Status: 500}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkAgainstDisk(tt.q, "")
			if (err == nil) != tt.ok {
				t.Errorf("checkAgainstDisk(%+v) = %v, want ok=%v", tt.q, err, tt.ok)
			}
		})
	}
}
