package testproc

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHelperServer is not a test: run by the tests below with
// TESTPROC_HELPER set, it logs listening lines as segorigin does, the admin
// one a little later, and exits 0 on SIGTERM.
func TestHelperServer(t *testing.T) {
	if os.Getenv("TESTPROC_HELPER") == "" {
		t.Skip("helper process")
	}
	term := make(chan os.Signal, 1)
	signal.Notify(term, syscall.SIGTERM)
	pid := os.Getpid()
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "SEGORIGIN_") {
			fmt.Fprintf(os.Stderr, "env %s\n", kv)
		}
	}
	fmt.Fprintf(os.Stderr, "time=x level=INFO msg=listening proto=http addr=127.0.0.1:1 root=/r pid=%d\n", pid)
	time.Sleep(100 * time.Millisecond)
	fmt.Fprintf(os.Stderr, "time=x level=INFO msg=listening proto=admin addr=127.0.0.1:2 pid=%d\n", pid)
	<-term
	fmt.Fprint(os.Stderr, "time=x level=INFO msg=stopped")
	os.Exit(0)
}

func helper(argv ...string) *exec.Cmd {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "TESTPROC_HELPER=1")
	return cmd
}

func TestStartStop(t *testing.T) {
	p := Start(t, helper(os.Args[0], "-test.run=^TestHelperServer$"))
	if got := p.Addr("http"); got != "127.0.0.1:1" {
		t.Errorf("Addr(http) = %q", got)
	}
	if got := p.Addr("admin"); got != "127.0.0.1:2" {
		t.Errorf("Addr(admin) = %q", got)
	}
	if p.PID() != p.cmd.Process.Pid {
		t.Errorf("PID() = %d, want the child's %d", p.PID(), p.cmd.Process.Pid)
	}
	p.Stop(t)
	if !strings.HasSuffix(p.Logs(), "msg=stopped\n") {
		t.Errorf("the unended last line is not in the log:\n%s", p.Logs())
	}
}

// TestEnvDefault: a cmd without Env runs without this process's
// SEGORIGIN_* variables; one with Env keeps exactly what it was given.
func TestEnvDefault(t *testing.T) {
	t.Setenv("SEGORIGIN_MAX_RANGES", "3")
	t.Setenv("TESTPROC_HELPER", "1")
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperServer$")
	p := Start(t, cmd)
	p.Stop(t)
	if strings.Contains(p.Logs(), "env SEGORIGIN_") {
		t.Errorf("a cmd with nil Env saw SEGORIGIN_* variables:\n%s", p.Logs())
	}
	cmd = helper(os.Args[0], "-test.run=^TestHelperServer$")
	cmd.Env = append(cmd.Env, "SEGORIGIN_ROOT=/given")
	p = Start(t, cmd)
	p.Stop(t)
	if logs := p.Logs(); !strings.Contains(logs, "env SEGORIGIN_ROOT=/given\n") {
		t.Errorf("a cmd with Env lost the SEGORIGIN_ROOT it was given:\n%s", logs)
	}
}

// TestWrapperPID: under a shell that forks the server, PID is the
// server's and Stop signals it, not the shell.
func TestWrapperPID(t *testing.T) {
	p := Start(t, helper("sh", "-c", os.Args[0]+" -test.run=^TestHelperServer$; echo sh-done >&2"), Timeout(10*time.Second))
	if p.PID() == p.cmd.Process.Pid {
		t.Fatalf("PID() = %d, the shell's", p.PID())
	}
	p.Stop(t)
	if !strings.Contains(p.Logs(), "sh-done") {
		t.Errorf("the shell did not go on after the server exited:\n%s", p.Logs())
	}
}

// TestKill: a killed process exits non-zero, and Stop then passes.
func TestKill(t *testing.T) {
	p := Start(t, helper(os.Args[0], "-test.run=^TestHelperServer$"))
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if p.Err() == nil {
		t.Errorf("Err() = nil after SIGKILL")
	}
	p.Stop(t)
}

// TestBuild: two Builds of one package give two working binaries.
func TestBuild(t *testing.T) {
	a, b := Build(t, "./cmd/segorigin"), Build(t, "./cmd/segorigin")
	if a == b {
		t.Fatalf("one path for two Builds: %s", a)
	}
	for _, bin := range []string{a, b} {
		out, err := exec.Command(bin, "-h").CombinedOutput()
		if !strings.Contains(string(out), "-listen") {
			t.Errorf("%s -h: %v\n%s", bin, err, out)
		}
	}
}
