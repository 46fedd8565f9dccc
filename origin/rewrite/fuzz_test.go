package rewrite

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// marker is what markerTarget inserts: inputs holding it are skipped, so
// every occurrence in an output was inserted.
const marker = "tok=ZQX9"

func markerTarget(max int) *Target {
	u, _ := url.Parse("http://origin.test/vod/a/index")
	return &Target{Base: u, Names: []string{"tok"}, MaxOut: max,
		Param: func(dst []byte, path string) ([]byte, bool) {
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
// many of them as URIs it says it rewrote.
func FuzzHLS(f *testing.F) {
	seeds(f, "hls/*/*.m3u8", "#EXTM3U\nseg0.ts?v=1#f\n", "#EXTM3U\n#EXT-X-MAP:URI=\"a.mp4\",X=\"y\"\n", "#EXTM3U\r\n../b/x.ts\r\n")
	seeds(f, "hls/*/*/*.m3u8")
	f.Fuzz(func(t *testing.T, in []byte) {
		if bytes.Contains(in, []byte("ZQX9")) {
			return
		}
		const max = 1 << 16
		out, res, err := HLS(nil, in, markerTarget(max))
		checkInserted(t, in, out, res, err, max)
	})
}

// FuzzDASH: as FuzzHLS for DASH; and whatever encoding/xml reads without
// error in the input it reads in the output too, with the same elements.
func FuzzDASH(f *testing.F) {
	seeds(f, "dash/*/*.mpd", `<MPD><BaseURL>v/</BaseURL><SegmentURL media="a?x=1&amp;y"/></MPD>`, `<a b='c'><!--x--><![CDATA[<]]></a>`)
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
