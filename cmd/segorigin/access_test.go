package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// TestAccessFromEnvironment: SEGORIGIN_ACCESS is -access, and
// SEGORIGIN_ACCESS_FILE reads the file into it.
func TestAccessFromEnvironment(t *testing.T) {
	o, err := parseFlags(nil, io.Discard, []string{"SEGORIGIN_ACCESS=allow 10.0.0.0/8; deny all"})
	if err != nil || o.cfg.Access != "allow 10.0.0.0/8; deny all" {
		t.Fatalf("SEGORIGIN_ACCESS: cfg.Access %q, err %v; want the statements", o.cfg.Access, err)
	}
	file := filepath.Join(t.TempDir(), "access.conf")
	os.WriteFile(file, []byte("deny all;\n"), 0o644)
	o, err = parseFlags(nil, io.Discard, []string{"SEGORIGIN_ACCESS_FILE=" + file})
	if err != nil || o.cfg.Access != "deny all;\n" {
		t.Fatalf("SEGORIGIN_ACCESS_FILE: cfg.Access %q, err %v; want the file's statements", o.cfg.Access, err)
	}
}

// TestSIGHUPReloadsAccessFile: as nginx -s reload re-reads allow and deny,
// SIGHUP re-reads -access-file, on a connection opened before; a file
// that does not parse keeps the rules in force.
func TestSIGHUPReloadsAccessFile(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "a.m3u8"), []byte("#EXTM3U\n"), 0o644)
	file := filepath.Join(t.TempDir(), "access.conf")
	write := func(s string) {
		if err := os.WriteFile(file, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# only the shield\nallow 127.0.0.2;\ndeny all;\n")
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-access-file", file)
	get := keepAliveGetter(t, p.Addr("http"), "/a.m3u8")
	if code := get(); code != 403 {
		t.Fatalf("from 127.0.0.1 under allow 127.0.0.2; deny all: %d, want 403", code)
	}
	hup := func(logLine string) {
		t.Helper()
		syscall.Kill(p.PID(), syscall.SIGHUP)
		deadline := time.Now().Add(10 * time.Second)
		for strings.Count(p.Logs(), logLine) == 0 {
			if time.Now().After(deadline) {
				t.Fatalf("no %q 10s after SIGHUP:\n%s", logLine, p.Logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	write("allow 127.0.0.0/8;\ndeny all;\n")
	hup("SIGHUP: settings reloaded")
	if code := get(); code != 200 {
		t.Fatalf("after the reload to allow 127.0.0.0/8: %d, want 200", code)
	}
	write("allow 127.0.0.0/8;\ndeny everyone;\n")
	hup("SIGHUP: settings not reloaded")
	if code := get(); code != 200 {
		t.Fatalf("after a reload of a bad file: %d, want 200 (the rules in force)", code)
	}
	if !strings.Contains(p.Logs(), `line 2: deny: invalid parameter \"everyone\"`) {
		t.Errorf("the failed reload does not name the line:\n%s", p.Logs())
	}
	p.Stop(t)
}
