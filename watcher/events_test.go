package watcher

import (
	"os"
	"path"
	"slices"
	"testing"
	"time"
)

func TestFileEventsInvalidateName(t *testing.T) {
	tests := []struct {
		name string
		op   func(h *harness)
		want []string // calls that must be made; no prefix or all calls may be
	}{
		{"create", func(h *harness) { h.write("hls/new.ts", "x") }, []string{"I hls/new.ts"}},
		{"write", func(h *harness) {
			f, err := os.OpenFile(h.path("hls/seg1.ts"), os.O_WRONLY|os.O_APPEND, 0)
			if err != nil {
				t.Fatal(err)
			}
			f.WriteString("more")
			f.Close()
		}, []string{"I hls/seg1.ts"}},
		{"chmod", func(h *harness) {
			if err := os.Chmod(h.path("hls/seg1.ts"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, []string{"I hls/seg1.ts"}},
		{"touch", func(h *harness) {
			now := time.Now()
			if err := os.Chtimes(h.path("hls/seg1.ts"), now, now); err != nil {
				t.Fatal(err)
			}
		}, []string{"I hls/seg1.ts"}},
		{"remove", func(h *harness) {
			if err := os.Remove(h.path("hls/seg1.ts")); err != nil {
				t.Fatal(err)
			}
		}, []string{"I hls/seg1.ts"}},
		{"rename", func(h *harness) {
			if err := os.Rename(h.path("hls/seg1.ts"), h.path("hls/seg9.ts")); err != nil {
				t.Fatal(err)
			}
		}, []string{"I hls/seg1.ts", "I hls/seg9.ts"}},
		{"atomic replace", func(h *harness) {
			h.write("hls/.seg1.ts.tmp", "new content")
			if err := os.Rename(h.path("hls/.seg1.ts.tmp"), h.path("hls/seg1.ts")); err != nil {
				t.Fatal(err)
			}
		}, []string{"I hls/.seg1.ts.tmp", "I hls/seg1.ts"}},
		{"in the root", func(h *harness) { h.write("top.m3u8", "#EXTM3U") }, []string{"I top.m3u8"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			os.MkdirAll(root+"/hls", 0o755)
			os.WriteFile(root+"/hls/seg1.ts", []byte("seg1"), 0o644)
			h := start(t, options{root: root})

			tt.op(h)
			h.waitCalls(tt.want...)
			h.sync("hls")
			for _, c := range h.calls() {
				if !slices.Contains(tt.want, c) {
					t.Errorf("%s: unexpected call %q (want only %q)", tt.name, c, tt.want)
				}
			}
		})
	}
}

func TestDirectoryRemovedInvalidatesPrefix(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/a/b/c", 0o755)
	os.WriteFile(root+"/a/b/c/seg.m4s", []byte("x"), 0o644)
	h := start(t, options{root: root})
	if got := h.w.Stats().WatchedDirs; got != 4 {
		t.Fatalf("WatchedDirs = %d, want 4 (root, a, a/b, a/b/c)", got)
	}

	if err := os.RemoveAll(h.path("a/b")); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("P a/b")
	h.sync("a")
	if got := h.w.Stats().WatchedDirs; got != 2 {
		t.Errorf("after rm -r a/b: WatchedDirs = %d, want 2", got)
	}
}

func TestDirectoryRenamedMovesWatches(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"v/title1/hd", "v/title1/sd"} {
		os.MkdirAll(root+"/"+d, 0o755)
		os.WriteFile(root+"/"+d+"/seg.ts", []byte(d), 0o644)
	}
	h := start(t, options{root: root})

	if err := os.Rename(h.path("v/title1"), h.path("v/title2")); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("P v/title1", "I v/title2", "I v/title2/hd/seg.ts")
	h.sync("v")
	h.calls()

	// Below the renamed directory, events carry the new names, never the
	// old ones.
	h.write("v/title2/hd/seg.ts", "changed")
	h.waitCalls("I v/title2/hd/seg.ts")
	h.sync("v/title2/hd")
	for _, c := range h.calls() {
		if c != "I v/title2/hd/seg.ts" {
			t.Errorf("after rename: unexpected call %q", c)
		}
	}

	// A new directory at the old name is watched like any other.
	h.mkdirAll("v/title1/hd")
	h.write("v/title1/hd/seg.ts", "new")
	h.waitCalls("I v/title1/hd/seg.ts")
	h.sync("v/title1/hd")
	if got := h.w.Stats().WatchedDirs; got != 7 {
		t.Errorf("WatchedDirs = %d, want 7", got)
	}
}

func TestDirectoryRenamedOut(t *testing.T) {
	root := t.TempDir()
	outside := t.TempDir()
	os.MkdirAll(root+"/live/ch1", 0o755)
	h := start(t, options{root: root})
	if err := os.Rename(h.path("live"), outside+"/live"); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("P live")
	h.sync("")
	if got := h.w.Stats().WatchedDirs; got != 1 {
		t.Errorf("WatchedDirs = %d, want 1 (the root)", got)
	}
	// Writes in the moved-out tree are not ours any more.
	os.WriteFile(outside+"/live/ch1/x.ts", []byte("x"), 0o644)
	h.sync("")
	// "I live" may come too: fsnotify reports the directory's own MOVE_SELF
	// as a Rename when it handles it before the watcher drops the watch.
	for _, c := range h.calls() {
		if c != "P live" && c != "I live" {
			t.Errorf("unexpected call %q", c)
		}
	}
}

func TestDirectoryRenamedInIsScanned(t *testing.T) {
	root := t.TempDir()
	staging := t.TempDir()
	for _, f := range []string{"t/master.m3u8", "t/720p/seg1.ts", "t/720p/seg2.ts", "t/1080p/deep/seg1.ts"} {
		os.MkdirAll(staging+"/"+path.Dir(f), 0o755)
		os.WriteFile(staging+"/"+f, []byte(f), 0o644)
	}
	h := start(t, options{root: root})

	// Published by one rename: no event for anything inside, so the scan
	// must invalidate it all (negative entries included).
	if err := os.Rename(staging+"/t", h.path("vod")); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("I vod", "I vod/master.m3u8", "I vod/720p", "I vod/720p/seg1.ts",
		"I vod/720p/seg2.ts", "I vod/1080p/deep", "I vod/1080p/deep/seg1.ts")
	h.sync("vod/1080p/deep")
	h.calls()
	h.write("vod/1080p/deep/seg1.ts", "changed")
	h.waitCalls("I vod/1080p/deep/seg1.ts")
}

func TestMkdirBurstIsWatchedAndScanned(t *testing.T) {
	h := start(t, options{})
	for i := range 20 {
		dir := "burst/" + string(rune('a'+i)) + "/x/y/z"
		// mkdir -p and a write at once: the deeper directories and the file
		// usually exist before the watcher sees the first Create.
		h.mkdirAll(dir)
		h.write(dir+"/seg.ts", "x")
		h.waitCalls("I " + dir + "/seg.ts")
		// The deepest directory is watched: a later write is seen.
		h.sync(dir)
		h.calls()
		h.write(dir+"/seg.ts", "y")
		h.waitCalls("I " + dir + "/seg.ts")
	}
	if got, want := h.w.Stats().WatchedDirs, int64(1+1+20*4); got != want {
		t.Errorf("WatchedDirs = %d, want %d", got, want)
	}
}

func TestDirectoryChmodInvalidatesPrefix(t *testing.T) {
	root := t.TempDir()
	os.MkdirAll(root+"/private", 0o755)
	h := start(t, options{root: root})
	if err := os.Chmod(h.path("private"), 0o700); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("P private")
}
