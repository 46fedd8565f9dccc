package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/origin/etag"
)

// TestETagCommand: `segorigin etag DIR` stores every file's content tag
// in its attribute, skips them on a second run, and a server with -etag
// content then answers with exactly that tag.
func TestETagCommand(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "v"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"v/a.m4s", "v/b.m4s", "c.ts"} {
		if err := synth.WriteFile(filepath.Join(root, name), filepath.Base(name), 200<<10); err != nil {
			t.Fatal(err)
		}
	}
	out, err := exec.Command(bin, "etag", root).CombinedOutput()
	if err != nil {
		t.Fatalf("segorigin etag: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), ": 3 hashed, 0 already stored, 0 changed while hashed (not stored), 0 failed") {
		t.Errorf("first run printed %q, want 3 hashed", out)
	}
	out, err = exec.Command(bin, "etag", root).CombinedOutput()
	if err != nil || !strings.Contains(string(out), ": 0 hashed, 3 already stored") {
		t.Errorf("second run: %v, printed %q; want 3 already stored", err, out)
	}
	var buf [256]byte
	n, err := unix.Getxattr(filepath.Join(root, "v/a.m4s"), etag.Attr, buf[:])
	if errors.Is(err, unix.ENOTSUP) {
		t.Skipf("no user extended attributes here: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	stored, err := etag.ParseAttr(buf[:n])
	if err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-etag", "content")
	resp, err := http.Get("http://" + p.Addr("http") + "/v/a.m4s")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := resp.Header.Get("ETag"); resp.StatusCode != 200 || got != stored.ETag {
		t.Errorf("GET /v/a.m4s: %d, ETag %q; want 200, the stored %q", resp.StatusCode, got, stored.ETag)
	}
	if err := exec.Command(bin, "etag").Run(); err == nil {
		t.Errorf("segorigin etag without a directory exited 0")
	}
}
