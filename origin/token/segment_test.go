package token

import (
	"encoding/base64"
	"errors"
	"net/url"
	"strings"
	"testing"
)

func TestPathSegmentRoundTrip(t *testing.T) {
	for _, tok := range []string{
		opensslToken,
		opensslURLToken,
		"a", "ab", "abc", "abcd",
		strings.Repeat("~!*/", MaxTokenLen/4),
	} {
		seg := PathSegment(tok)
		if strings.Trim(seg, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
			t.Errorf("PathSegment(%q) = %q, want only base64url digits", tok, seg)
		}
		got, err := ParseSegment(seg)
		if err != nil || got != tok {
			t.Errorf("ParseSegment(%q) = %q, %v, want %q", seg, got, err, tok)
		}
		buf := []byte("prefix")
		out, err := ParseSegmentInto(buf, seg)
		if err != nil || string(out) != "prefix"+tok {
			t.Errorf("ParseSegmentInto(%q, %q) = %q, %v, want %q", buf, seg, out, err, "prefix"+tok)
		}
	}
	if len(PathSegment(strings.Repeat("x", MaxTokenLen))) != maxSegmentLen ||
		base64.RawURLEncoding.EncodedLen(MaxTokenLen) != maxSegmentLen {
		t.Errorf("maxSegmentLen = %d, want %d", maxSegmentLen, base64.RawURLEncoding.EncodedLen(MaxTokenLen))
	}
}

// TestPathSegmentSurvivesResolution: a player resolving a relative URL
// against a token-carrying playlist URL keeps the segment unchanged.
func TestPathSegmentSurvivesResolution(t *testing.T) {
	seg := PathSegment(opensslToken)
	base, err := url.Parse("https://cdn.example/t/" + seg + "/vod/title42/master.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	for ref, want := range map[string]string{
		"1080p/index.m3u8":       "/t/" + seg + "/vod/title42/1080p/index.m3u8",
		"../title42/a/seg-1.m4s": "/t/" + seg + "/vod/title42/a/seg-1.m4s",
		"./init.mp4?x=1":         "/t/" + seg + "/vod/title42/init.mp4",
	} {
		r, err := url.Parse(ref)
		if err != nil {
			t.Fatal(err)
		}
		if got := base.ResolveReference(r); got.EscapedPath() != want {
			t.Errorf("ResolveReference(%q) path = %q, want %q", ref, got.EscapedPath(), want)
		}
	}
}

func TestParseSegmentRejects(t *testing.T) {
	good := PathSegment("abcd") // "YWJjZA"
	tests := []struct {
		name string
		seg  string
	}{
		{"empty", ""},
		{"padding", base64.URLEncoding.EncodeToString([]byte("abcd"))},
		{"std alphabet plus", "a+bc"},
		{"std alphabet slash", "a/bc"},
		{"newline", good[:3] + "\n" + good[3:]},
		{"CR", good + "\r"},
		{"percent", "YW%4A"},
		{"one digit left", good[:5]},
		{"stray bits", "YWJjZB"},
		{"too long", strings.Repeat("A", maxSegmentLen+1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSegment(tt.seg)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("ParseSegment(%q) = %q, %v, want %v", tt.seg, got, err, ErrMalformed)
			}
			dst := []byte("keep")
			out, err := ParseSegmentInto(dst, tt.seg)
			if err == nil || string(out) != "keep" {
				t.Errorf("ParseSegmentInto(%q, %q) = %q, %v, want %q, %v", dst, tt.seg, out, err, "keep", ErrMalformed)
			}
		})
	}
}

func TestParseSegmentIntoAllocs(t *testing.T) {
	seg := PathSegment(opensslToken)
	buf := make([]byte, 0, MaxTokenLen)
	if got := testing.AllocsPerRun(100, func() { buf, _ = ParseSegmentInto(buf[:0], seg) }); got != 0 {
		t.Errorf("AllocsPerRun(ParseSegmentInto) = %v, want 0", got)
	}
}
