package publish

import (
	"math"
	"testing"
	"time"
)

const sec = int64(time.Second)

func TestInProgress(t *testing.T) {
	now := 1_800_000_000 * sec
	r := Rule{Settle: 2 * time.Second}
	tests := []struct {
		name string
		f    File
		seen int64
		want bool
	}{
		{"settled long ago", File{ModTime: now - 60*sec, Ctime: now - 60*sec}, 0, false},
		{"mtime now", File{ModTime: now, Ctime: now - 60*sec}, 0, true},
		{"mtime just inside", File{ModTime: now - 2*sec + 1, Ctime: now - 60*sec}, 0, true},
		{"mtime exactly settle ago", File{ModTime: now - 2*sec, Ctime: now - 2*sec}, 0, false},
		{"mtime restored, ctime now", File{ModTime: now - 3600*sec, Ctime: now - sec}, 0, true},
		{"mtime set in the future long ago", File{ModTime: now + 3600*sec, Ctime: now - 60*sec}, 0, false},
		{"mtime set in the future just now", File{ModTime: now + 3600*sec, Ctime: now - sec}, 0, true},
		{"ctime in the future", File{ModTime: now - 60*sec, Ctime: now + 60*sec}, 0, true},
		{"settled, whatever its size", File{ModTime: now - 60*sec, Ctime: now - 60*sec}, 0, false},
		{"watcher saw a write", File{ModTime: now - 60*sec, Ctime: now - 60*sec}, now - sec, true},
		{"watcher write settled", File{ModTime: now - 60*sec, Ctime: now - 60*sec}, now - 3*sec, false},
		{"dates at the extremes", File{ModTime: math.MinInt64, Ctime: math.MinInt64}, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := r.InProgress(tt.f, tt.seen, now); got != tt.want {
				t.Errorf("InProgress(%+v, seen %d, now %d) = %v, want %v", tt.f, tt.seen, now, got, tt.want)
			}
		})
	}
}

func TestSettleZero(t *testing.T) {
	now := 1_800_000_000 * sec
	r := Rule{}
	if r.InProgress(File{ModTime: now, Ctime: now}, now, now) {
		t.Errorf("Settle 0: a file written now is in progress, want the date rule off")
	}
	if r.InProgress(File{ModTime: now - 60*sec, Ctime: now - 60*sec}, 0, now) {
		t.Errorf("Settle 0: a file settled long ago is in progress")
	}
}

func TestWrites(t *testing.T) {
	var w Writes
	settle := 2 * time.Second
	now := 1_800_000_000 * sec
	if got := w.Seen("a.ts", now, settle); got != 0 {
		t.Fatalf("Seen on an empty set = %d, want 0", got)
	}
	w.Note("a.ts", now, settle)
	if got := w.Seen("a.ts", now+sec, settle); got != now {
		t.Errorf("Seen 1s after the write = %d, want %d", got, now)
	}
	if got := w.Seen("b.ts", now+sec, settle); got != 0 {
		t.Errorf("Seen of a name never written = %d, want 0", got)
	}
	if got := w.Seen("a.ts", now+2*sec, settle); got != 0 {
		t.Errorf("Seen at settle = %d, want 0 (forgotten)", got)
	}
	if n := w.n.Load(); n != 0 {
		t.Errorf("after the last name settled, %d names remembered, want 0", n)
	}
}

func TestWritesBounded(t *testing.T) {
	var w Writes
	settle := time.Hour // nothing settles: only the bound forgets
	now := 1_800_000_000 * sec
	for i := range maxWrites + 10 {
		w.Note(string(rune(i+1))+"x", now+int64(i), settle)
	}
	if n := int(w.n.Load()); n > maxWrites {
		t.Errorf("remembered %d names, want at most %d", n, maxWrites)
	}
	last := string(rune(maxWrites+10)) + "x"
	if got := w.Seen(last, now+maxWrites+10, settle); got == 0 {
		t.Errorf("the newest name was forgotten by the bound")
	}
}

// FuzzInProgress checks the rule's invariants on any dates: an empty
// segment is always in progress; a file whose dates and watcher event are
// all at least the settle period old is never; and a file in progress at
// now is in progress at every earlier instant no earlier than its last
// write.
func FuzzInProgress(f *testing.F) {
	now := 1_800_000_000 * sec
	f.Add(int64(10), now-60*sec, now-60*sec, int64(0), now, int64(2*sec), true)
	f.Add(int64(0), now, now, now, now, int64(2*sec), true)
	f.Add(int64(5), now+sec, now, int64(0), now, int64(0), false)
	f.Add(int64(5), int64(math.MinInt64), int64(math.MaxInt64), int64(0), now, int64(sec), false)
	// size and segment: inputs of an earlier rule, kept so the corpus
	// stays valid; the rule no longer looks at either.
	f.Fuzz(func(t *testing.T, _, mtime, ctime, seen, now, settle int64, _ bool) {
		if settle < 0 {
			settle = -(settle + 1)
		}
		r := Rule{Settle: time.Duration(settle)}
		fl := File{ModTime: mtime, Ctime: ctime}
		got := r.InProgress(fl, seen, now)
		old := func(x int64) bool { return x <= now && now-x >= settle && now-x >= 0 }
		mtimeOld := old(mtime) || mtime > now
		if mtimeOld && old(ctime) && (seen == 0 || old(seen)) && got {
			t.Fatalf("InProgress(%+v, seen %d, now %d, settle %d) = true, want false: every date is settled", fl, seen, now, settle)
		}
		last := max(mtime, ctime)
		if got && now > last && now-last > 0 && seen == 0 {
			earlier := last + (now-last)/2
			if !r.InProgress(fl, seen, earlier) {
				t.Fatalf("in progress at %d but not at the earlier %d (last write %d)", now, earlier, last)
			}
		}
	})
}
