package predict

import (
	"encoding/binary"
	"strings"
	"testing"
)

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		base, ref, want string
		ok              bool
	}{
		{"hls/ts/270p/index.m3u8", "seg001.ts", "hls/ts/270p/seg001.ts", true},
		{"hls/ts/270p/index.m3u8", "../audio/seg001.aac", "hls/ts/audio/seg001.aac", true},
		{"hls/ts/270p/index.m3u8", "/vod/x.ts", "vod/x.ts", true},
		{"hls/ts/270p/index.m3u8", "seg%20one.ts?token=1#f", "hls/ts/270p/seg one.ts", true},
		{"a/index.m3u8", "../../etc/passwd", "", false},
		{"index.m3u8", "/../x.ts", "", false},
		{"a/index.m3u8", "https://cdn.example/x.ts", "", false},
		{"a/index.m3u8", "//cdn.example/x.ts", "", false},
		{"a/index.m3u8", "", "", false},
		{"a/index.m3u8", "x\x00.ts", "", false},
	} {
		got, ok := Resolve(tc.base, tc.ref)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q, %v", tc.base, tc.ref, got, ok, tc.want, tc.ok)
		}
	}
}

func TestNextNumber(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		ok       bool
	}{
		{"dash/template/chunk-0-003.m4s", "dash/template/chunk-0-004.m4s", true},
		{"dash/template/chunk-0-009.m4s", "dash/template/chunk-0-010.m4s", true},
		{"v/seg999.ts", "v/seg1000.ts", true},
		{"v2/seg.ts", "", false},
		{"dash/template/init-0.m4s", "", false},
		{"a/b/5", "a/b/6", true},
	} {
		got, ok := NextNumber(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("NextNumber(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

const byteRangePlaylist = `#EXTM3U
#EXT-X-VERSION:7
#EXT-X-MAP:URI="180p.mp4",BYTERANGE="829@0"
#EXTINF:2.000000,
#EXT-X-BYTERANGE:37901@829
180p.mp4
#EXTINF:2.000000,
#EXT-X-BYTERANGE:42795
180p.mp4
#EXTINF:2.000000,
#EXT-X-BYTERANGE:41142@81525
180p.mp4
#EXT-X-ENDLIST
`

func TestParseMediaByteRange(t *testing.T) {
	m, err := ParseMedia("hls/byterange/180p/index.m3u8", []byte(byteRangePlaylist))
	if err != nil {
		t.Fatal(err)
	}
	const f = "hls/byterange/180p/180p.mp4"
	want := []Entry{{f, 829, 37901}, {f, 38730, 42795}, {f, 81525, 41142}}
	if len(m.Entries) != len(want) {
		t.Fatalf("ParseMedia: %d entries %v, want %v", len(m.Entries), m.Entries, want)
	}
	for i := range want {
		if m.Entries[i] != want[i] {
			t.Errorf("entry %d = %+v, want %+v", i, m.Entries[i], want[i])
		}
	}
	if e, ok := m.Next(f, 38730); !ok || e != want[2] {
		t.Errorf("Next(%q, 38730) = %+v, %v; want %+v", f, e, ok, want[2])
	}
	if _, ok := m.Next(f, 81525); ok {
		t.Errorf("Next(last entry) = ok, want none")
	}
}

func TestParseMediaSegments(t *testing.T) {
	pl := "#EXTM3U\r\n#EXTINF:4,\r\nseg000.ts\r\n#EXTINF:4,\r\nhttp://other/seg001.ts\r\n#EXTINF:4,\r\nseg002.ts\r\n"
	m, err := ParseMedia("v/index.m3u8", []byte(pl))
	if err != nil {
		t.Fatal(err)
	}
	if e, ok := m.Next("v/seg000.ts", 0); !ok || e != (Entry{"v/seg002.ts", 0, -1}) {
		t.Errorf("Next(seg000) = %+v, %v; want v/seg002.ts (the remote one skipped)", e, ok)
	}
	for name, pl := range map[string]string{
		"master":     "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\n270p/index.m3u8\n",
		"not m3u8":   "hello",
		"empty data": "",
	} {
		if _, err := ParseMedia("v/x.m3u8", []byte(pl)); err == nil {
			t.Errorf("ParseMedia(%s) = nil error, want ErrNotMedia", name)
		}
	}
}

// mkSidx builds a version-0 sidx box with the given referenced sizes.
func mkSidx(firstOffset uint32, sizes ...uint32) []byte {
	p := []byte{0, 0, 0, 0}
	p = binary.BigEndian.AppendUint32(p, 1)     // reference_ID
	p = binary.BigEndian.AppendUint32(p, 12800) // timescale
	p = binary.BigEndian.AppendUint32(p, 0)     // earliest_presentation_time
	p = binary.BigEndian.AppendUint32(p, firstOffset)
	p = binary.BigEndian.AppendUint16(p, 0)
	p = binary.BigEndian.AppendUint16(p, uint16(len(sizes)))
	for _, s := range sizes {
		p = binary.BigEndian.AppendUint32(p, s)
		p = binary.BigEndian.AppendUint32(p, 25600)
		p = binary.BigEndian.AppendUint32(p, 0x90000000)
	}
	b := binary.BigEndian.AppendUint32(nil, uint32(8+len(p)))
	return append(append(b, "sidx"...), p...)
}

func TestParseSidx(t *testing.T) {
	box := mkSidx(10, 1000, 2000, 3000)
	spans, err := ParseSidx(box, 500)
	if err != nil {
		t.Fatal(err)
	}
	first := int64(500 + len(box) + 10)
	want := []Entry{{"", first, 1000}, {"", first + 1000, 2000}, {"", first + 3000, 3000}}
	for i := range want {
		if i >= len(spans) || spans[i] != want[i] {
			t.Fatalf("ParseSidx spans = %+v, want %+v", spans, want)
		}
	}
	if e, ok := NextSpan(spans, first+1000); !ok || e != want[1] {
		t.Errorf("NextSpan(end of first) = %+v, %v; want %+v", e, ok, want[1])
	}
	if e, ok := NextSpan(spans, 0); !ok || e != want[0] {
		t.Errorf("NextSpan(0) = %+v, %v; want the first subsegment", e, ok)
	}
	if _, ok := NextSpan(spans, first+6000); ok {
		t.Error("NextSpan(past the last) = ok, want none")
	}
	if _, err := ParseSidx(box[:len(box)-1], 0); err == nil {
		t.Error("ParseSidx(truncated) = nil error")
	}
}

func TestParseNextRange(t *testing.T) {
	for _, tc := range []struct {
		in     string
		off, n int64
		ok     bool
	}{
		{"12323-48763", 12323, 36441, true},
		{"100-", 100, -1, true},
		{"9-3", 0, 0, false},
		{"x-3", 0, 0, false},
		{"", 0, 0, false},
	} {
		off, n, ok := ParseNextRange(tc.in)
		if off != tc.off || n != tc.n || ok != tc.ok {
			t.Errorf("ParseNextRange(%q) = %d, %d, %v; want %d, %d, %v", tc.in, off, n, ok, tc.off, tc.n, tc.ok)
		}
	}
}

func FuzzParseMedia(f *testing.F) {
	f.Add("a/index.m3u8", byteRangePlaylist)
	f.Add("index.m3u8", "#EXTM3U\n#EXTINF:1,\n../../x.ts\n#EXTINF:1,\n/y.ts\n")
	f.Fuzz(func(t *testing.T, base, data string) {
		m, err := ParseMedia(base, []byte(data))
		if err != nil {
			return
		}
		for _, e := range m.Entries {
			checkName(t, e.Name)
			if e.Off < 0 || (e.Len < 1 && e.Len != -1) {
				t.Fatalf("entry %+v: negative offset or bad length", e)
			}
			if n, ok := m.Next(e.Name, e.Off); ok {
				checkName(t, n.Name)
			}
		}
	})
}

func FuzzParseSidx(f *testing.F) {
	f.Add(mkSidx(0, 1, 2, 3), int64(0))
	f.Add(mkSidx(7), int64(99))
	f.Fuzz(func(t *testing.T, b []byte, off int64) {
		if off < 0 || off > 1<<50 {
			return
		}
		spans, err := ParseSidx(b, off)
		if err != nil {
			return
		}
		prev := off
		for _, s := range spans {
			if s.Off < prev || s.Len < 0 {
				t.Fatalf("span %+v before %d or negative", s, prev)
			}
			prev = s.Off + s.Len
		}
	})
}

func FuzzParseNextRange(f *testing.F) {
	f.Add("1-2", "v/x/seg.m4s", "../a.m4s")
	f.Fuzz(func(t *testing.T, nrr, base, ref string) {
		if off, n, ok := ParseNextRange(nrr); ok && (off < 0 || (n < 1 && n != -1)) {
			t.Fatalf("ParseNextRange(%q) = %d+%d", nrr, off, n)
		}
		if name, ok := Resolve(base, ref); ok {
			checkName(t, name)
		}
		if name, ok := NextNumber(base); ok && strings.Count(name, "/") != strings.Count(base, "/") {
			t.Fatalf("NextNumber(%q) = %q: changed directory depth", base, name)
		}
	})
}

// checkName: a predicted name must be one the origin could serve.
func checkName(t *testing.T, name string) {
	t.Helper()
	if name == "" || strings.HasPrefix(name, "/") || strings.ContainsRune(name, 0) {
		t.Fatalf("name %q: empty, absolute or with NUL", name)
	}
	for _, seg := range strings.Split(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			t.Fatalf("name %q has segment %q", name, seg)
		}
	}
}
