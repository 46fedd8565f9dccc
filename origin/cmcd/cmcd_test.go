package cmcd

import (
	"errors"
	"net/url"
	"reflect"
	"testing"
)

// specQuery is the query-mode example of CTA-5004 §3.1 (all keys), as a
// player puts it in the URL.
const specQuery = "bl%3D21300%2Cbr%3D3200%2Cbs%2Ccid%3D%22faec5fc2-ac30-11eabb37-0242ac130002%22%2Cd%3D4004%2Cdl%3D18500%2Cmtp%3D48100%2Cnor%3D%22..%252F300kbps%252Ftrack.m4v%22%2Cnrr%3D%2212323-48763%22%2Cot%3Dv%2Cpr%3D1.08%2Crtp%3D12000%2Csf%3Dd%2Csid%3D%226e2fb550-c457-11e9-bb97-0800200c9a66%22%2Cst%3Dv%2Csu%2Ctb%3D6000"

func TestParseSpecExample(t *testing.T) {
	payload, err := url.QueryUnescape(specQuery)
	if err != nil {
		t.Fatal(err)
	}
	got, err := Parse(payload)
	if err != nil {
		t.Fatalf("Parse(%q): %v", payload, err)
	}
	want := Data{
		present:      1<<numKeys - 1,
		BufferLength: 21300, Bitrate: 3200, Duration: 4004, Deadline: 18500, Throughput: 48100,
		RequestedThroughput: 12000, TopBitrate: 6000, PlaybackRate: 1.08,
		BufferStarvation: true, Startup: true,
		ContentID: "faec5fc2-ac30-11eabb37-0242ac130002", SessionID: "6e2fb550-c457-11e9-bb97-0800200c9a66",
		NextObject: "..%2F300kbps%2Ftrack.m4v", NextRange: "12323-48763",
		ObjectType: ObjectVideo, StreamingFormat: FormatDASH, StreamType: StreamVOD,
	}
	// v was not in the example; the rest were, so clear its bit.
	want.present &^= 1 << KeyV
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Parse(spec example)\n got %+v\nwant %+v", got, want)
	}
	obj, rng, ok := got.Next()
	if obj != "../300kbps/track.m4v" || rng != "12323-48763" || !ok {
		t.Errorf("Next() = %q, %q, %v; want ../300kbps/track.m4v, 12323-48763, true", obj, rng, ok)
	}
}

// TestAddHeaders: the four headers of one request merge into one Data.
func TestAddHeaders(t *testing.T) {
	var d Data
	for _, h := range []string{
		`br=3200,d=4004,ot=v,tb=6000`, // CMCD-Object
		`bl=21300,dl=18500,mtp=48100,nor="..%2F300kbps%2Ftrack.m4v",nrr="12323-48763",su`,                        // CMCD-Request
		`cid="faec5fc2-ac30-11eabb37-0242ac130002",pr=1.08,sf=d,sid="6e2fb550-c457-11e9-bb97-0800200c9a66",st=v`, // CMCD-Session
		`bs,rtp=12000`, // CMCD-Status
	} {
		if err := d.Add(h); err != nil {
			t.Errorf("Add(%q): %v", h, err)
		}
	}
	payload, _ := url.QueryUnescape(specQuery)
	want, _ := Parse(payload)
	if !reflect.DeepEqual(d, want) {
		t.Errorf("headers merged\n got %+v\nwant %+v", d, want)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name, payload string
		want          Data
		malformed     bool
	}{
		{"empty", "", Data{}, false},
		{"bare boolean", "bs", Data{present: 1 << KeyBS, BufferStarvation: true}, false},
		{"structured false", "su=?0", Data{present: 1 << KeySU}, false},
		{"unknown key ignored", "com.example-foo=\"x\",br=10", Data{present: 1 << KeyBR, Bitrate: 10}, false},
		{"last wins", "br=1,br=2", Data{present: 1 << KeyBR, Bitrate: 2}, false},
		{"spaces around entries", " br=1 , ot=m ", Data{present: 1<<KeyBR | 1<<KeyOT, Bitrate: 1, ObjectType: ObjectManifest}, false},
		{"comma inside a string", `sid="a,b",br=1`, Data{present: 1<<KeySID | 1<<KeyBR, SessionID: "a,b", Bitrate: 1}, false},
		{"escaped quote", `cid="a\"b\\c"`, Data{present: 1 << KeyCID, ContentID: `a"b\c`}, false},
		{"suffix range", `nrr="-500"`, Data{present: 1 << KeyNRR, NextRange: "-500"}, false},
		{"negative playback rate", "pr=-2", Data{present: 1 << KeyPR, PlaybackRate: -2}, false},
		{"empty entries", "br=1,,", Data{present: 1 << KeyBR, Bitrate: 1}, false},
		{"negative integer", "bl=-1,br=5", Data{present: 1 << KeyBR, Bitrate: 5}, true},
		{"integer too long", "bl=1234567890123456", Data{}, true},
		{"string unquoted", "sid=abc", Data{}, true},
		{"sid over 64", `sid="` + "0123456789012345678901234567890123456789012345678901234567890123456789" + `"`, Data{}, true},
		{"unknown token", "ot=x,sf=h", Data{present: 1 << KeySF, StreamingFormat: FormatHLS}, true},
		{"boolean with junk", "bs=1", Data{}, true},
		{"integer without value", "br", Data{}, true},
		{"unterminated string", `sid="abc,br=1`, Data{}, true},
		{"bad escape", `sid="a\nb"`, Data{}, true},
		{"control byte in string", "sid=\"a\x01\"", Data{}, true},
		{"inverted range", `nrr="9-1"`, Data{}, true},
		{"range without dash", `nrr="12"`, Data{}, true},
		{"decimal with 4 fraction digits", "pr=1.2345", Data{}, true},
		{"upper-case key", "BR=1", Data{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(tt.payload)
			if (err != nil) != tt.malformed || err != nil && !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse(%q) error = %v, want malformed %v", tt.payload, err, tt.malformed)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse(%q) = %+v, want %+v", tt.payload, got, tt.want)
			}
		})
	}
}

func TestAppendToRoundTrip(t *testing.T) {
	payload, _ := url.QueryUnescape(specQuery)
	d, _ := Parse(payload)
	enc := string(d.AppendTo(nil))
	// The example is already in alphabetical order: the canonical form is it.
	if enc != payload {
		t.Errorf("AppendTo = %q, want %q", enc, payload)
	}
}

func TestNextAbsent(t *testing.T) {
	d, _ := Parse("br=1")
	if o, r, ok := d.Next(); ok || o != "" || r != "" {
		t.Errorf("Next() without nor/nrr = %q, %q, %v; want \"\", \"\", false", o, r, ok)
	}
}

// TestKeyNames: lookupKey and String agree for every key.
func TestKeyNames(t *testing.T) {
	for k := Key(0); k < numKeys; k++ {
		if got, ok := lookupKey(k.String()); got != k || !ok {
			t.Errorf("lookupKey(%q) = %v, %v; want %v, true", k.String(), got, ok, k)
		}
	}
}
