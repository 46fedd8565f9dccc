package deploy_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// TestSystemdUnit: segorigin.service passes `systemd-analyze verify` with no
// complaint at all (verify exits 0 even for an unknown key or a bad value,
// and only says so), and is a Type=notify unit run as the package's system
// user, which reads its private files itself (no LoadCredential=: a copy
// made at start that a reload never sees, and a start that fails when a
// file is missing) and writes its log only under /var/log/segorigin.
// The binary is the one built from this tree, put where ExecStart names it
// in a copy of the unit: verify checks that ExecStart is executable.
func TestSystemdUnit(t *testing.T) {
	unit, err := os.ReadFile("segorigin.service")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nType=notify\n", "\nUser=segorigin\n", "\nReadWritePaths=-/var/log/segorigin\n", "\nUMask=0027\n", "-shutdown-delay"} {
		if !strings.Contains(string(unit), want) {
			t.Errorf("segorigin.service lacks %q", strings.TrimSpace(want))
		}
	}
	for _, unwanted := range []string{"\nLoadCredential=", "\nDynamicUser=yes", "\nReadOnlyPaths=", " -root ", " -tls-listen "} {
		if strings.Contains(string(unit), unwanted) {
			t.Errorf("segorigin.service has %q", strings.TrimSpace(unwanted))
		}
	}
	analyze := testreq.Tool(t, "systemd-analyze", "the Debian package systemd, which .ci/deps installs")
	bin := testproc.Build(t, "./cmd/segorigin")
	const execPath = "/usr/local/bin/segorigin"
	if !strings.Contains(string(unit), "ExecStart="+execPath+" ") {
		t.Fatalf("ExecStart does not run %s", execPath)
	}
	copyPath := filepath.Join(t.TempDir(), "segorigin.service")
	if err := os.WriteFile(copyPath, []byte(strings.ReplaceAll(string(unit), execPath, bin)), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, analyze, "verify", copyPath).CombinedOutput()
	if err != nil || len(out) > 0 {
		t.Errorf("systemd-analyze verify segorigin.service: %v\n%s", err, out)
	}
	// verify does not know segorigin's flags: the binary checks the
	// ExecStart= flags and the SEGORIGIN_* of Environment= itself (an
	// unknown flag or variable is an error), and -version stops it there.
	args, env := unitCommand(t, string(unit))
	// The shipped settings file where the unit names it.
	shipped, err := filepath.Abs("segorigin.env")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range args {
		if a == "/etc/default/segorigin" {
			args[i] = shipped
		}
	}
	runVersion(t, args, env)
}

// unitCommand is the unit's ExecStart= arguments after the binary, and its
// Environment= assignments with %d (the credentials directory) made a
// temporary directory.
func unitCommand(t *testing.T, unit string) (args, env []string) {
	t.Helper()
	unit = strings.ReplaceAll(unit, "\\\n", " ")
	creds := t.TempDir()
	for _, line := range strings.Split(unit, "\n") {
		if v, ok := strings.CutPrefix(line, "ExecStart="); ok {
			args = strings.Fields(v)[1:]
		}
		if v, ok := strings.CutPrefix(line, "Environment="); ok {
			env = append(env, strings.Fields(strings.ReplaceAll(v, "%d", creds))...)
		}
	}
	if args == nil {
		t.Fatal("segorigin.service has no ExecStart=")
	}
	return args, env
}
