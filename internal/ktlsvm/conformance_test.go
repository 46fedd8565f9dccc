package ktlsvm

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// conformanceSources hold origin's conformance suite: each test there
// that runs everyMode is run in the guest over HTTPS.
var conformanceSources = []string{"ranges_test.go", "conditional_test.go", "http_test.go", "auth_test.go"}

var everyModeTest = regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)\s*\{\s*everyMode\(t,`)

// originTestFiles are origin's test binary (static), its testdata, and
// the patterns of the conformance plan: the conformance suite over the
// HTTPS modes a kTLS kernel serves on the event loops (TLS 1.2, TLS 1.3,
// -ktls always), and the parity test.
func originTestFiles(tb testing.TB) []InitramfsFile {
	tb.Helper()
	dir := tb.TempDir()
	bin := filepath.Join(dir, "origin.test")
	cmd := exec.Command("go", "test", "-c", "-o", bin, "-ldflags=-s -w", "segorigin/origin")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("go test -c segorigin/origin: %v\n%s", err, out)
	}
	files := []InitramfsFile{{Path: OriginTestDir + "/origin.test", Src: bin, Mode: 0o755}}
	var names []string
	for _, f := range conformanceSources {
		b, err := os.ReadFile(filepath.Join("../../origin", f))
		if err != nil {
			tb.Fatal(err)
		}
		for _, m := range everyModeTest.FindAllSubmatch(b, -1) {
			names = append(names, string(m[1]))
		}
	}
	if len(names) < 10 {
		tb.Fatalf("found %d conformance tests in %v, want the suite", len(names), conformanceSources)
	}
	run := "^(" + strings.Join(names, "|") + `)$/^TLS1\.[23](-ktls-always)?$` + "\n^TestParity$\n"
	files = append(files, InitramfsFile{Path: OriginTestRun, Data: []byte(run), Mode: 0o644})
	err := filepath.WalkDir("../../origin/testdata", func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel("../../origin", p)
		if err == nil {
			files = append(files, InitramfsFile{Path: OriginTestDir + "/" + rel, Src: p, Mode: 0o644})
		}
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}
