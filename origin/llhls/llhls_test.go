package llhls

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// live is a low-latency playlist: segments 10..15 of 4 s, parts of 1 s,
// the parts of segment 14 and 15 listed, two parts of segment 16 so far.
const live = `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:4
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3.0,CAN-SKIP-UNTIL=12.0
#EXT-X-PART-INF:PART-TARGET=1.0
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-MAP:URI="init.mp4"
#EXTINF:4.0,
seg10.m4s
#EXTINF:4.0,
seg11.m4s
#EXT-X-DATERANGE:ID="ad1",START-DATE="2024-01-01T00:00:00Z"
#EXTINF:4.0,
seg12.m4s
#EXTINF:4.0,
seg13.m4s
#EXT-X-PART:DURATION=1.0,URI="seg14.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.0,URI="seg14.1.m4s"
#EXT-X-PART:DURATION=1.0,URI="seg14.2.m4s"
#EXT-X-PART:DURATION=1.0,URI="seg14.3.m4s"
#EXTINF:4.0,
seg14.m4s
#EXT-X-PART:DURATION=1.0,URI="seg15.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.0,URI="seg15.1.m4s"
#EXT-X-PART:DURATION=1.0,URI="seg15.2.m4s"
#EXT-X-PART:DURATION=1.0,URI="seg15.3.m4s"
#EXTINF:4.0,
seg15.m4s
#EXT-X-PART:DURATION=1.0,URI="seg16.0.m4s",INDEPENDENT=YES
#EXT-X-PART:DURATION=1.0,URI="seg16.1.m4s"
#EXT-X-PRELOAD-HINT:TYPE=PART,URI="seg16.2.m4s"
`

func TestParse(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want Playlist
		err  error
	}{
		{"live", live, Playlist{CanBlockReload: true, CanSkipUntil: 12e6, TargetDuration: 4, PartTarget: 1e6,
			MediaSequence: 10, Segments: 6, LastParts: 4, NextParts: 2, PreloadHint: "seg16.2.m4s", LastURI: "seg15.m4s"}, nil},
		{"vod", "#EXTM3U\n#EXT-X-TARGETDURATION:6\n#EXTINF:6,\na.ts\n#EXTINF:6,\nb.ts\n#EXT-X-ENDLIST\n",
			Playlist{TargetDuration: 6, Segments: 2, EndList: true, LastURI: "b.ts"}, nil},
		{"map hint and byte range hint", "#EXTM3U\n#EXT-X-PRELOAD-HINT:TYPE=MAP,URI=\"init.mp4\"\n#EXT-X-PRELOAD-HINT:TYPE=PART,URI=\"s/7.mp4\",BYTERANGE-START=100\n",
			Playlist{PreloadHint: "s/7.mp4"}, nil},
		{"crlf and quoted commas", "#EXTM3U\r\n#EXT-X-SERVER-CONTROL:HOLD-BACK=\"a,b\",CAN-BLOCK-RELOAD=YES,CAN-SKIP-DATERANGES=YES\r\n#EXT-X-MEDIA-SEQUENCE:7\r\n",
			Playlist{CanBlockReload: true, CanSkipDateRanges: true, MediaSequence: 7}, nil},
		{"block NO", "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=NO\n", Playlist{}, nil},
		{"not a playlist", "hello", Playlist{}, ErrNotMediaPlaylist},
		{"multivariant", "#EXTM3U\n#EXT-X-STREAM-INF:BANDWIDTH=1\na.m3u8\n", Playlist{}, ErrNotMediaPlaylist},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse([]byte(tt.src))
			if !errors.Is(err, tt.err) {
				t.Fatalf("Parse() error = %v, want %v", err, tt.err)
			}
			got.segs, got.first = nil, 0
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Parse() = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestParseQuery(t *testing.T) {
	tests := []struct {
		q    string
		want Request
		err  error
	}{
		{"", Request{}, nil},
		{"token=abc&x=1", Request{}, nil},
		{"_HLS_msn=16", Request{MSN: 16, HasMSN: true}, nil},
		{"_HLS_msn=16&_HLS_part=2&_HLS_skip=YES", Request{MSN: 16, Part: 2, HasMSN: true, HasPart: true, Skip: SkipYes}, nil},
		{"_HLS_skip=v2", Request{Skip: SkipV2}, nil},
		{"_HLS_part=2", Request{}, ErrPartWithoutMSN},
		{"_HLS_msn=-1", Request{}, ErrBadDirective},
		{"_HLS_msn=", Request{}, ErrBadDirective},
		{"_HLS_msn=1e3", Request{}, ErrBadDirective},
		{"_HLS_msn=9999999999999999999", Request{}, ErrBadDirective},
		{"_HLS_skip=yes", Request{}, ErrBadDirective},
		{"_HLS_other=1", Request{}, nil},
	}
	for _, tt := range tests {
		got, err := ParseQuery([]byte(tt.q))
		if got != tt.want || !errors.Is(err, tt.err) {
			t.Errorf("ParseQuery(%q) = %+v, %v, want %+v, %v", tt.q, got, err, tt.want, tt.err)
		}
	}
}

func TestDecide(t *testing.T) {
	p, err := Parse([]byte(live))
	if err != nil {
		t.Fatal(err)
	}
	msn := func(n int64) Request { return Request{MSN: n, HasMSN: true} }
	part := func(n, m int64) Request { return Request{MSN: n, Part: m, HasMSN: true, HasPart: true} }
	tests := []struct {
		name string
		r    Request
		want Verdict
	}{
		{"no directive", Request{}, Answer},
		{"skip only", Request{Skip: SkipYes}, Answer},
		{"old segment", msn(3), Answer},
		{"last segment", msn(15), Answer},
		{"next segment", msn(16), Wait},
		{"last plus two", msn(17), Wait},
		{"last plus three (§6.2.5.2: 400)", msn(18), TooFar},
		{"part of the last segment", part(15, 3), Answer},
		{"part past the last segment's last: part 0 of the next", part(15, 4), Answer},
		{"listed part of the next segment", part(16, 1), Answer},
		{"next part", part(16, 2), Wait},
		{"part within the Advance Part Limit", part(16, 4), Wait},
		{"part past the Advance Part Limit", part(16, 5), TooFar},
		{"part of the segment after next", part(17, 0), Wait},
	}
	for _, tt := range tests {
		if got := p.Decide(tt.r); got != tt.want {
			t.Errorf("%s: Decide(%+v) = %v, want %v", tt.name, tt.r, got, tt.want)
		}
	}
	// A playlist that cannot block, or has ended, answers at once.
	for _, src := range []string{strings.Replace(live, "CAN-BLOCK-RELOAD=YES", "CAN-BLOCK-RELOAD=NO", 1), live + "#EXT-X-ENDLIST\n"} {
		q, _ := Parse([]byte(src))
		if got := q.Decide(msn(40)); got != Answer {
			t.Errorf("Decide(msn 40) on a playlist that cannot block = %v, want answer", got)
		}
	}
}

func TestAdvancePartLimit(t *testing.T) {
	for _, tt := range []struct{ target, want int64 }{{0, 3}, {1_000_000, 3}, {2_000_000, 3}, {500_000, 6}, {333_334, 9}, {200_000, 15}} {
		p := Playlist{PartTarget: tt.target}
		if got := p.advancePartLimit(); got != tt.want {
			t.Errorf("advancePartLimit(PART-TARGET %dµs) = %d, want %d", tt.target, got, tt.want)
		}
	}
}

// liveDelta is live's delta update: segments 10 and 11 skipped, the
// EXT-X-MAP they were read with written again.
var liveDelta = `#EXTM3U
#EXT-X-VERSION:9
#EXT-X-TARGETDURATION:4
#EXT-X-SERVER-CONTROL:CAN-BLOCK-RELOAD=YES,PART-HOLD-BACK=3.0,CAN-SKIP-UNTIL=12.0
#EXT-X-PART-INF:PART-TARGET=1.0
#EXT-X-MEDIA-SEQUENCE:10
#EXT-X-SKIP:SKIPPED-SEGMENTS=2
#EXT-X-MAP:URI="init.mp4"
` + live[strings.Index(live, "#EXT-X-DATERANGE"):]

func TestDelta(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		skip    Skip
		want    string // "" for no delta
		skipped int
	}{
		{
			// 24 s of segments, a boundary of 12 s: the segments after 10
			// and 11 add up to 20 s and 16 s, more than the boundary;
			// segment 12 has exactly 12 s after it and stays.
			name: "YES", src: live, skip: SkipYes, skipped: 2,
			want: liveDelta,
		},
		{
			name: "v2 without CAN-SKIP-DATERANGES is YES", src: live, skip: SkipV2, skipped: 2,
			want: liveDelta,
		},
		{
			// Six 2 s segments, a boundary of 6 s: c has exactly 6 s after it
			// and stays.
			name: "v2 drops the skipped date ranges", skip: SkipV2, skipped: 2,
			src: "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=6,CAN-SKIP-DATERANGES=YES\n#EXT-X-KEY:METHOD=AES-128,URI=\"k1\"\n" +
				"#EXTINF:2,\na\n#EXT-X-DATERANGE:ID=\"x\"\n#EXT-X-KEY:METHOD=AES-128,URI=\"k2\"\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k3\",KEYFORMAT=\"f\"\n#EXTINF:2,\nb\n#EXTINF:2,\nc\n" +
				"#EXTINF:2,\nd\n#EXTINF:2,\ne\n#EXTINF:2,\nf\n",
			want: "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=6,CAN-SKIP-DATERANGES=YES\n#EXT-X-SKIP:SKIPPED-SEGMENTS=2,RECENTLY-REMOVED-DATERANGES=\"\"\n" +
				"#EXT-X-KEY:METHOD=AES-128,URI=\"k2\"\n#EXT-X-KEY:METHOD=SAMPLE-AES,URI=\"k3\",KEYFORMAT=\"f\"\n#EXTINF:2,\nc\n#EXTINF:2,\nd\n#EXTINF:2,\ne\n#EXTINF:2,\nf\n",
		},
		{
			name: "the kept segment's own map is not doubled", skip: SkipYes, skipped: 1,
			src:  "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=2\n#EXT-X-MAP:URI=\"i1\"\n#EXTINF:2,\na\n#EXT-X-MAP:URI=\"i2\"\n#EXTINF:2,\nb\n#EXTINF:2,\nc\n",
			want: "#EXTM3U\n#EXT-X-SERVER-CONTROL:CAN-SKIP-UNTIL=2\n#EXT-X-SKIP:SKIPPED-SEGMENTS=1\n#EXT-X-MAP:URI=\"i2\"\n#EXTINF:2,\nb\n#EXTINF:2,\nc\n",
		},
		{name: "no skip asked", src: live, skip: SkipNone},
		{name: "nothing far enough", src: strings.Replace(live, "CAN-SKIP-UNTIL=12.0", "CAN-SKIP-UNTIL=24.0", 1), skip: SkipYes},
		{name: "no CAN-SKIP-UNTIL (§6.2.5.1: ignored)", src: strings.Replace(live, ",CAN-SKIP-UNTIL=12.0", "", 1), skip: SkipYes},
		{name: "ended (§6.2.5.1: ignored)", src: live + "#EXT-X-ENDLIST\n", skip: SkipYes},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Parse([]byte(tt.src))
			if err != nil {
				t.Fatal(err)
			}
			got, n := p.Delta(nil, []byte(tt.src), tt.skip)
			if string(got) != tt.want || n != tt.skipped {
				t.Errorf("Delta() = %d skipped,\n%s\nwant %d skipped,\n%s", n, got, tt.skipped, tt.want)
			}
		})
	}
}
