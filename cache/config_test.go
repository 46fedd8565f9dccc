package cache_test

import (
	"io/fs"
	"os"
	"testing"
	"time"

	"segorigin/cache"
)

func TestNewValidates(t *testing.T) {
	open := func(string) (*os.File, error) { return nil, fs.ErrNotExist }
	stat := func(string) (fs.FileInfo, error) { return nil, fs.ErrNotExist }
	tests := []struct {
		name    string
		cfg     cache.Config
		wantErr bool
	}{
		{"minimal", cache.Config{MaxFiles: 1, Open: open, Stat: stat}, false},
		{"uncached needs no Stat", cache.Config{Open: open}, false},
		{"negative MaxFiles", cache.Config{MaxFiles: -1, Open: open, Stat: stat}, true},
		{"no Open", cache.Config{MaxFiles: 1, Stat: stat}, true},
		{"no Stat", cache.Config{MaxFiles: 1, Open: open}, true},
		{"negative Revalidate", cache.Config{MaxFiles: 1, Open: open, Stat: stat, Revalidate: -time.Second}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := cache.New(tt.cfg)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New(%+v) error = %v, want error %v", tt.cfg, err, tt.wantErr)
			}
			if c != nil {
				c.Close()
			}
		})
	}
}

func TestETag(t *testing.T) {
	mtime := time.Unix(1_700_000_000, 123)
	tests := []struct {
		name  string
		size  int64
		mtime time.Time
		want  string
	}{
		{"empty", 0, time.Unix(0, 0), `"0-0"`},
		{"segment", 2 << 20, mtime, `"200000-` + "17979cfe362a007b" + `"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cache.ETag(tt.size, tt.mtime); got != tt.want {
				t.Errorf("ETag(%d, %v) = %s, want %s", tt.size, tt.mtime, got, tt.want)
			}
		})
	}
	if cache.ETag(10, mtime) == cache.ETag(10, mtime.Add(time.Nanosecond)) {
		t.Errorf("ETag ignores a 1ns mtime change")
	}
	if cache.ETag(10, mtime) == cache.ETag(11, mtime) {
		t.Errorf("ETag ignores size")
	}
}
