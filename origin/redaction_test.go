package origin_test

import (
	"fmt"
	"log/slog"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
	"segorigin/origin/token"
)

// TestNoTokenInAnyLog: a few hundred requests carry one token in every
// spelling a client can give it (percent-encoded under any name, twice
// over, in the path carrier, Referer, User-Agent, the CMCD query and
// headers, a Range header, the method, a path refused with 400) and no log
// line, combined, JSON or process, holds its MAC or its path segment. The
// clock jumps 11 s per reading so that the process log's one-line-per-10-s
// limits let every refusal line through.
func TestNoTokenInAnyLog(t *testing.T) {
	for _, format := range []accesslog.Format{accesslog.Combined, accesslog.JSON} {
		t.Run(format.String(), func(t *testing.T) { testNoTokenInAnyLog(t, format) })
	}
}

func testNoTokenInAnyLog(t *testing.T, format accesslog.Format) {
	var access, proc syncBuffer
	var ticks atomic.Int64
	base := time.Now()
	ts, key := signingServer(t, func(c *origin.Config) {
		c.AccessLog, c.AccessLogFormat = &access, format
		c.Logger = slog.New(slog.NewTextHandler(&proc, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Now = func() time.Time { return base.Add(time.Duration(ticks.Add(1)) * 11 * time.Second) }
	})
	writeFile(t, ts.root, "vod/a/seg1.ts", "0123456789abcdef")
	tok := mustSign(t, key, token.Claims{Expiry: base.Add(1 << 20 * time.Hour), ACL: []string{"/vod/a/*"}, KeyID: "k1"})
	seg := token.PathSegment(tok)
	mac := tok[strings.LastIndex(tok, "=")+1:]
	enc, enc2 := url.QueryEscape(tok), url.QueryEscape(url.QueryEscape(tok))
	// A segment with one of its characters percent-encoded.
	segEsc := seg[:10] + "%" + strconv.FormatInt(int64(seg[10]), 16) + seg[11:]

	type req struct {
		method, target string
		headers        []string
	}
	var shapes []req
	for _, q := range []string{
		"token=" + enc, "token=" + enc2, "TOKEN=" + enc, "xtoken=" + enc, "h=hmac%3D" + mac,
		"h=hmac%253D" + mac, "x=" + enc2, "CMCD=" + url.QueryEscape(`sid="`+tok+`",ot=v`),
		"CMCD=" + url.QueryEscape(`nor="/t/`+seg+`/x.ts"`), "token=" + seg, "a=1&segorigin_token=" + enc,
	} {
		shapes = append(shapes, req{"GET", "/vod/a/seg1.ts?" + q, nil})
	}
	for _, p := range []string{"/t/" + seg, "/%74/" + seg, "/t/" + segEsc, "/x/" + seg, "/%zz/t/" + seg, "/bad%zz/" + enc, "/bad%zz/hmac%3D" + mac} {
		shapes = append(shapes, req{"GET", p + "/vod/a/seg1.ts", nil})
	}
	for _, h := range []string{
		"Referer: https://p.example/?x=" + enc, "Referer: https://p.example/%74/" + seg + "/m.m3u8",
		"User-Agent: player hmac%3D" + mac, "User-Agent: " + tok, "User-Agent: p/" + seg,
		"Range: bytes=0-9," + tok, "Range: " + enc, "Range: bytes=" + seg,
		`CMCD-Request: nor="/t/` + seg + `/seg2.ts"`, `CMCD-Request: nor="` + enc + `"`,
		`CMCD-Session: sid="` + mac[:60] + `"`, "X-Ignored: " + tok,
	} {
		shapes = append(shapes, req{"GET", "/vod/a/seg1.ts", []string{h}})
	}
	shapes = append(shapes, req{seg, "/vod/a/seg1.ts", nil}, req{"GET", "/vod/a/nope.ts?h=hmac%3D" + mac, nil})

	var n int
	for i := range 8 { // each shape several times, with a different suffix
		for _, s := range shapes {
			target := s.target
			if i%2 == 1 {
				target += map[bool]string{true: "&", false: "?"}[strings.Contains(target, "?")] + "n=" + strconv.Itoa(i)
			}
			c := ts.dial()
			c.do(s.method, target, s.headers...)
			n++
		}
	}
	waitFor(t, 5*time.Second, fmt.Sprintf("%d access lines", n), func() bool {
		return strings.Count(access.String(), "\n") == n
	})
	if got := strings.Count(proc.String(), "bad request path"); got < 8 {
		t.Errorf("%d bad-path lines in the process log, want at least 8 (the clock should let them through)", got)
	}
	for name, log := range map[string]string{"access": access.String(), "process": proc.String()} {
		for what, secret := range map[string]string{"MAC": mac, "segment": seg, "segment's tail": seg[len(seg)/2:], "escaped segment's tail": segEsc[len(segEsc)/2:]} {
			for _, line := range strings.SplitAfter(log, "\n") {
				if strings.Contains(line, secret) {
					t.Errorf("%v: the %s log holds the token's %s:\n%s", format, name, what, line)
				}
			}
		}
	}
}
