package token

import (
	"net/url"
	"strings"
	"testing"
)

// FuzzRedactor: a real token in any carrier form, between any two texts,
// never survives redaction: neither its MAC nor its path segment appears
// in the output more often than the surrounding text itself holds them.
// The carrier forms are those that start at a delimiter (a path carrier
// anywhere; a parameter after '?', '&', ';' or a space), as requests,
// Referers and cookie lists put them, plain or percent-encoded.
func FuzzRedactor(f *testing.F) {
	for _, s := range [][2]string{{"GET ", " HTTP/1.1"}, {"", ""}, {"https://x.example", "#frag"}, {"a=b;", ";c=d"}, {"\"", "\\"}, {"/t", ""}, {"/t/t", "x"}} {
		for form := range uint8(9) {
			f.Add(s[0], s[1], form)
		}
	}
	r := NewRedactor("t", "token", "segorigin_token", "md5")
	mac := opensslToken[len(opensslToken)-hexMACLen:]
	seg := PathSegment(opensslToken)
	f.Fuzz(func(t *testing.T, before, after string, form uint8) {
		var carried string
		switch form % 9 {
		case 0:
			carried = "/t/" + seg + "/vod/title42/seg1.ts"
		case 1:
			carried = "/vod/a.ts?token=" + url.QueryEscape(opensslToken)
		case 2:
			carried = "/vod/a.ts?x=1&token=" + opensslToken
		case 3:
			carried = " segorigin_token=" + seg
		case 4:
			carried = "~" + opensslToken[strings.LastIndex(opensslToken, "hmac="):]
		// Percent-encoded, as a client or a player's URL builder may
		// send it: under any name, twice over, the carrier itself.
		case 5:
			carried = "?x=" + url.QueryEscape(opensslToken)
		case 6:
			carried = "&h=" + url.QueryEscape(url.QueryEscape(opensslToken))
		case 7:
			carried = "/%74/" + seg + "/a.ts"
		case 8:
			carried = "?CMCD=" + url.QueryEscape(`sid="`+opensslToken+`"`)
		}
		out := r.String(before + carried + after)
		for _, secret := range []string{mac, seg} {
			if got, own := strings.Count(out, secret), strings.Count(before, secret)+strings.Count(after, secret); got > own {
				t.Fatalf("redacting %q: output %q holds %d copies of a secret, the text around it %d", before+carried+after, out, got, own)
			}
		}
	})
}
