package token

import (
	"strings"
	"testing"
)

func TestMatchPattern(t *testing.T) {
	tests := []struct {
		pattern, path string
		want          bool
	}{
		{"/vod/title42/*", "/vod/title42/master.m3u8", true},
		{"/vod/title42/*", "/vod/title42/", true},
		{"/vod/title42/*", "/vod/title42/a/b/c.ts", true},
		{"/vod/title42/*", "/vod/title42", false},
		{"/vod/title42/*", "/vod/title43/a", false},
		{"/vod/title42/master.m3u8", "/vod/title42/master.m3u8", true},
		{"/vod/title42/master.m3u8", "/vod/title42/master.m3u", false},
		{"/vod/title42/master.m3u8", "/vod/title42/master.m3u8/", false},
		{"/vod/*/master.m3u8", "/vod/x/master.m3u8", true},
		{"/vod/*/master.m3u8", "/vod/x/y/master.m3u8", true},
		{"/vod/*/master.m3u8", "/vod/master.m3u8", false},
		{"/vod/*.ts", "/vod/a.ts.m3u8", false},
		{"/vod/*.ts", "/vod/a.ts.b.ts", true},
		{"*", "/", true},
		{"*", "", true},
		{"**", "/a", true},
		{"/a*b*c", "/aXbYc", true},
		{"/a*b*c", "/aXbYcZ", false},
		{"/a*b*c", "/abbbcbc", true},
		{"/a*a*a*b", "/" + strings.Repeat("a", 200), false},
		{"", "", true},
		{"", "/", false},
		{"/?", "/x", false}, // '?' is literal
		{"/?", "/?", true},
	}
	for _, tt := range tests {
		if got := matchPattern([]byte(tt.pattern), tt.path); got != tt.want {
			t.Errorf("matchPattern(%q, %q) = %v, want %v", tt.pattern, tt.path, got, tt.want)
		}
	}
}

func TestMatchACL(t *testing.T) {
	tests := []struct {
		acl, path string
		want      bool
	}{
		{"/a/*!/b/*", "/a/x", true},
		{"/a/*!/b/*", "/b/x", true},
		{"/a/*!/b/*", "/c/x", false},
		{"/a/x!/b/*!/c", "/c", true},
		{"/a/x!/b/*!/c", "/cc", false},
	}
	for _, tt := range tests {
		if got := matchACL([]byte(tt.acl), tt.path); got != tt.want {
			t.Errorf("matchACL(%q, %q) = %v, want %v", tt.acl, tt.path, got, tt.want)
		}
	}
}

func TestIsClean(t *testing.T) {
	tests := []struct {
		path string
		want bool
	}{
		{"/", true},
		{"/a", true},
		{"/a/", true},
		{"/a/b.ts", true},
		{"/a/..b/c..", true},
		{"/.well-known/x", true},
		{"", false},
		{"a", false},
		{"//", false},
		{"//a", false},
		{"/a//b", false},
		{"/a/./b", false},
		{"/a/../b", false},
		{"/..", false},
		{"/.", false},
		{"/a/.", false},
		{"/a/..", false},
		{"/a/../", false},
	}
	for _, tt := range tests {
		if got := isClean(tt.path); got != tt.want {
			t.Errorf("isClean(%q) = %v, want %v", tt.path, got, tt.want)
		}
	}
}
