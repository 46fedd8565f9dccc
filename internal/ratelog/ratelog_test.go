package ratelog

import (
	"testing"
	"time"
)

func TestLimiter(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	l := &Limiter{Every: 10 * time.Second, Now: func() time.Time { return now }}
	steps := []struct {
		advance time.Duration
		want    bool
	}{{0, true}, {0, false}, {9 * time.Second, false}, {time.Second, true}, {0, false}}
	for i, s := range steps {
		now = now.Add(s.advance)
		if got := l.Allow(); got != s.want {
			t.Errorf("step %d: Allow() = %v, want %v", i, got, s.want)
		}
		if i == 3 {
			if got := l.Suppressed(); got != 2 {
				t.Errorf("Suppressed() after two held back = %d, want 2", got)
			}
		}
	}
	if got := l.Suppressed(); got != 1 {
		t.Errorf("Suppressed() = %d, want 1 (since the previous call)", got)
	}
	if got := l.Dropped(); got != 3 {
		t.Errorf("Dropped() = %d, want 3", got)
	}
	fresh := &Limiter{Every: time.Second, Now: l.Now}
	fresh.Inherit(l)
	if got, s := fresh.Dropped(), fresh.Suppressed(); got != 3 || s != 0 {
		t.Errorf("after Inherit: Dropped() = %d, Suppressed() = %d; want 3, 0", got, s)
	}
}
