package load

import (
	"net/url"
	"reflect"
	"testing"
)

func TestParsePlaylist(t *testing.T) {
	base, _ := url.Parse("http://h/hls/byterange/180p/index.m3u8")
	tests := []struct {
		name     string
		body     string
		variants []string
		segments []step
		wantErr  bool
	}{
		{
			name: "byterange with map",
			body: "#EXTM3U\n#EXT-X-VERSION:7\n#EXT-X-MAP:URI=\"180p.mp4\",BYTERANGE=\"829@0\"\n" +
				"#EXTINF:2.0,\n#EXT-X-BYTERANGE:100@829\n180p.mp4\n" +
				"#EXTINF:2.0,\n#EXT-X-BYTERANGE:50\n180p.mp4\n#EXT-X-ENDLIST\n",
			segments: []step{
				{url: "http://h/hls/byterange/180p/180p.mp4", off: 0, n: 829, size: -1},
				{url: "http://h/hls/byterange/180p/180p.mp4", off: 829, n: 100, size: -1},
				{url: "http://h/hls/byterange/180p/180p.mp4", off: 929, n: 50, size: -1}, // continues
			},
		},
		{
			name: "whole segments, relative up",
			body: "#EXTM3U\n#EXTINF:2.000,\n../w1/seg007.m4s\n#EXTINF:2.000,\n../w1/seg008.m4s\n",
			segments: []step{
				{url: "http://h/hls/byterange/w1/seg007.m4s", n: -1, size: -1},
				{url: "http://h/hls/byterange/w1/seg008.m4s", n: -1, size: -1},
			},
		},
		{
			name: "multivariant",
			body: "#EXTM3U\n#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x, y\",URI=\"audio/index.m3u8\"\n" +
				"#EXT-X-STREAM-INF:BANDWIDTH=1,CODECS=\"avc1.42c00c,mp4a.40.2\"\n180p/index.m3u8\n",
			variants: []string{"http://h/hls/byterange/180p/audio/index.m3u8", "http://h/hls/byterange/180p/180p/index.m3u8"},
		},
		{name: "not a playlist", body: "<html>", wantErr: true},
		{name: "empty playlist", body: "#EXTM3U\n#EXT-X-ENDLIST\n", wantErr: true},
		{name: "bad byterange", body: "#EXTM3U\n#EXT-X-BYTERANGE:x@1\na.mp4\n", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pl, err := parsePlaylist(base, []byte(tt.body))
			if tt.wantErr {
				if err == nil {
					t.Fatalf("parsePlaylist(%q) = %+v, want an error", tt.body, pl)
				}
				return
			}
			if err != nil {
				t.Fatalf("parsePlaylist(%q) = %v", tt.body, err)
			}
			if !reflect.DeepEqual(pl.variants, tt.variants) || !reflect.DeepEqual(pl.segments, tt.segments) {
				t.Fatalf("parsePlaylist(%q) =\n  %+v %+v\nwant\n  %+v %+v", tt.body, pl.variants, pl.segments, tt.variants, tt.segments)
			}
		})
	}
}

func TestAttr(t *testing.T) {
	line := `#EXT-X-MEDIA:TYPE=AUDIO,NAME="a, b",URI="x.m3u8",DEFAULT=YES`
	for name, want := range map[string]string{"TYPE": "AUDIO", "NAME": "a, b", "URI": "x.m3u8", "DEFAULT": "YES", "NONE": ""} {
		if got := attr(line, name); got != want {
			t.Errorf("attr(%q, %q) = %q, want %q", line, name, got, want)
		}
	}
}
