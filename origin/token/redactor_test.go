package token

import (
	"net/url"
	"strconv"
	"strings"
	"testing"
)

func TestRedactor(t *testing.T) {
	r := NewRedactor("t", "token", "segorigin_token", "md5")
	seg := PathSegment(opensslToken)
	info := Info{KeyID: "k1", Expires: "1700003600"}
	tests := []struct {
		name, text, want string
		info             Info
	}{
		{"path carrier", "/t/" + seg + "/hls/ts/seg1.ts", "/t/…/hls/ts/seg1.ts", info},
		{"query raw token", "/vod/a.ts?x=1&token=" + url.QueryEscape(opensslToken) + "&y=2", "/vod/a.ts?x=1&token=…&y=2", info},
		{"query segment form", "/vod/a.ts?token=" + seg, "/vod/a.ts?token=…", info},
		{"secure_link md5", "/vod/a.ts?md5=AbCd123&expires=1700003600", "/vod/a.ts?md5=…&expires=1700003600", Info{}},
		{"cookie list", "a=b; segorigin_token=" + seg + "; c=d", "a=b; segorigin_token=…; c=d", info},
		{"raw hmac anywhere", `bad request "exp=1~HMAC=` + strings.Repeat("ab", 32) + `"`, `bad request "exp=1~HMAC=…"`, Info{}},
		{"referer URL", "https://site.example/t/" + seg + "/vod/master.m3u8", "https://site.example/t/…/vod/master.m3u8", info},
		{"parameter name inside a word is kept", "/vod/a.ts?mytoken=abc", "/vod/a.ts?mytoken=abc", Info{}},
		{"forged segment still redacted", "/t/AAAA/x", "/t/…/x", Info{}},
		{"prefix alone", "/t/", "/t/", Info{}},
		{"no carrier", "/hls/ts/seg1.ts?CMCD=br%3D3200", "/hls/ts/seg1.ts?CMCD=br%3D3200", Info{}},
		// Decided on the decoded form; what stays is the text as sent.
		{"encoded token, other name", "/a.ts?TOKEN=" + url.QueryEscape(opensslToken) + "&y=2", "/a.ts?TOKEN=" + url.QueryEscape(opensslToken[:strings.Index(opensslToken, "hmac=")+5]) + "…&y=2", Info{}},
		{"encoded hmac under any name", "/a.ts?h=hmac%3D" + strings.Repeat("ab", 32), "/a.ts?h=hmac%3D…", Info{}},
		{"double-encoded hmac", "/a.ts?x=a%257Ehmac%253D" + strings.Repeat("ab", 32) + "&y", "/a.ts?x=a%257Ehmac%253D…&y", Info{}},
		{"hex digits encoded", "~hmac=%61%62" + strings.Repeat("ab", 31), "~hmac=…", Info{}},
		{"encoded path carrier", "/%74/" + seg + "/a.ts", "/%74/…/a.ts", info},
		{"encoded segment", "/t/" + seg[:10] + "%" + strconv.FormatInt(int64(seg[10]), 16) + seg[11:] + "/a.ts", "/t/…/a.ts", Info{}},
		{"cmcd query", "/a.ts?CMCD=sid%3D%22" + url.QueryEscape(opensslToken) + "%22", "/a.ts?CMCD=sid%3D%22" + url.QueryEscape(opensslToken[:strings.Index(opensslToken, "hmac=")+5]) + "…%22", Info{}},
		{"stray percent kept", "/a%zz.ts?q=100%", "/a%zz.ts?q=100%", Info{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, gotInfo := r.Append(nil, []byte(tt.text))
			if string(got) != tt.want || gotInfo != tt.info {
				t.Errorf("Append(%.60q) = %q, %+v; want %q, %+v", tt.text, got, gotInfo, tt.want, tt.info)
			}
		})
	}
}

// TestRedactorZero: without carriers, hmac= fields and token segments
// are still hidden; other paths are left alone.
func TestRedactorZero(t *testing.T) {
	var r Redactor
	for in, want := range map[string]string{
		"/t/" + PathSegment(opensslToken) + "/a?hmac=00ff": "/t/…/a?hmac=…",
		"/x/" + PathSegment(opensslToken) + "/a":           "/x/…/a",
		"/t/abc/" + strings.Repeat("A", 200):               "/t/abc/" + strings.Repeat("A", 200),
	} {
		if got := r.String(in); got != want {
			t.Errorf("zero Redactor: String(%.40q) = %.60q, want %.60q", in, got, want)
		}
	}
}

// TestRedactorAllocs: text without a token costs no allocation.
func TestRedactorAllocs(t *testing.T) {
	r := NewRedactor("t", "token", "segorigin_token", "md5")
	text := []byte("/hls/ts/seg1.ts?CMCD=br%3D3200%2Cbl%3D21300%2Csid%3D%226e2fb550%22&x=1")
	buf := make([]byte, 0, 256)
	if n := testing.AllocsPerRun(100, func() { buf, _ = r.Append(buf[:0], text) }); n != 0 {
		t.Errorf("Append(%q): %v allocations, want 0", text, n)
	}
}
