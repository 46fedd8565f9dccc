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
