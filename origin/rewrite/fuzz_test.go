package rewrite

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// marker is what markerTarget inserts: inputs holding it are skipped, so
// every occurrence in an output was inserted.
const marker = "tok=ZQX9"

// fuzzHost is markerTarget's one listed host; the base's, origin.test,
// is not listed, as the request's Host never is.
const fuzzHost = "cdn.test"

func markerTarget(max int) *Target {
	u, _ := url.Parse("http://origin.test/vod/a/index")
	return &Target{Base: u, Hosts: []string{fuzzHost}, Names: []string{"tok"}, MaxOut: max,
		Param: func(dst []byte, path string, _ Kind) ([]byte, bool) {
			if len(path)%3 == 0 { // some paths out of scope
				return dst, false
			}
			return append(dst, marker...), true
		}}
}

// seeds adds the fixtures' playlists or manifests and the table inputs.
func seeds(f *testing.F, glob string, extra ...string) {
	files, _ := filepath.Glob(filepath.Join("..", "..", "fixtures", "media", glob))
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range extra {
		f.Add([]byte(s))
	}
}

// FuzzHLS: HLS never panics, stays within MaxOut, and only inserts: the
// output without the inserted parameters is the input, and there are as
// many of them as URIs it says it rewrote. No URI a player would read as
// naming a host other than the listed one gains them.
func FuzzHLS(f *testing.F) {
	seeds(f, "hls/*/*.m3u8", "#EXTM3U\nseg0.ts?v=1#f\n", "#EXTM3U\n#EXT-X-MAP:URI=\"a.mp4\",X=\"y\"\n", "#EXTM3U\r\n../b/x.ts\r\n", hostSeeds)
	seeds(f, "hls/*/*/*.m3u8")
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("ZQX9")) {
			return
		}
		const max = 1 << 16
		out, res, err := HLS(nil, in, markerTarget(max))
		checkInserted(t, in, out, res, err, max)
		if err == nil {
			checkHLSHosts(t, in, out)
		}
	})
}

// FuzzDASH: as FuzzHLS for DASH; and whatever encoding/xml reads without
// error in the input it reads in the output too, with the same elements,
// and no attribute or text it reads there naming another host holds the
// parameters.
func FuzzDASH(f *testing.F) {
	seeds(f, "dash/*/*.mpd", `<MPD><BaseURL>v/</BaseURL><SegmentURL media="a?x=1&amp;y"/></MPD>`, `<a b='c'><!--x--><![CDATA[<]]></a>`,
		`<MPD><BaseURL>//cdn.test/vod/a/</BaseURL><SegmentURL media="//origin.test/x/y" i="https://cdn.test:443/b/c"/><SegmentURL media="&#47;/evil.test/a"/></MPD>`,
		`<MPD><SegmentTemplate media="$RepresentationID$/c-$Number$.m4s" initialization="i$RepresentationID$"/><Representation id="//evil.test"/><Representation id="a:b"/><Representation id=" \\evil.test"/></MPD>`)
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("ZQX9")) {
			return
		}
		const max = 1 << 16
		out, res, err := DASH(nil, in, markerTarget(max))
		checkInserted(t, in, out, res, err, max)
		if err != nil {
			return
		}
		want, werr := xmlNames(in)
		if werr != nil {
			return
		}
		got, gerr := xmlNames(out)
		if gerr != nil || got != want {
			t.Fatalf("DASH(%q) = %q: encoding/xml reads %q, %v; the input read %q", in, out, got, gerr, want)
		}
		checkDASHHosts(t, in, out)
	})
}

func checkInserted(t *testing.T, in, out []byte, res Result, err error, max int) {
	t.Helper()
	if err != nil {
		if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLarge) {
			t.Fatalf("error %v is neither ErrMalformed nor ErrTooLarge", err)
		}
		return
	}
	if len(out) > max {
		t.Fatalf("output of %d bytes, over MaxOut %d", len(out), max)
	}
	if n := bytes.Count(out, []byte(marker)); n != res.Rewritten {
		t.Fatalf("rewrite of %q = %q: %d parameters inserted, result says %d", in, out, n, res.Rewritten)
	}
	if back := stripParams(out); !bytes.Equal(back, in) {
		t.Fatalf("rewrite of %q = %q: without the parameters %q, want the input", in, out, back)
	}
}

// xmlNames is the sequence of element names encoding/xml reads.
func xmlNames(b []byte) (string, error) {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var names bytes.Buffer
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return names.String(), nil
		}
		if err != nil {
			return "", err
		}
		if se, ok := tok.(xml.StartElement); ok {
			names.WriteString(se.Name.Space + ":" + se.Name.Local + " ")
		}
	}
}

// hostSeeds are URIs naming hosts, listed and not, in the spellings a
// player reads as an authority.
const hostSeeds = "#EXTM3U\n//cdn.test/a/b\nhttps://CDN.test:443/c/d\nhttp://origin.test/e/f\n//evil.test/g/h\n" +
	"///evil.test/i/j\n/\\evil.test/kl\n#EXT-X-KEY:URI=\"https:evil.test/m/n\"\n"

// checkHLSHosts: every URI holding an inserted parameter (a URI line, or
// a tag's quoted URI, which holds no '"') is one a player resolves to
// this origin.
func checkHLSHosts(t *testing.T, in, out []byte) {
	t.Helper()
	for _, line := range bytes.Split(out, []byte("\n")) {
		tag := len(line) > 0 && line[0] == '#'
		for {
			i := bytes.Index(line, []byte(marker))
			if i < 0 {
				break
			}
			uri := line[:i-1] // less the '?' or '&' before the marker
			if tag {
				uri = uri[bytes.LastIndexByte(uri, '"')+1:]
			}
			if h, ok := foreignHost(string(uri)); ok {
				t.Fatalf("HLS(%q) = %q: %q, on host %q, given the parameters", in, out, uri, h)
			}
			line = line[i+len(marker):]
		}
	}
}

// checkDASHHosts: as checkHLSHosts for each attribute value and text
// that encoding/xml reads in a DASH output.
func checkDASHHosts(t *testing.T, in, out []byte) {
	t.Helper()
	ids := representationIDsXML(out)
	d := xml.NewDecoder(bytes.NewReader(out))
	d.Strict = true
	check := func(v string, template bool) {
		for {
			i := strings.Index(v, marker)
			if i < 0 {
				return
			}
			if h, ok := foreignHost(v[:i-1]); ok {
				t.Fatalf("DASH(%q) = %q: %q, on host %q, given the parameters", in, out, v[:i-1], h)
			}
			// A template's URIs are what the player makes of it with
			// each Representation's id, put in as written.
			for _, id := range ids {
				if !template {
					break
				}
				u := strings.ReplaceAll(v[:i-1], "$RepresentationID$", id)
				if h, ok := foreignHost(u); ok {
					t.Fatalf("DASH(%q) = %q: template %q with the id %q is %q, on host %q, given the parameters", in, out, v[:i-1], id, u, h)
				}
			}
			v = v[i+len(marker):]
		}
	}
	for {
		tok, err := d.Token()
		if err != nil {
			return
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			for _, a := range tok.Attr {
				check(a.Value, tok.Name.Local == "SegmentTemplate")
			}
		case xml.CharData:
			check(strings.TrimSpace(string(tok)), false)
		}
	}
}

// representationIDsXML are the id attributes of the Representation
// elements encoding/xml reads in b.
func representationIDsXML(b []byte) []string {
	d := xml.NewDecoder(bytes.NewReader(b))
	d.Strict = true
	var ids []string
	for {
		tok, err := d.Token()
		if err != nil {
			return ids
		}
		if se, ok := tok.(xml.StartElement); ok && se.Name.Local == "Representation" {
			for _, a := range se.Attr {
				if a.Name.Local == "id" {
					ids = append(ids, a.Value)
				}
			}
		}
	}
}

// foreignHost reports the host uri names as a browser's URL parser reads
// it (the WHATWG URL standard, more lenient than RFC 3986: controls and
// spaces at the ends dropped, tabs and newlines anywhere, '\\' read as
// '/', any run of slashes after an HTTP scheme opening the authority)
// when that is not fuzzHost; a relative reference names none.
func foreignHost(uri string) (string, bool) {
	u := strings.Trim(uri, "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f ")
	u = strings.NewReplacer("\t", "", "\n", "", "\r", "", "\\", "/").Replace(u)
	scheme := ""
	if i := strings.IndexByte(u, ':'); i > 0 && isScheme(u[:i]) {
		scheme = strings.ToLower(u[:i])
		u = u[i+1:]
		if scheme != "http" && scheme != "https" {
			return scheme + ":", true
		}
	} else if !strings.HasPrefix(u, "//") {
		return "", false
	}
	auth := strings.TrimLeft(u, "/")
	if i := strings.IndexAny(auth, "/?#"); i >= 0 {
		auth = auth[:i]
	}
	host, err := url.PathUnescape(auth)
	if err != nil {
		return auth, true
	}
	host = strings.ToLower(host)
	for _, p := range []string{":80", ":443"} {
		if h, ok := strings.CutSuffix(host, p); ok && h == fuzzHost {
			return "", false
		}
	}
	return host, host != fuzzHost
}

// isScheme reports whether s is read as a URL's scheme: an ASCII letter,
// then letters, digits, '+', '-' and '.' (RFC 3986 §3.1; the WHATWG
// scheme state reads anything else before the ':', "init-$Rep:x" say, as
// a relative URL with no scheme).
func isScheme(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i] | 0x20
		switch {
		case 'a' <= c && c <= 'z':
		case i > 0 && ('0' <= s[i] && s[i] <= '9' || s[i] == '+' || s[i] == '-' || s[i] == '.'):
		default:
			return false
		}
	}
	return s != ""
}
