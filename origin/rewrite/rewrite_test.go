package rewrite

import (
	"bytes"
	"errors"
	"net/url"
	"strings"
	"testing"
)

// testTarget adds "token=T" to every URI under /vod/a/ on origin.test or
// cdn.test, and nothing elsewhere.
func testTarget(t testing.TB, base string) *Target {
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	return &Target{
		Base:  u,
		Hosts: []string{"CDN.test"},
		Names: []string{"token"},
		Param: func(dst []byte, path string) ([]byte, bool) {
			if !strings.HasPrefix(path, "/vod/a/") {
				return dst, false
			}
			return append(dst, "token=T"...), true
		},
	}
}

func TestHLS(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		rewritten      int
		left           int
	}{
		{"media playlist, CRLF kept",
			"#EXTM3U\r\n#EXT-X-MAP:URI=\"init.mp4\"\r\n#EXTINF:2,\r\nseg0.m4s\r\n#EXT-X-ENDLIST\r\n",
			"#EXTM3U\r\n#EXT-X-MAP:URI=\"init.mp4?token=T\"\r\n#EXTINF:2,\r\nseg0.m4s?token=T\r\n#EXT-X-ENDLIST\r\n", 2, 0},
		{"master: URI lines and EXT-X-MEDIA",
			"#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x,y\",URI=\"audio/index.m3u8\"\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"avc1,mp4a\"\n180p/index.m3u8\n#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI=\"if.m3u8\"\n",
			"#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x,y\",URI=\"audio/index.m3u8?token=T\"\n#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"avc1,mp4a\"\n180p/index.m3u8?token=T\n#EXT-X-I-FRAME-STREAM-INF:BANDWIDTH=1,URI=\"if.m3u8?token=T\"\n", 3, 0},
		{"existing query kept, fragment after",
			"#EXTM3U\nseg0.ts?v=2\nseg1.ts#t=1\nseg2.ts?\n",
			"#EXTM3U\nseg0.ts?v=2&token=T\nseg1.ts?token=T#t=1\nseg2.ts?&token=T\n", 3, 0},
		{"other hosts left, listed host and same host rewritten",
			"#EXTM3U\nhttp://other.test/vod/a/x.ts\nhttp://cdn.test/vod/a/y.ts\nhttp://origin.test/vod/a/z.ts\n//cdn.test/vod/a/w.ts\n",
			"#EXTM3U\nhttp://other.test/vod/a/x.ts\nhttp://cdn.test/vod/a/y.ts?token=T\nhttp://origin.test/vod/a/z.ts?token=T\n//cdn.test/vod/a/w.ts?token=T\n", 3, 1},
		{"out of scope left: another title, climbing out",
			"#EXTM3U\n/vod/b/x.ts\n../b/y.ts\n../a/z.ts\n",
			"#EXTM3U\n/vod/b/x.ts\n../b/y.ts\n../a/z.ts?token=T\n", 1, 2},
		{"keys: skd and data left, https rewritten",
			"#EXTM3U\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://key42\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key.bin\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAAA\"\n",
			"#EXTM3U\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"skd://key42\",KEYFORMAT=\"com.apple.streamingkeydelivery\"\n#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key.bin?token=T\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"data:text/plain;base64,AAAA\"\n", 1, 2},
		{"already signed left",
			"#EXTM3U\nseg0.ts?token=OTHER\n",
			"#EXTM3U\nseg0.ts?token=OTHER\n", 0, 1},
		{"low latency tags",
			"#EXTM3U\n#EXT-X-PART:DURATION=0.5,URI=\"p0.mp4\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p1.mp4\"\n#EXT-X-RENDITION-REPORT:URI=\"../a/other.m3u8\",LAST-MSN=1\n#EXT-X-SESSION-DATA:DATA-ID=\"x\",URI=\"d.json\"\n",
			"#EXTM3U\n#EXT-X-PART:DURATION=0.5,URI=\"p0.mp4?token=T\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"p1.mp4?token=T\"\n#EXT-X-RENDITION-REPORT:URI=\"../a/other.m3u8?token=T\",LAST-MSN=1\n#EXT-X-SESSION-DATA:DATA-ID=\"x\",URI=\"d.json?token=T\"\n", 4, 0},
		{"comments, unknown tags, blank lines and no final newline",
			"#EXTM3U\n# seg9.ts\n#EXT-X-FOO:URI=\"x.ts\"\n\n  seg0.ts  \nseg1.ts",
			"#EXTM3U\n# seg9.ts\n#EXT-X-FOO:URI=\"x.ts\"\n\n  seg0.ts?token=T  \nseg1.ts?token=T", 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := HLS(nil, []byte(tc.in), testTarget(t, "http://origin.test/vod/a/index.m3u8"))
			if err != nil {
				t.Fatalf("HLS(%q) error %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("HLS(%q) =\n%q\nwant\n%q", tc.in, got, tc.want)
			}
			if res.Rewritten != tc.rewritten || res.Left != tc.left {
				t.Errorf("HLS(%q) result %+v, want %d rewritten, %d left", tc.in, res, tc.rewritten, tc.left)
			}
		})
	}
}

func TestHLSErrors(t *testing.T) {
	tg := testTarget(t, "http://origin.test/vod/a/index.m3u8")
	if _, _, err := HLS(nil, []byte("seg0.ts\n"), tg); !errors.Is(err, ErrMalformed) {
		t.Errorf("HLS without #EXTM3U: error %v, want ErrMalformed", err)
	}
	tg.MaxOut = 30
	if _, _, err := HLS(nil, []byte("#EXTM3U\nseg0.ts\nseg1.ts\nseg2.ts\n"), tg); !errors.Is(err, ErrTooLarge) {
		t.Errorf("HLS over MaxOut: error %v, want ErrTooLarge", err)
	}
}

func TestDASH(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		rewritten      int
		left           int
	}{
		{"template, attributes and their quoting kept",
			`<?xml version="1.0"?><MPD><Period><AdaptationSet><Representation id="0"><SegmentTemplate timescale = '1' initialization="init-$RepresentationID$.m4s" media="chunk-$Number%03d$.m4s"/></Representation></AdaptationSet></Period></MPD>`,
			`<?xml version="1.0"?><MPD><Period><AdaptationSet><Representation id="0"><SegmentTemplate timescale = '1' initialization="init-$RepresentationID$.m4s?token=T" media="chunk-$Number%03d$.m4s?token=T"/></Representation></AdaptationSet></Period></MPD>`, 2, 0},
		{"BaseURL chain: a relative BaseURL is rewritten and is the base below it",
			"<MPD>\n <BaseURL> video/ </BaseURL>\n <Period><SegmentList><Initialization sourceURL=\"init.mp4\"/><SegmentURL media=\"s1.m4s?x=1&amp;y=2\"/></SegmentList></Period></MPD>",
			"<MPD>\n <BaseURL> video/?token=T </BaseURL>\n <Period><SegmentList><Initialization sourceURL=\"init.mp4?token=T\"/><SegmentURL media=\"s1.m4s?x=1&amp;y=2&amp;token=T\"/></SegmentList></Period></MPD>", 3, 0},
		{"BaseURL on another host: what resolves against it is left",
			`<MPD><BaseURL>http://other.test/vod/a/</BaseURL><Period><SegmentTemplate media="c-$Number$.m4s"/></Period></MPD>`,
			`<MPD><BaseURL>http://other.test/vod/a/</BaseURL><Period><SegmentTemplate media="c-$Number$.m4s"/></Period></MPD>`, 0, 2},
		{"BaseURL only in scope for its parent",
			`<MPD><Period><BaseURL>../b/</BaseURL><SegmentURL media="x.m4s"/></Period><Period><SegmentURL media="y.m4s"/></Period></MPD>`,
			`<MPD><Period><BaseURL>../b/</BaseURL><SegmentURL media="x.m4s"/></Period><Period><SegmentURL media="y.m4s?token=T"/></Period></MPD>`, 1, 2},
		{"namespace prefix, comment, CDATA and other attributes untouched",
			`<mpd:MPD xmlns:mpd="urn:mpeg:dash:schema:mpd:2011"><!-- <SegmentURL media="c.m4s"/> --><mpd:SegmentURL media="a.m4s" mediaRange="0-1"/><x><![CDATA[<SegmentURL media="d.m4s"/>]]></x><Other media="b.m4s"/></mpd:MPD>`,
			`<mpd:MPD xmlns:mpd="urn:mpeg:dash:schema:mpd:2011"><!-- <SegmentURL media="c.m4s"/> --><mpd:SegmentURL media="a.m4s?token=T" mediaRange="0-1"/><x><![CDATA[<SegmentURL media="d.m4s"/>]]></x><Other media="b.m4s"/></mpd:MPD>`, 1, 0},
		{"on-demand: BaseURL of the file, RepresentationIndex",
			`<MPD><Period><Representation><BaseURL>180p.mp4</BaseURL><SegmentBase indexRange="1-2"><RepresentationIndex sourceURL="180p.sidx"/></SegmentBase></Representation></Period></MPD>`,
			`<MPD><Period><Representation><BaseURL>180p.mp4?token=T</BaseURL><SegmentBase indexRange="1-2"><RepresentationIndex sourceURL="180p.sidx?token=T"/></SegmentBase></Representation></Period></MPD>`, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, res, err := DASH(nil, []byte(tc.in), testTarget(t, "http://origin.test/vod/a/manifest.mpd"))
			if err != nil {
				t.Fatalf("DASH(%q) error %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Errorf("DASH(%q) =\n%s\nwant\n%s", tc.in, got, tc.want)
			}
			if res.Rewritten != tc.rewritten || res.Left != tc.left {
				t.Errorf("DASH(%q) result %+v, want %d rewritten, %d left", tc.in, res, tc.rewritten, tc.left)
			}
		})
	}
}

func TestDASHErrors(t *testing.T) {
	tg := testTarget(t, "http://origin.test/vod/a/manifest.mpd")
	for _, in := range []string{`<MPD><SegmentURL media="a`, `<MPD><!-- x`, `<MPD a=b>`, strings.Repeat("<a>", MaxDepth+2)} {
		if _, _, err := DASH(nil, []byte(in), tg); !errors.Is(err, ErrMalformed) {
			t.Errorf("DASH(%.40q) error %v, want ErrMalformed", in, err)
		}
	}
	tg.MaxOut = 40
	if _, _, err := DASH(nil, []byte(`<MPD><SegmentURL media="a.m4s"/><SegmentURL media="b.m4s"/></MPD>`), tg); !errors.Is(err, ErrTooLarge) {
		t.Errorf("DASH over MaxOut: error %v, want ErrTooLarge", err)
	}
}

func TestAppendQueryValue(t *testing.T) {
	in := "exp=1~acl=/vod/a/*!/x~hmac=ab&c+d$e'f\"g<h> i#j%"
	want := "exp=1~acl=/vod/a/*!/x~hmac=ab%26c%2Bd%24e%27f%22g%3Ch%3E%20i%23j%25"
	if got := AppendQueryValue(nil, []byte(in)); string(got) != want {
		t.Errorf("AppendQueryValue(%q) = %q, want %q", in, got, want)
	}
	if v, err := url.QueryUnescape(want); err != nil || v != in {
		t.Errorf("url.QueryUnescape(%q) = %q, %v; want %q", want, v, err, in)
	}
}

func TestFillTemplate(t *testing.T) {
	for in, want := range map[string]string{
		"chunk-$RepresentationID$-$Number%03d$.m4s": "chunk-0-0.m4s",
		"a$$b.m4s": "a$b.m4s",
		"a$b.m4s":  "a$b.m4s",
		"plain":    "plain",
	} {
		if got := fillTemplate(in); got != want {
			t.Errorf("fillTemplate(%q) = %q, want %q", in, got, want)
		}
	}
}

// stripParams takes out what a rewrite with markerTarget inserted.
func stripParams(b []byte) []byte {
	for _, s := range []string{"?" + marker, "&amp;" + marker, "&" + marker} {
		b = bytes.ReplaceAll(b, []byte(s), nil)
	}
	return b
}
