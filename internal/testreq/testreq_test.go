package testreq

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestHelperUnmet is run as a child by TestUnmetSkipsOnlyUnderShort with
// TESTREQ_HELPER set: it asks for a tool that does not exist.
func TestHelperUnmet(t *testing.T) {
	if os.Getenv("TESTREQ_HELPER") == "" {
		t.Skip("helper process of TestUnmetSkipsOnlyUnderShort")
	}
	Tool(t, "testreq-no-such-tool", "nothing installs it")
	t.Log("REACHED: Tool returned")
}

// TestUnmetSkipsOnlyUnderShort runs TestHelperUnmet in a child test
// binary with and without -short: a missing tool skips (with the reason)
// under -short, and fails without it.
func TestUnmetSkipsOnlyUnderShort(t *testing.T) {
	for _, tc := range []struct {
		name     string
		short    bool
		wantFail bool
		want     string
	}{
		{"short", true, false, "--- SKIP: TestHelperUnmet"},
		{"full", false, true, "--- FAIL: TestHelperUnmet"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := []string{"-test.run=^TestHelperUnmet$", "-test.v"}
			if tc.short {
				args = append(args, "-test.short")
			}
			cmd := exec.Command(os.Args[0], args...)
			cmd.Env = append(os.Environ(), "TESTREQ_HELPER=1")
			out, err := cmd.CombinedOutput()
			if failed := err != nil; failed != tc.wantFail {
				t.Errorf("child (short=%v): err %v, want failure %v\n%s", tc.short, err, tc.wantFail, out)
			}
			for _, want := range []string{tc.want, "testreq-no-such-tool not installed (nothing installs it)"} {
				if !strings.Contains(string(out), want) {
					t.Errorf("child (short=%v) output lacks %q:\n%s", tc.short, want, out)
				}
			}
			if strings.Contains(string(out), "REACHED") {
				t.Errorf("child (short=%v): the test went on past the missing tool:\n%s", tc.short, out)
			}
		})
	}
}

func TestToolFindsExecutable(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "testreq-tool")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir)
	if got := Tool(t, "testreq-tool", "this test"); got != p {
		t.Errorf("Tool(testreq-tool) = %q, want %q", got, p)
	}
}

func TestSlow(t *testing.T) {
	ran := false
	t.Run("child", func(t *testing.T) {
		Slow(t, "this test")
		ran = true
	})
	if ran == testing.Short() {
		t.Errorf("Slow under -short=%v: the test ran %v", testing.Short(), ran)
	}
}
