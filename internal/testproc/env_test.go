package testproc

import (
	"slices"
	"strings"
	"testing"
)

// TestServerEnv: a server a test starts gets none of the test process's
// SEGORIGIN_* variables, but SEGORIGIN_POLLER where make test asks for
// another backend.
func TestServerEnv(t *testing.T) {
	t.Setenv("SEGORIGIN_ROOT", "/given")
	t.Setenv(TestPollerVar, "")
	if env := ServerEnv(); slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "SEGORIGIN_") }) {
		t.Errorf("without %s: SEGORIGIN_* variables in %q", TestPollerVar, env)
	}
	t.Setenv(TestPollerVar, "uring")
	var got []string
	for _, kv := range ServerEnv() {
		if strings.HasPrefix(kv, "SEGORIGIN_") {
			got = append(got, kv)
		}
	}
	if want := []string{"SEGORIGIN_POLLER=uring"}; !slices.Equal(got, want) {
		t.Errorf("with %s=uring: SEGORIGIN_* variables %q, want %q", TestPollerVar, got, want)
	}
}
