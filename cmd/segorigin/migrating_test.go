package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestMigrationRowsTested: every row of docs/migrating-from-nginx.md's
// directive table names, in its last column, the tests that back it, and
// each is a test function of the repository.
func TestMigrationRowsTested(t *testing.T) {
	doc, err := os.ReadFile("../../docs/migrating-from-nginx.md")
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]bool{}
	decl := regexp.MustCompile(`(?m)^func (Test\w+)\(t \*testing\.T\)`)
	err = filepath.WalkDir("../..", func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && path != "../.." && (strings.HasPrefix(d.Name(), ".") || d.Name() == "node_modules"):
			return filepath.SkipDir
		case d.IsDir() || !strings.HasSuffix(path, "_test.go"):
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range decl.FindAllSubmatch(b, -1) {
			tests[string(m[1])] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(doc), "\n")
	start := -1
	for i, l := range lines {
		if l == "| nginx | segorigin | notes | test |" {
			start = i + 2
		}
	}
	if start < 0 {
		t.Fatal("docs/migrating-from-nginx.md: no table headed | nginx | segorigin | notes | test |")
	}
	rows := 0
	for _, l := range lines[start:] {
		if !strings.HasPrefix(l, "|") {
			break
		}
		rows++
		cells := strings.Split(strings.TrimSuffix(l, "|"), "|")
		names := regexp.MustCompile("`(Test\\w+)`").FindAllStringSubmatch(cells[len(cells)-1], -1)
		if len(names) == 0 {
			t.Errorf("row %q names no test", trunc(l))
		}
		for _, n := range names {
			if !tests[n[1]] {
				t.Errorf("row %q names %s, which no _test.go declares", trunc(l), n[1])
			}
		}
	}
	if rows < 50 {
		t.Errorf("%d rows, want the 50 and more of the table", rows)
	}
}

func trunc(s string) string {
	if len(s) > 60 {
		return s[:60] + "..."
	}
	return s
}
