package origin

import (
	"strings"
	"testing"
)

// TestReqNameEndsWithItsRequest: a request's name reads the request's
// path buffer without a copy while the request lasts; a copy taken with
// String survives the buffer's reuse; the name itself, kept past the
// request, panics on use instead of reading the next request's path.
func TestReqNameEndsWithItsRequest(t *testing.T) {
	b := new(pathBuf)
	key, err := cleanPathInto(b.b[:0], []byte("/vod/a/seg1.ts"))
	if err != nil {
		t.Fatal(err)
	}
	n := b.name(key)
	if got := n.view(); got != "vod/a/seg1.ts" {
		t.Fatalf("view() = %q, want %q", got, "vod/a/seg1.ts")
	}
	file := n.sub(n.view()[len("vod/"):])
	kept := n.String()
	b.release() // the request ends
	if _, err := cleanPathInto(b.b[:0], []byte("/other/xxxxxxxxx")); err != nil {
		t.Fatal(err)
	}
	if kept != "vod/a/seg1.ts" {
		t.Errorf("String() after the buffer was reused = %q, want %q", kept, "vod/a/seg1.ts")
	}
	for what, stale := range map[string]reqName{"name": n, "part of it": file} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(r.(string), "after its request ended") {
					t.Errorf("view() of a %s kept past its request: recovered %v, want the panic", what, r)
				}
			}()
			t.Errorf("view() of a %s kept past its request = %q, want a panic", what, stale.view())
		}()
	}
	// A path longer than the buffer was decoded into memory of its own:
	// nothing to outlive.
	long := "/" + strings.Repeat("d/", pathScratch) + "x.ts"
	key, err = cleanPathInto(b.b[:0], []byte(long))
	if err != nil {
		t.Fatal(err)
	}
	own := b.name(key)
	b.release()
	if got := own.view(); got != long[1:] {
		t.Errorf("view() of a long name after release = %.20q..., want the name", got)
	}
}
