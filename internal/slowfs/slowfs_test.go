package slowfs

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestGateHoldsColdReadsOnly: a held gate stops reads that miss the page
// cache, and only those.
func TestGateHoldsColdReadsOnly(t *testing.T) {
	backing := t.TempDir()
	want := bytes.Repeat([]byte("0123456789abcdef"), 4096)
	for _, n := range []string{"hot", "cold"} {
		if err := os.WriteFile(filepath.Join(backing, n), want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	f := MountT(t, backing, 0)
	if got, err := os.ReadFile(filepath.Join(f.Dir(), "hot")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read hot through the mount: %d bytes, %v; want %d bytes", len(got), err, len(want))
	}
	f.Hold()
	if got, err := os.ReadFile(filepath.Join(f.Dir(), "hot")); err != nil || !bytes.Equal(got, want) {
		t.Fatalf("read of a cached file while held: %d bytes, %v; want it served from the page cache", len(got), err)
	}
	done := make(chan error, 1)
	go func() {
		got, err := os.ReadFile(filepath.Join(f.Dir(), "cold"))
		if err == nil && !bytes.Equal(got, want) {
			err = os.ErrInvalid
		}
		done <- err
	}()
	if err := f.AwaitWaiting(1, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		t.Fatalf("cold read finished while the gate was held (err %v)", err)
	default:
	}
	f.Open()
	if err := <-done; err != nil {
		t.Fatalf("cold read after Open: %v", err)
	}
	before := f.Reads()
	if err := Evict(filepath.Join(f.Dir(), "hot")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.ReadFile(filepath.Join(f.Dir(), "hot")); err != nil {
		t.Fatal(err)
	}
	if f.Reads() == before {
		t.Errorf("read after Evict did not reach the file system (Reads stayed %d)", before)
	}
}
