package watcher

import (
	"os"
	"slices"
	"testing"
)

// TestWritesReported: a write in place is reported to OnWrite after its
// invalidation; a file renamed into place is not (its bytes were written
// under another name, which is the one reported), nor is a chmod.
func TestWritesReported(t *testing.T) {
	h := start(t, options{onWrite: true})
	h.mkdirAll("hls")
	h.sync("hls")
	h.calls()

	f, err := os.OpenFile(h.path("hls/seg1.ts"), os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("half"); err != nil {
		t.Fatal(err)
	}
	h.waitCalls("I hls/seg1.ts", "W hls/seg1.ts")
	f.Close()
	h.sync("hls")
	h.calls()

	h.write("hls/.seg2.ts.tmp", "whole")
	if err := os.Rename(h.path("hls/.seg2.ts.tmp"), h.path("hls/seg2.ts")); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(h.path("hls/seg2.ts"), 0o600); err != nil {
		t.Fatal(err)
	}
	h.sync("hls")
	calls := h.calls()
	if !slices.Contains(calls, "I hls/seg2.ts") || !slices.Contains(calls, "W hls/.seg2.ts.tmp") {
		t.Errorf("calls %q, want the rename's invalidation and the temporary's write", calls)
	}
	if slices.Contains(calls, "W hls/seg2.ts") {
		t.Errorf("calls %q: a file renamed into place (then chmod) reported as written", calls)
	}
}
