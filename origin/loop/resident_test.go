//go:build linux

package loop

import "testing"

// TestClaimedResidentOnlyInTheWakeUpItBegan: the Ready hook's claim that a
// window is resident spares the second page-cache check only in the
// wake-up the response began in; after a wait the window is asked again.
func TestClaimedResidentOnlyInTheWakeUpItBegan(t *testing.T) {
	const began = 1_000
	for _, c := range []struct {
		name     string
		resident bool
		now      int64
		want     bool
	}{
		{"claimed, same wake-up", true, began, true},
		{"claimed, a later wake-up", true, began + 1, false},
		{"not claimed", false, began, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := &Response{Resident: c.resident}
			r.Cursor.Began = began
			if got := claimedResident(r, c.now); got != c.want {
				t.Errorf("claimedResident = %v, want %v", got, c.want)
			}
		})
	}
}
