package testproc

import (
	"os"
	"strings"
)

// EnvWithout is this process's environment without the variables whose
// names start with prefix: for a command whose environment would override
// the flags a test gives it (EnvWithout("SEGORIGIN_")).
func EnvWithout(prefix string) []string {
	var out []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, prefix) {
			out = append(out, kv)
		}
	}
	return out
}

// TestPollerVar names the variable with which make test runs suites again
// on another backend of the event loops ("uring"): the in-process harness
// sets Config.Poller from it, and ServerEnv hands it to every segorigin
// process a test starts. It is outside SEGORIGIN_*, which the binary
// reads as its own settings and refuses where it has no such flag (a
// test that runs the binary another way, make deb, still works).
const TestPollerVar = "TEST_POLLER"

// ServerEnv is the environment for a segorigin process a test starts:
// this process's without SEGORIGIN_* variables (EnvWithout), which would
// override the flags the test gives, and with SEGORIGIN_POLLER where
// TestPollerVar is set, so that the binary's own suites (players, the
// shield, the soak) run on that backend too.
func ServerEnv() []string {
	env := EnvWithout("SEGORIGIN_")
	if p := os.Getenv(TestPollerVar); p != "" {
		env = append(env, "SEGORIGIN_POLLER="+p)
	}
	return env
}
