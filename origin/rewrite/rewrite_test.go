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
		Param: func(dst []byte, path string, _ Kind) ([]byte, bool) {
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
		{"listed host rewritten; other hosts left, the request's own too",
			"#EXTM3U\nhttp://other.test/vod/a/x.ts\nhttp://cdn.test/vod/a/y.ts\nhttp://origin.test/vod/a/z.ts\n//cdn.test/vod/a/w.ts\n",
			"#EXTM3U\nhttp://other.test/vod/a/x.ts\nhttp://cdn.test/vod/a/y.ts?token=T\nhttp://origin.test/vod/a/z.ts\n//cdn.test/vod/a/w.ts?token=T\n", 2, 2},
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

// TestTargetHosts: relative references are rewritten whatever the base's
// host; an absolute or scheme-relative URI only on a listed host
// (compared without case; a listed host without a port matches its
// scheme's default port), never because it names the base's host (the
// request's Host, which the client chose); a URI a player could read as
// naming another host is left.
func TestTargetHosts(t *testing.T) {
	for _, tc := range []struct {
		name, uri string
		hosts     []string
		want      bool
	}{
		{"path-relative", "x.ts", nil, true},
		{"path-relative with a query", "x.ts?v=1", nil, true},
		{"path-absolute", "/vod/a/x.ts", nil, true},
		{"climbing back in", "../a/x.ts", nil, true},
		{"dot segment, then //: a path here, out of scope", "/.//evil.test/vod/a/x.ts", nil, false},
		{"base's host, absolute, none listed", "http://evil.test/vod/a/x.ts", nil, false},
		{"base's host, scheme-relative, none listed", "//evil.test/vod/a/x.ts", nil, false},
		{"base's host, https, none listed", "https://evil.test/vod/a/x.ts", nil, false},
		{"listed, absolute", "https://cdn.test/vod/a/x.ts", []string{"cdn.test"}, true},
		{"listed, scheme-relative", "//cdn.test/vod/a/x.ts", []string{"cdn.test"}, true},
		{"listed, case differs", "HTTPS://CDN.Test/vod/a/x.ts", []string{"cdn.TEST"}, true},
		{"listed, default port written", "https://cdn.test:443/vod/a/x.ts", []string{"cdn.test"}, true},
		{"listed, http default port", "http://cdn.test:80/vod/a/x.ts", []string{"cdn.test"}, true},
		{"listed, another port", "https://cdn.test:8443/vod/a/x.ts", []string{"cdn.test"}, false},
		{"listed with its port", "https://cdn.test:8443/vod/a/x.ts", []string{"cdn.test:8443"}, true},
		{"listed with a port, none written", "https://cdn.test/vod/a/x.ts", []string{"cdn.test:8443"}, false},
		{"https's port on http", "http://cdn.test:443/vod/a/x.ts", []string{"cdn.test"}, false},
		{"listed, IPv6", "http://[::1]:8080/vod/a/x.ts", []string{"[::1]:8080"}, true},
		{"suffix of a listed host", "https://evilcdn.test/vod/a/x.ts", []string{"cdn.test"}, false},
		{"listed host as a subdomain", "https://cdn.test.evil.test/vod/a/x.ts", []string{"cdn.test"}, false},
		{"userinfo naming a listed host", "https://cdn.test@evil.test/vod/a/x.ts", []string{"cdn.test"}, false},
		{"userinfo before a listed host", "https://u@cdn.test/vod/a/x.ts", []string{"cdn.test"}, false},
		{"other scheme on a listed host", "ftp://cdn.test/vod/a/x.ts", []string{"cdn.test"}, false},
		{"scheme without authority", "http:x.ts", []string{"cdn.test"}, false},
		{"empty authority", "///evil.test/vod/a/x.ts", nil, false},
		{"empty authority, absolute", "http:///evil.test/vod/a/x.ts", nil, false},
		{"backslashes", `\\evil.test/vod/a/x.ts`, nil, false},
		{"slash, backslash", `/\evil.test/vod/a/x.ts`, nil, false},
		{"scheme, slash, backslash", `https:/\evil.test/vod/a/x.ts`, nil, false},
		{"tab inside", "/\t/evil.test/vod/a/x.ts", nil, false},
		{"leading space", " //evil.test/vod/a/x.ts", nil, false},
		{"newline inside", "/\n/evil.test/vod/a/x.ts", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := url.Parse("https://evil.test/vod/a/manifest.mpd")
			tg := &Target{Base: base, Hosts: tc.hosts, Names: []string{"token"},
				Param: func(dst []byte, path string, _ Kind) ([]byte, bool) {
					return append(dst, "token=T"...), strings.HasPrefix(path, "/vod/a/")
				}}
			// As an attribute value, so that leading and trailing
			// whitespace reaches the check.
			in := `<MPD><SegmentURL media="` + tc.uri + `"/></MPD>`
			got, res, err := DASH(nil, []byte(in), tg)
			if err != nil {
				t.Fatalf("DASH(%q) error %v", in, err)
			}
			if rewritten := res.Rewritten == 1; rewritten != tc.want {
				t.Errorf("DASH(%q) with hosts %q = %q: rewritten %v, want %v", in, tc.hosts, got, rewritten, tc.want)
			}
			// A BaseURL of the same URI is the base of what follows.
			in = `<MPD><BaseURL>` + tc.uri + `</BaseURL><SegmentURL media="s.m4s"/></MPD>`
			if _, res, err = DASH(nil, []byte(in), tg); err != nil || res.Rewritten == 2 != tc.want {
				t.Errorf("DASH(%q) with hosts %q: %+v, %v; want both rewritten: %v", in, tc.hosts, res, err, tc.want)
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
		{"a Representation@id that would take a template elsewhere: the template that begins with it is left",
			`<MPD><Period><AdaptationSet><SegmentTemplate initialization="init-$RepresentationID$.m4s" media="$RepresentationID$/c-$Number$.m4s"/><Representation id="v1"/><Representation id="//evil.test"/></AdaptationSet></Period></MPD>`,
			`<MPD><Period><AdaptationSet><SegmentTemplate initialization="init-$RepresentationID$.m4s?token=T" media="$RepresentationID$/c-$Number$.m4s"/><Representation id="v1"/><Representation id="//evil.test"/></AdaptationSet></Period></MPD>`, 1, 1},
		{"a backslash authority and a scheme in an id (entities decoded) leave the templates they begin",
			`<MPD><Representation id="&#92;&#92;evil.test"><SegmentTemplate media="$RepresentationID$/c.m4s"/></Representation><Representation id="x:y"><SegmentTemplate media="$RepresentationID$.m4s"/></Representation></MPD>`,
			`<MPD><Representation id="&#92;&#92;evil.test"><SegmentTemplate media="$RepresentationID$/c.m4s"/></Representation><Representation id="x:y"><SegmentTemplate media="$RepresentationID$.m4s"/></Representation></MPD>`, 0, 2},
		{"an id with a slash inside (Bento4's video/avc1) stays a path: signed",
			`<MPD><Period><AdaptationSet><SegmentTemplate media="$RepresentationID$/seg-$Number$.m4s"/><Representation id="video/avc1"/></AdaptationSet></Period></MPD>`,
			`<MPD><Period><AdaptationSet><SegmentTemplate media="$RepresentationID$/seg-$Number$.m4s?token=T"/><Representation id="video/avc1"/></AdaptationSet></Period></MPD>`, 1, 0},
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
		if got := fillTemplate(in, "0"); got != want {
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

// TestKinds: Param is told what each URI stands for. An HLS key's URI is
// KindKey (EXT-X-KEY, EXT-X-SESSION-KEY), a DASH SegmentTemplate
// attribute KindTemplate (its path with the identifiers filled by "0"),
// everything else KindURI; so a caller can give a template a credential
// that covers every path a player makes of it, never one signed for its
// text.
func TestKinds(t *testing.T) {
	for _, tc := range []struct {
		name, base, in string
		dash           bool
		want           []string // "kind path" in document order
	}{
		{"HLS keys", "http://o.test/vod/a/hls/index.m3u8",
			"#EXTM3U\n#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"../s.key\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"../enc.key\",IV=0x1\n#EXT-X-MAP:URI=\"init.mp4\"\n#EXTINF:2,\nseg0.ts\n", false,
			[]string{"key /vod/a/s.key", "key /vod/a/enc.key", "uri /vod/a/hls/init.mp4", "uri /vod/a/hls/seg0.ts"}},
		{"DASH template and lists", "http://o.test/vod/a/manifest.mpd",
			`<MPD><BaseURL>v/</BaseURL><SegmentTemplate initialization="init-$RepresentationID$.m4s" media="$RepresentationID$/c-$Number%05d$.m4s"/><SegmentURL media="s.m4s"/></MPD>`, true,
			[]string{"uri /vod/a/v/", "template /vod/a/v/init-0.m4s", "template /vod/a/v/0/c-0.m4s", "uri /vod/a/v/s.m4s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base, _ := url.Parse(tc.base)
			var got []string
			names := map[Kind]string{KindURI: "uri", KindKey: "key", KindTemplate: "template"}
			tg := &Target{Base: base, Names: []string{"token"}, Param: func(dst []byte, p string, k Kind) ([]byte, bool) {
				got = append(got, names[k]+" "+p)
				return append(dst, "token=T"...), true
			}}
			format := HLS
			if tc.dash {
				format = DASH
			}
			if _, _, err := format(nil, []byte(tc.in), tg); err != nil {
				t.Fatalf("rewrite(%q): %v", tc.in, err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("rewrite(%q) asked Param for\n%s\nwant\n%s", tc.in, strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}
