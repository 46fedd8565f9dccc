package accesslog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// readLog is the file at path, "" when it does not exist.
func readLog(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return string(b)
}

// TestFileBuffered: with a buffer, lines reach the file only when the
// next would not fit, on Flush, at Reopen (to the file they were logged
// to) and at Close; whole lines, in order; a line longer than the buffer
// goes out on its own, after the lines before it.
func TestFileBuffered(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := OpenBuffered(path, Buffer{Size: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	line := func(c byte) []byte { return []byte(strings.Repeat(string(c), 29) + "\n") } // 30 bytes
	for _, c := range []byte("abc") {
		if n, err := f.Write(line(c)); n != 30 || err != nil {
			t.Fatalf("Write = %d, %v", n, err)
		}
	}
	if got := readLog(t, path); got != "" {
		t.Fatalf("three lines of 30 in a buffer of 100: the file holds %q, want nothing yet", got)
	}
	f.Write(line('d')) // would make 120: the three go out, d waits
	want := string(line('a')) + string(line('b')) + string(line('c'))
	if got := readLog(t, path); got != want {
		t.Fatalf("after a fourth line: the file holds %q, want the first three", got)
	}
	long := []byte(strings.Repeat("L", 150) + "\n")
	f.Write(long) // d first, then the long line alone
	want += string(line('d')) + string(long)
	if got := readLog(t, path); got != want {
		t.Fatalf("after a line longer than the buffer: the file holds %q, want %q", got, want)
	}
	f.Write(line('e'))
	if err := f.Flush(); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	want += string(line('e'))
	if got := readLog(t, path); got != want {
		t.Fatalf("after Flush: the file holds %q, want %q", got, want)
	}

	// Reopen: what was logged before it stays with the renamed file.
	f.Write(line('f'))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	if err := f.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	want += string(line('f'))
	if got := readLog(t, path+".1"); got != want {
		t.Fatalf("the renamed file holds %q, want %q", got, want)
	}
	f.Write(line('g'))
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := readLog(t, path); got != string(line('g')) {
		t.Fatalf("after Close: the new file holds %q, want the one line logged since Reopen", got)
	}
	if _, err := f.Write(line('h')); err == nil {
		t.Fatalf("Write after Close: no error")
	}
}

// TestFileBufferedFlushTimer: a line waits at most Flush; a server with
// no traffic has nothing waiting and no timer armed.
func TestFileBufferedFlushTimer(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := OpenBuffered(path, Buffer{Size: 64 << 10, Flush: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for round := range 2 {
		want := strings.Repeat("GET /seg.ts 200\n", round+1)
		f.Write([]byte("GET /seg.ts 200\n"))
		deadline := time.Now().Add(5 * time.Second)
		for readLog(t, path) != want {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: after 5 s the file holds %q, want %q (a line waits at most Flush)", round, readLog(t, path), want)
			}
			time.Sleep(time.Millisecond)
		}
	}
}

// TestOpenBufferedRefusesNegative: a negative size or flush is an error
// that names both.
func TestOpenBufferedRefusesNegative(t *testing.T) {
	for _, b := range []Buffer{{Size: -1}, {Size: 1, Flush: -time.Second}} {
		if f, err := OpenBuffered(filepath.Join(t.TempDir(), "a.log"), b); err == nil {
			f.Close()
			t.Errorf("OpenBuffered(%+v): no error", b)
		}
	}
}
