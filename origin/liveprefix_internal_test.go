package origin

import (
	"slices"
	"testing"

	"segorigin/origin/predict"
)

// FuzzPrevNumbers: prevNumbers undoes predict.NextNumber: the name before
// the next one is among its candidates, and every candidate's next is the
// name again.
func FuzzPrevNumbers(f *testing.F) {
	for _, s := range []string{"live/seg9.m4s", "dash/chunk-0-00041.m4s", "a/seg010.ts", "x/p00.m3u8", "init-0.mp4", "seg0.m4s", "12/v.m4s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		next, ok := predict.NextNumber(name)
		if !ok {
			return
		}
		prevs := prevNumbers(next)
		if !slices.Contains(prevs, name) {
			t.Fatalf("prevNumbers(%q) = %q, want %q among them", next, prevs, name)
		}
		for _, p := range prevs {
			if n, ok := predict.NextNumber(p); !ok || n != next {
				t.Fatalf("prevNumbers(%q) has %q, whose next is %q", next, p, n)
			}
		}
	})
}
