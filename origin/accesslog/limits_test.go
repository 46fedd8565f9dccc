package accesslog

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"segorigin/origin/cmcd"
)

// hostileEntry fills every field a client can reach with n bytes of fill
// (the CMCD strings with the longest values cmcd.Parse keeps, each a
// quote that JSON escapes).
func hostileEntry(t testing.TB, fill string, n int) *Entry {
	t.Helper()
	q := func(k int) string { return `"` + strings.Repeat(`\"`, k) + `"` }
	d, err := cmcd.Parse("cid=" + q(64) + ",sid=" + q(64) + ",nor=" + q(cmcd.MaxStringLen) +
		`,nrr="0-99",br=999999999999999,bl=999999999999999,d=999999999999999,dl=999999999999999,` +
		"mtp=999999999999999,rtp=999999999999999,tb=999999999999999,v=999999999999999,pr=999999999999.999,bs,su,ot=v,sf=h,st=v")
	if err != nil {
		t.Fatal(err)
	}
	b := []byte(strings.Repeat(fill, n/len(fill)+1)[:n])
	return &Entry{
		Time: time.Date(2026, 12, 1, 9, 30, 15, 0, time.UTC), Client: b, Method: b, Path: b, Query: b,
		Proto: b, Host: b, Status: 999, Bytes: 1<<63 - 1, Range: b, Duration: 1<<63 - 1,
		Via: "sendfile", Cache: "negative_hit", Referer: b, UserAgent: b,
		TokenKeyID: string(b), TokenExpires: "999999999999999999", CMCD: &d,
	}
}

// checkLine asserts what every line keeps whatever the entry: one line,
// within its format's bound, valid UTF-8 (and valid JSON).
func checkLine(t *testing.T, f Format, line []byte) {
	t.Helper()
	bound := MaxCombinedLine
	if f == JSON {
		bound = MaxJSONLine
	}
	if len(line) > bound {
		t.Fatalf("%v line of %d bytes, want at most %d", f, len(line), bound)
	}
	if strings.Count(string(line), "\n") != 1 || line[len(line)-1] != '\n' {
		t.Fatalf("%v line %.200q: want exactly one trailing newline", f, line)
	}
	if !utf8.Valid(line) {
		t.Fatalf("%v line %.200q: invalid UTF-8", f, line)
	}
	if f == JSON && !json.Valid(line) {
		t.Fatalf("JSON line %.200q: not valid JSON", line)
	}
}

// TestLineBounds: a client cannot make a line long. With every field it
// reaches at 64 KiB of each filler (escaping makes some 4 or 6 times
// longer), a combined line stays under 4,096 bytes (GoAccess splits longer
// ones) and a JSON line within MaxJSONLine; each cut field is marked.
func TestLineBounds(t *testing.T) {
	for _, fill := range []string{"a", "\xff", "\x01", `"`, "€", "\u2028", "\\"} {
		for _, f := range []Format{Combined, JSON} {
			t.Run(f.String()+"/"+fill, func(t *testing.T) {
				line := f.Append(nil, hostileEntry(t, fill, 64<<10))
				checkLine(t, f, line)
				if n := strings.Count(string(line), cutMark); n < 5 {
					t.Errorf("%v line: %d fields marked as cut, want at least 5:\n%.300s", f, n, line)
				}
			})
		}
	}
}

// TestFieldCutExact: a field that fits its cap is written whole; one byte
// more and it is cut, the mark within the cap.
func TestFieldCutExact(t *testing.T) {
	fits := strings.Repeat("a", maxUserAgent)
	e := &Entry{UserAgent: []byte(fits)}
	if got := string(Combined.Append(nil, e)); !strings.Contains(got, `"`+fits+`"`) || strings.Contains(got, cutMark) {
		t.Errorf("Combined.Append with a %d-byte user agent cut it:\n%s", len(fits), got)
	}
	e.UserAgent = []byte(fits + "a")
	want := `"` + fits[:maxUserAgent-len(cutMark)] + cutMark + `"`
	if got := string(Combined.Append(nil, e)); !strings.Contains(got, want) {
		t.Errorf("Combined.Append with a %d-byte user agent =\n%s\nwant it to hold %s", len(fits)+1, got, want)
	}
}

// FuzzAppend: whatever bytes a client sends in any field, both formats
// keep checkLine's promises.
func FuzzAppend(f *testing.F) {
	for _, s := range []string{"", "a", "\xff\x01\"\\", "€\u2028", strings.Repeat("\xff", 5000)} {
		f.Add([]byte(s), 1)
	}
	f.Fuzz(func(t *testing.T, b []byte, repeat int) {
		b = []byte(strings.Repeat(string(b), min(max(repeat, 1), 64<<10/max(len(b), 1))))
		e := hostileEntry(t, "a", 1)
		e.Client, e.Method, e.Path, e.Query, e.Proto, e.Host, e.Range, e.Referer, e.UserAgent = b, b, b, b, b, b, b, b, b
		e.TokenKeyID = string(b)
		for _, format := range []Format{Combined, JSON} {
			checkLine(t, format, format.Append(nil, e))
		}
	})
}
