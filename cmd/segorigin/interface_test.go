package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// runBin runs the binary with args and env (added to an environment
// without SEGORIGIN_*) to its exit, and returns its stdout, stderr and exit
// code.
func runBin(t *testing.T, bin string, env []string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(testproc.EnvWithout("SEGORIGIN_"), env...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		code = ee.ExitCode()
	default:
		t.Fatalf("%s %q: %v", bin, args, err)
	}
	return out.String(), errb.String(), code
}

// TestHelp: -h, -help and `sign -h` are requests, not errors: exit 0, the
// usage on stdout, naming both commands and the SEGORIGIN_* variables.
func TestHelp(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	for _, args := range [][]string{{"-h"}, {"-help"}, {"--help"}} {
		out, errOut, code := runBin(t, bin, nil, args...)
		if code != 0 || errOut != "" {
			t.Errorf("segorigin %s: exit %d, stderr %q; want 0 and nothing", args[0], code, errOut)
		}
		for _, want := range []string{"segorigin sign", "SEGORIGIN_<FLAG>", "-shutdown-delay", "-drain-timeout", "-listen", "SIGTERM"} {
			if !strings.Contains(out, want) {
				t.Errorf("segorigin %s: usage lacks %q:\n%s", args[0], want, out)
			}
		}
	}
	out, errOut, code := runBin(t, bin, nil, "sign", "-h")
	if code != 0 || errOut != "" {
		t.Errorf("segorigin sign -h: exit %d, stderr %q; want 0 and nothing", code, errOut)
	}
	for _, want := range []string{"segorigin sign", "SEGORIGIN_", "-key-file", "-ttl"} {
		if !strings.Contains(out, want) {
			t.Errorf("segorigin sign -h: usage lacks %q:\n%s", want, out)
		}
	}
}

// TestUsageErrors: a mistake gets one short line saying what is wrong and
// where to look, exit 2, never the whole usage.
func TestUsageErrors(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	for _, tc := range []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"unknown flag", nil, []string{"-no-such-flag"}, "flag provided but not defined: -no-such-flag (segorigin -h lists the flags)"},
		{"bad value", nil, []string{"-read-timeout", "x"}, "-read-timeout"},
		{"env duration", []string{"SEGORIGIN_READ_TIMEOUT=10"}, nil, `SEGORIGIN_READ_TIMEOUT="10": want a duration such as 10s`},
		{"env typo", []string{"SEGORIGIN_LISTNE=0.0.0.0:80"}, nil, "SEGORIGIN_LISTNE: no such flag"},
		{"no listener", nil, []string{"-listen", ""}, "no listener"},
		{"sign unknown flag", nil, []string{"sign", "-nope"}, "flag provided but not defined: -nope (segorigin sign -h lists the flags)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runBin(t, bin, tc.env, tc.args...)
			if code != 2 {
				t.Errorf("exit %d, want 2", code)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr %q, want it to contain %q", errOut, tc.want)
			}
			if n := strings.Count(errOut, "\n"); n > 2 || strings.Contains(errOut, "-cache-files") {
				t.Errorf("stderr is %d lines (the usage?), want one:\n%s", n, errOut)
			}
			if out != "" {
				t.Errorf("stdout %q, want nothing", out)
			}
		})
	}
}

// TestSignRefusesNonPositiveTTL: a token that is expired the moment it is
// minted is refused, exit 2, nothing on stdout.
func TestSignRefusesNonPositiveTTL(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	keys := writeKeys(t)
	for _, ttl := range []string{"-1h", "0"} {
		out, errOut, code := runBin(t, bin, nil, "sign", "-key-file", keys, "-scope", "/vod/", "-ttl", ttl)
		if code != 2 || out != "" || !strings.Contains(errOut, "-ttl") {
			t.Errorf("sign -ttl %s: exit %d, stdout %q, stderr %q; want 2, nothing, an error about -ttl", ttl, code, out, errOut)
		}
	}
	out, _, code := runBin(t, bin, nil, "sign", "-key-file", keys, "-scope", "/vod/", "-ttl", "1m")
	if code != 0 || !strings.HasPrefix(out, "/t/") {
		t.Errorf("sign -ttl 1m: exit %d, stdout %q; want 0 and /t/<token>/vod/", code, out)
	}
}

// TestVersion: -version prints the version, the Go release and the commit,
// and exits 0 without serving.
func TestVersion(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	out, errOut, code := runBin(t, bin, nil, "-version")
	if code != 0 || errOut != "" || !strings.HasPrefix(out, "segorigin ") || !strings.Contains(out, "("+runtime.Version()+", commit ") {
		t.Errorf("-version: exit %d, stdout %q, stderr %q; want 0 and \"segorigin VERSION (%s, commit C)\"", code, out, errOut, runtime.Version())
	}
}

// TestHTTPSOnly: an empty -listen binds no plain listener (as an empty
// -admin-listen binds no admin one); HTTPS alone serves.
func TestHTTPSOnly(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	p := start(t, bin, "-listen", "", "-tls-listen", "127.0.0.1:0", "-tls-dev", "-root", root, "-settle", "0")
	p.Addr("https")
	p.Stop(t)
	if strings.Contains(p.Logs(), "proto=http ") {
		t.Errorf("a plain HTTP listener with -listen \"\":\n%s", p.Logs())
	}
}

// writeKeys writes a key file with one key and returns its path.
func writeKeys(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte("k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
