package testreq

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// Tool returns the path of the executable name (looked up in PATH, then,
// as root's PATH has them, /usr/sbin and /sbin). When it is missing the
// test skips under -short and fails otherwise; pkg names what installs it
// ("the Debian package nginx, which .ci/deps installs").
func Tool(t testing.TB, name, pkg string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin/", "/sbin/"} {
		if st, err := os.Stat(dir + name); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return dir + name
		}
	}
	unmet(t, fmt.Sprintf("%s not installed (%s)", name, pkg))
	return ""
}

// File requires the file at path (a browser, a module, a package's data):
// missing, the test skips under -short and fails otherwise.
func File(t testing.TB, path, pkg string) {
	t.Helper()
	if _, err := os.Stat(path); err != nil {
		unmet(t, fmt.Sprintf("%s: %v (%s)", path, err, pkg))
	}
}

// Root requires uid 0 (network namespaces, mounts): as another user the
// test skips under -short and fails otherwise; why says what root is for.
func Root(t testing.TB, why string) {
	t.Helper()
	if os.Geteuid() != 0 {
		unmet(t, fmt.Sprintf("needs root (%s); running as uid %d", why, os.Geteuid()))
	}
}

// Slow skips the test under -short, saying why (how long it takes, or
// what of the machine it uses); without -short it does nothing.
func Slow(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why)
	}
}

// Unmet is for a need the other functions do not cover: the test skips
// with why under -short and fails with it otherwise.
func Unmet(t testing.TB, why string) {
	t.Helper()
	unmet(t, why)
}

func unmet(t testing.TB, why string) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: " + why)
	}
	t.Fatal(why + "; `make test` installs what the suite needs (.ci/deps), and fails rather than skip")
}
