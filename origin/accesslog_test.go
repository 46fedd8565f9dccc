package origin_test

import (
	"encoding/json"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
	"segorigin/origin/admin"
	"segorigin/origin/cmcd"
	"segorigin/origin/token"
)

// TestAccessLogJSON: one JSON object per response with the documented
// fields; tokens are redacted wherever they travel (path, query, Referer)
// while kid and exp stay; CMCD from the query and the four headers is
// parsed into the line; the file cache's outcome is named.
func TestAccessLogJSON(t *testing.T) {
	var buf syncBuffer
	ts, key := signingServer(t, func(c *origin.Config) {
		c.AccessLog, c.AccessLogFormat = &buf, accesslog.JSON
		// Written before the server starts, so that no late watcher
		// event for it turns the second request's cache hit into a miss.
		writeFile(t, c.Root, "vod/a/seg1.ts", "0123456789abcdef")
	})
	exp := time.Now().Add(time.Hour).Truncate(time.Second)
	tok := mustSign(t, key, token.Claims{Expiry: exp, ACL: []string{"/vod/a/*"}, KeyID: "k1"})
	seg := token.PathSegment(tok)
	mac := tok[strings.LastIndex(tok, "=")+1:]

	c := ts.dial()
	mustStatus(t, c.do("GET", "/t/"+seg+"/vod/a/seg1.ts", "Range: bytes=0-9", "User-Agent: hls.js/1.7",
		"Referer: https://p.example/t/"+seg+"/vod/a/master.m3u8",
		"CMCD-Object: br=3200,ot=v", `CMCD-Request: bl=21300,nor="seg2.ts",nrr="0-99",su`,
		`CMCD-Session: sf=h,sid="6e2fb550"`, "CMCD-Status: bs"), 206, "path carrier with CMCD headers")
	mustStatus(t, c.do("GET", "/vod/a/seg1.ts?token="+url.QueryEscape(tok)+"&CMCD="+url.QueryEscape("ot=v,br=x,sf=d")), 200, "query carrier, malformed CMCD")
	mustStatus(t, c.do("GET", "/vod/a/nope.ts?token="+url.QueryEscape(tok)), 404, "missing file")
	mustStatus(t, c.do("GET", "/vod/a/nope.ts?token="+url.QueryEscape(tok)), 404, "missing file again")
	waitFor(t, 2*time.Second, "four access lines", func() bool { return strings.Count(buf.String(), "\n") == 4 })

	log := buf.String()
	for _, secret := range []string{mac, seg, url.QueryEscape(tok)} {
		if strings.Contains(log, secret) {
			t.Errorf("access log holds a token or its MAC (%.20s...):\n%s", secret, log)
		}
	}
	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("access line %q: %v", l, err)
		}
		lines = append(lines, m)
	}
	want := []map[string]any{
		{"path": "/t/…/vod/a/seg1.ts", "query": "", "status": 206.0, "bytes": 10.0, "range": "bytes=0-9", "cache": "miss",
			"host": "test", "user_agent": "hls.js/1.7", "referer": "https://p.example/t/…/vod/a/master.m3u8",
			"token_kid": "k1", "token_exp": float64(exp.Unix()), "cmcd_malformed": false,
			"cmcd": map[string]any{"br": 3200.0, "ot": "v", "bl": 21300.0, "nor": "seg2.ts", "nrr": "0-99", "su": true, "sf": "h", "sid": "6e2fb550", "bs": true}},
		{"path": "/vod/a/seg1.ts", "query": "token=…&CMCD=ot%3Dv%2Cbr%3Dx%2Csf%3Dd", "status": 200.0, "bytes": 16.0, "cache": "hit",
			"token_kid": "k1", "cmcd_malformed": true, "cmcd": map[string]any{"ot": "v", "sf": "d"}},
		{"path": "/vod/a/nope.ts", "status": 404.0, "cache": "miss", "cmcd": map[string]any{}},
		{"path": "/vod/a/nope.ts", "status": 404.0, "cache": "negative_hit"},
	}
	for i, w := range want {
		for k, v := range w {
			if got := lines[i][k]; !jsonEqual(got, v) {
				t.Errorf("line %d %q = %#v, want %#v", i, k, got, v)
			}
		}
		for _, k := range []string{"time", "client", "method", "proto", "duration"} {
			if _, ok := lines[i][k]; !ok {
				t.Errorf("line %d lacks %q: %v", i, k, lines[i])
			}
		}
		if d, ok := lines[i]["duration"].(float64); !ok || d < 0 || d > 60 {
			t.Errorf("line %d duration %v: want seconds as a number", i, lines[i]["duration"])
		}
	}
	// Which body path sends a body depends on the platform and on other
	// work landing (small bodies from memory): only the vocabulary is fixed.
	for i := range lines {
		switch lines[i]["via"] {
		case "", "sendfile", "ktls", "inline", "copy":
		default:
			t.Errorf("line %d via %q: not a documented body path", i, lines[i]["via"])
		}
	}
	st := ts.srv.Stats()
	if got := st.CMCD.Requests[cmcd.ObjectVideo][cmcd.FormatHLS]; got != 1 {
		t.Errorf("CMCD requests{ot=v,sf=h} = %d, want 1", got)
	}
	if got := st.CMCD.Requests[cmcd.ObjectVideo][cmcd.FormatDASH]; got != 1 {
		t.Errorf("CMCD requests{ot=v,sf=d} = %d, want 1", got)
	}
	if s, m := st.CMCD.Starvation, st.CMCD.Malformed; s != 1 || m != 1 {
		t.Errorf("CMCD starvation, malformed = %d, %d; want 1, 1", s, m)
	}
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, want := range []string{
		`segorigin_cmcd_requests_total{object_type="v",streaming_format="h"} 1`,
		`segorigin_cmcd_requests_total{object_type="v",streaming_format="d"} 1`,
		"segorigin_cmcd_buffer_starvation_total 1",
		"segorigin_cmcd_malformed_total 1",
	} {
		if !strings.Contains(rec.Body.String(), want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
}

// signingServer starts a server (cfg changed by mod) that requires tokens,
// and returns the key that signs them.
func signingServer(t *testing.T, mod func(*origin.Config)) (*testServer, token.Key) {
	t.Helper()
	key := token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	ring, err := token.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	return startServer(t, "", func(c *origin.Config) {
		c.Auth.Keys = ring
		mod(c)
	}), key
}

func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}

// TestCMCDNeverChangesTheAnswer: the same request with no CMCD, valid
// CMCD and garbage CMCD (query and headers) gets the same status, headers
// and bytes.
func TestCMCDNeverChangesTheAnswer(t *testing.T) {
	ts := startServer(t, "", nil)
	writeSynth(t, ts.root, "v/seg.m4s", 20_000)
	// Written an hour ago: a file written this second has its
	// Last-Modified held at Date, which moves between the requests.
	chtimes(t, filepath.Join(ts.root, "v", "seg.m4s"), time.Now().Add(-time.Hour))
	base := []string{"Range: bytes=10-99"}
	variants := []struct {
		name, query string
		headers     []string
	}{
		{"none", "", nil},
		{"valid query", "?CMCD=" + url.QueryEscape(`br=3200,bs,ot=v,sf=d,sid="x"`), nil},
		{"garbage query", "?CMCD=%22%2C%2C%3D%3D%5C", nil},
		{"valid headers", "", []string{"CMCD-Object: br=3200,ot=v", "CMCD-Status: bs", `CMCD-Session: sid="x",sf=h`}},
		{"garbage headers", "", []string{"CMCD-Object: \"\"\"", "CMCD-Request: nor=\"" + strings.Repeat("a", 3000) + "\"", "CMCD-Status: bs=maybe"}},
	}
	var first *response
	for _, v := range variants {
		r := ts.get("/v/seg.m4s"+v.query, append(append([]string{}, base...), v.headers...)...)
		if first == nil {
			first = r
			mustStatus(t, r, 206, v.name)
			continue
		}
		r.Header.Del("Date")
		first.Header.Del("Date")
		ja, _ := json.Marshal(r.Header)
		jb, _ := json.Marshal(first.Header)
		if r.StatusCode != first.StatusCode || string(ja) != string(jb) || string(r.body) != string(first.body) {
			t.Errorf("%s: %d %s %q, want the answer without CMCD: %d %s %q", v.name, r.StatusCode, ja, trunc(r.body), first.StatusCode, jb, trunc(first.body))
		}
	}
}

// TestAccessLogRefused: a request refused before the handler (unparseable,
// too large, not read in time) gets its access line as nginx writes one:
// the request line as it arrived (escaped; "-" when none arrived), the
// status and the error body's bytes, with tokens redacted as anywhere.
func TestAccessLogRefused(t *testing.T) {
	var buf syncBuffer
	ts, key := signingServer(t, func(c *origin.Config) {
		c.AccessLog, c.AccessLogFormat = &buf, accesslog.Combined
		c.ReadTimeout = 300 * time.Millisecond
		c.MaxHeaderBytes = 1024
	})
	tok := mustSign(t, key, token.Claims{Expiry: time.Now().Add(time.Hour), ACL: []string{"/*"}, KeyID: "k1"})
	mac := tok[strings.LastIndex(tok, "=")+1:]
	tests := []struct {
		name, req, want string
	}{
		{"not HTTP", "\x16\x03\x01\x00\x05hello\r\n\r\n", `"\x16\x03\x01\x00\x05hello" 400 16 "-" "-"`},
		{"HTTP/2 preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", `"PRI * HTTP/2.0" 505 31 "-" "-"`},
		{"bare LF, a token in the query", "GET /a.txt?token=" + url.QueryEscape(tok) + " HTTP/1.1\nHost: t\n\n",
			`"GET /a.txt?token=… HTTP/1.1" 400 16 "-" "-"`},
		{"header too large", "GET /a.txt HTTP/1.1\r\nHost: t\r\nX-Pad: " + strings.Repeat("p", 2048) + "\r\n\r\n",
			`"GET /a.txt HTTP/1.1" 431 36 "-" "-"`},
		{"HEAD, no line end", "HEAD /" + strings.Repeat("a", 2048), `aaaa...(cut)" 414 0 "-" "-"`},
		{"not read in time", "GET /a.txt HTTP/1.1\r\nHost: t\r\n", `"-" 408 20 "-" "-"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			buf.Reset()
			resp := rawExchange(t, ts.addr, tt.req)
			if resp == "" {
				t.Fatal("no answer")
			}
			waitFor(t, 2*time.Second, "an access line", func() bool { return strings.Count(buf.String(), "\n") == 1 })
			line := buf.String()
			t.Logf("%s", line)
			if !strings.Contains(line, tt.want) {
				t.Errorf("access line %q, want it to hold %q (answer %.80q)", line, tt.want, resp)
			}
			if strings.Contains(line, mac) {
				t.Errorf("access line holds the token's MAC: %q", line)
			}
		})
	}
}
