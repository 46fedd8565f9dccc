package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestEveryFuzzTargetInMakefile: each fuzz target in the repository is
// run by `make fuzz` (and so by CI) in its own package, so none rots
// unrun.
func TestEveryFuzzTargetInMakefile(t *testing.T) {
	const root = "../.."
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	target := regexp.MustCompile(`(?m)^func (Fuzz\w+)\(`)
	found := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules" || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		pkg, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		for _, m := range target.FindAllSubmatch(src, -1) {
			found++
			want := "-fuzz='^" + string(m[1]) + "$$' "
			line := ""
			for _, l := range strings.Split(string(mk), "\n") {
				if strings.Contains(l, want) && strings.HasSuffix(strings.TrimSpace(l), " ./"+filepath.ToSlash(pkg)) {
					line = l
				}
			}
			if line == "" {
				t.Errorf("%s (%s) is not run by the Makefile's fuzz rule", m[1], path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no fuzz targets found: the walk is broken")
	}
}
