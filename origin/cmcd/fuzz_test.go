package cmcd

import (
	"net/url"
	"reflect"
	"testing"
)

// FuzzParse: any payload parses without panic; every kept value respects
// its key's limits; and the canonical encoding of what was kept parses back
// to the same Data with no error (nothing half-kept).
func FuzzParse(f *testing.F) {
	spec, _ := url.QueryUnescape(specQuery)
	for _, s := range []string{spec, "", "bs", "su=?0", `sid="a,b",br=1`, `cid="a\"b\\c"`, `nrr="-500"`,
		"pr=-2", "bl=-1,br=5", `sid="abc,br=1`, "ot=x,sf=h", `nrr="9-1"`, "com.example-foo=1", "br=1,,"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		d, _ := Parse(payload)
		for _, s := range []string{d.ContentID, d.SessionID} {
			if len(s) > maxIDLen {
				t.Fatalf("Parse(%q) kept an id of %d bytes", payload, len(s))
			}
		}
		if len(d.NextObject) > MaxStringLen {
			t.Fatalf("Parse(%q) kept nor of %d bytes", payload, len(d.NextObject))
		}
		for _, n := range []int64{d.BufferLength, d.Bitrate, d.Duration, d.Deadline, d.Throughput, d.RequestedThroughput, d.TopBitrate, d.Version} {
			if n < 0 {
				t.Fatalf("Parse(%q) kept a negative integer %d", payload, n)
			}
		}
		enc := string(d.AppendTo(nil))
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("Parse(AppendTo(Parse(%q))) = Parse(%q): %v", payload, enc, err)
		}
		if !reflect.DeepEqual(again, d) {
			t.Fatalf("round trip of %q via %q:\n got %+v\nwant %+v", payload, enc, again, d)
		}
	})
}
