package watcher

import (
	"os"
	"slices"
	"testing"
)

// swapLink points name at target the way deploy tools swap a release:
// a new link under a temporary name, renamed over the old one (one
// rename(2), so the name never misses).
func swapLink(t *testing.T, target, name string) {
	t.Helper()
	tmp := name + ".tmp"
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, name); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkSwapInvalidatesPrefix: a symlinked directory below the root,
// swapped by rename or removed, drops every name below it: the cache's
// "vod/x.m3u8" was opened through the link, and no event names it.
func TestSymlinkSwapInvalidatesPrefix(t *testing.T) {
	tests := []struct {
		name string
		op   func(t *testing.T, h *harness)
	}{
		{"swapped by rename", func(t *testing.T, h *harness) { swapLink(t, "releases/b", h.path("vod")) }},
		{"removed", func(t *testing.T, h *harness) {
			if err := os.Remove(h.path("vod")); err != nil {
				t.Fatal(err)
			}
		}},
		{"replaced in place", func(t *testing.T, h *harness) {
			os.Remove(h.path("vod"))
			if err := os.Symlink("releases/b", h.path("vod")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			for _, d := range []string{"releases/a", "releases/b"} {
				os.MkdirAll(root+"/"+d, 0o755)
				os.WriteFile(root+"/"+d+"/x.m3u8", []byte(d), 0o644)
			}
			if err := os.Symlink("releases/a", root+"/vod"); err != nil {
				t.Fatal(err)
			}
			h := start(t, options{root: root})
			tt.op(t, h)
			h.sync("")
			if calls := h.calls(); !slices.Contains(calls, "P vod") {
				t.Errorf("calls after the link changed: %q, want \"P vod\" among them", calls)
			}
		})
	}
}

// TestRerootFollowsSwappedRoot: a root that is a symlink swapped to another
// release is watched there after Reroot: the new tree's events arrive,
// everything was invalidated, and the old tree is no longer watched.
func TestRerootFollowsSwappedRoot(t *testing.T) {
	dir := t.TempDir()
	for _, d := range []string{"releases/1/hls", "releases/2/hls", "releases/2/dash"} {
		os.MkdirAll(dir+"/"+d, 0o755)
	}
	if err := os.Symlink("releases/1", dir+"/current"); err != nil {
		t.Fatal(err)
	}
	h := start(t, options{root: dir + "/current"})
	swapLink(t, "releases/2", dir+"/current")
	h.w.Reroot()
	h.waitCalls("A")
	h.sync("dash") // a directory only the new release has
	if got := h.w.Stats().WatchedDirs; got != 3 {
		t.Errorf("WatchedDirs = %d, want 3 (releases/2, its hls and dash)", got)
	}
	h.calls()
	if err := os.WriteFile(dir+"/releases/1/hls/old.ts", []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	h.write("hls/seg.ts", "new")
	h.waitCalls("I hls/seg.ts")
	h.sync("hls")
	if calls := h.calls(); slices.Contains(calls, "I hls/old.ts") {
		t.Errorf("calls after writing to both releases: %q, want none for the old release's file", calls)
	}
}
