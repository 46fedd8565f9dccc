package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"segorigin/internal/testproc"
)

// nobody is the user TestPermissionDenied runs the server as when the
// test runs as root (which reads any file whatever its mode).
const nobody = 65534

// TestPermissionDenied: a file the server may not open (EACCES), or one
// below a directory it may not search, is answered 403 as nginx answers
// it; the first such request in an interval is logged as "permission
// denied" with the request path and errno 13 (nginx: "(13: Permission
// denied)"), the rest are counted as suppressed, and every one is counted
// by segorigin_file_errors_total{reason="permission_denied"}. As root the
// server runs as nobody, so the modes apply to it.
func TestPermissionDenied(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	dir := t.TempDir()
	root := filepath.Join(dir, "media")
	for _, f := range []struct {
		name string
		mode os.FileMode
	}{{"vod/ok.ts", 0o644}, {"vod/secret.ts", 0o644}, {"vod/private/seg.ts", 0o644}} {
		p := filepath.Join(root, f.name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("segment"), f.mode); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-root", root, "-settle", "0")
	// Another user's file and directory where the test runs as root, the
	// test's own made unreadable otherwise.
	secretMode, privateMode := os.FileMode(0o600), os.FileMode(0o700)
	if os.Geteuid() == 0 {
		// nobody must reach the binary and the root: copy the binary
		// beside it and open the temp directories (0700) to others.
		exe := filepath.Join(dir, "segorigin")
		b, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(exe, b, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, d := range []string{filepath.Dir(dir), dir} {
			if err := os.Chmod(d, 0o755); err != nil {
				t.Fatal(err)
			}
		}
		cmd.Path, cmd.Args[0] = exe, exe
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	} else {
		secretMode, privateMode = 0, 0
		// TempDir's cleanup must be able to remove it.
		defer os.Chmod(filepath.Join(root, "vod/private"), 0o755)
	}
	for name, mode := range map[string]os.FileMode{"vod/secret.ts": secretMode, "vod/private": privateMode} {
		if err := os.Chmod(filepath.Join(root, name), mode); err != nil {
			t.Fatal(err)
		}
	}
	p := testproc.Start(t, cmd)
	media, admin := "http://"+p.Addr("http"), "http://"+p.Addr("admin")
	if code, body := httpGet(t, media+"/vod/ok.ts"); code != 200 || body != "segment" {
		t.Fatalf("GET /vod/ok.ts: %d %q, want 200 \"segment\"", code, body)
	}
	const refused = 5
	for i := range refused {
		target := []string{"/vod/secret.ts", "/vod/private/seg.ts"}[i%2]
		if code, body := httpGet(t, media+target); code != 403 || body != "403 Forbidden\n" {
			t.Fatalf("GET %s: %d %q, want 403 \"403 Forbidden\\n\" (nginx: 403 on EACCES)", target, code, body)
		}
	}
	_, metrics := httpGet(t, admin+"/metrics")
	for _, want := range []string{
		fmt.Sprintf(`segorigin_file_errors_total{reason="permission_denied"} %d`, refused),
		`segorigin_file_errors_total{reason="io"} 0`,
		fmt.Sprintf(`segorigin_log_suppressed_total{kind="permission_denied"} %d`, refused-1),
		fmt.Sprintf(`segorigin_responses_by_code_total{code="403"} %d`, refused),
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	p.Stop(t)
	var lines []string
	for _, l := range strings.Split(p.Logs(), "\n") {
		if strings.Contains(l, "permission denied: answering 403") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d \"permission denied\" lines for %d refusals in one interval, want 1:\n%s", len(lines), refused, p.Logs())
	}
	for _, want := range []string{"path=/vod/secret.ts", "errno=13", "level=ERROR"} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("log line %q lacks %q", lines[0], want)
		}
	}
}
