package llhls

import (
	"bytes"
	"testing"
)

// FuzzParse: any bytes and any query parse without panic; the URIs read
// are one line each; a decision is
// one of the three verdicts; a delta update lists exactly the segments it
// did not skip, starts as the playlist starts, and stays bounded.
func FuzzParse(f *testing.F) {
	f.Add([]byte(live), []byte("_HLS_msn=16&_HLS_part=2&_HLS_skip=YES"))
	f.Add([]byte(live+"#EXT-X-ENDLIST\n"), []byte("_HLS_skip=v2"))
	f.Add([]byte("#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=2,CAN-SKIP-DATERANGES=YES\n#EXT-X-MAP:URI=\"i\"\n#EXTINF:2,\na\n#EXTINF:2,\nb\n#EXTINF:2,\nc\n"), []byte("_HLS_skip=v2"))
	f.Add([]byte("#EXTM3U\r\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES\r\n#EXTINF:,\r\nx"), []byte("_HLS_msn=0&_HLS_part=0"))
	f.Fuzz(func(t *testing.T, src, query []byte) {
		p, err := Parse(src)
		if err != nil {
			return
		}
		if bytes.ContainsAny([]byte(p.PreloadHint+p.LastURI), "\n") {
			t.Fatalf("a URI spans lines: hint %q, last %q", p.PreloadHint, p.LastURI)
		}
		r, err := ParseQuery(query)
		if err == nil {
			if v := p.Decide(r); v > TooFar {
				t.Fatalf("Decide(%+v) = %d", r, v)
			}
		}
		for _, skip := range []Skip{SkipYes, SkipV2} {
			out, n := p.Delta(nil, src, skip)
			if n == 0 {
				if len(out) != 0 {
					t.Fatalf("Delta skipped nothing but wrote %q", out)
				}
				continue
			}
			if n < 0 || n >= p.Segments || len(out) > 2*len(src)+64 {
				t.Fatalf("Delta skipped %d of %d segments, %d bytes from %d", n, p.Segments, len(out), len(src))
			}
			if !bytes.HasPrefix(out, []byte("#EXTM3U")) || bytes.Count(out, []byte("#EXT-X-SKIP:")) != 1 {
				t.Fatalf("Delta = %q", out)
			}
			q, err := Parse(out)
			if err != nil || q.Segments != p.Segments-n || q.NextParts != p.NextParts {
				t.Fatalf("Delta of %d: %d segments, %d next parts, err %v; want %d, %d", n, q.Segments, q.NextParts, err, p.Segments-n, p.NextParts)
			}
		}
	})
}
