package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEExamplesRunAsWritten: the servers README.md starts in the
// background are the binary (go run's child would outlive kill $!), each on
// its own ports.
func TestREADMEExamplesRunAsWritten(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]string{}
	for _, line := range strings.Split(string(readme), "\n") {
		cmd, _, _ := strings.Cut(line, "#")
		if !strings.HasSuffix(strings.TrimSpace(cmd), "&") {
			continue
		}
		if strings.Contains(cmd, "go run") {
			t.Errorf("README.md runs `go run` in the background: %q", line)
		}
		if !strings.HasPrefix(cmd, "bin/segorigin") {
			continue
		}
		listen := regexp.MustCompile(`-listen (\S+)`).FindStringSubmatch(cmd)
		addrs := []string{"127.0.0.1:8080"}
		if listen != nil {
			addrs = []string{strings.Trim(listen[1], "'")}
		}
		if m := regexp.MustCompile(`-tls-listen (\S+)`).FindStringSubmatch(cmd); m != nil {
			addrs = append(addrs, m[1])
		}
		for _, a := range addrs {
			if a == "" {
				continue
			}
			if prev, dup := ports[a]; dup {
				t.Errorf("README.md binds %s twice:\n  %s\n  %s", a, prev, line)
			}
			ports[a] = line
		}
	}
	if len(ports) < 4 {
		t.Errorf("found %d addresses in README.md's background servers, want the examples' 4 and more", len(ports))
	}
}

// TestNoDesignDocReference: the repository stands alone: no tracked file
// points at a design document kept outside it (what a user needs of it is
// in ARCHITECTURE.md).
func TestNoDesignDocReference(t *testing.T) {
	out, err := exec.Command("git", "-C", "../..", "grep", "-n", "DESIGN"+".md").CombinedOutput()
	if err == nil {
		t.Errorf("files refer to a design document the repository does not have:\n%s", out)
	} else if ee, ok := err.(*exec.ExitError); ok && ee.ExitCode() == 128 {
		t.Skipf("not a git checkout: %s", out)
	} else if !ok || ee.ExitCode() != 1 {
		t.Fatalf("git grep: %v\n%s", err, out)
	}
}

// TestDocsLinksResolve: every relative link in README.md, ARCHITECTURE.md,
// CONTRIBUTING.md, CHANGELOG.md and docs/ names a file of the repository, and every #fragment a heading
// of the page it points to (GitHub's anchors: lower case, punctuation
// dropped, spaces as '-').
func TestDocsLinksResolve(t *testing.T) {
	pages, err := filepath.Glob("../../docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	pages = append(pages, "../../README.md", "../../ARCHITECTURE.md", "../../CONTRIBUTING.md", "../../CHANGELOG.md")
	if len(pages) < 10 {
		t.Fatalf("found %d pages, want README.md, ARCHITECTURE.md and the docs/ pages", len(pages))
	}
	fence := regexp.MustCompile("(?s)```.*?```")
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range link.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			target, frag, _ := strings.Cut(m[1], "#")
			if strings.Contains(target, "://") {
				continue
			}
			path := page
			if target != "" {
				path = filepath.Join(filepath.Dir(page), target)
			}
			if _, err := os.Stat(path); err != nil {
				t.Errorf("%s links to %s, which does not exist", filepath.Base(page), m[1])
				continue
			}
			if frag != "" && strings.HasSuffix(path, ".md") && !anchors(t, path)[frag] {
				t.Errorf("%s links to %s: %s has no such heading", filepath.Base(page), m[1], filepath.Base(path))
			}
		}
	}
}

// anchors are the fragments GitHub gives the headings of a markdown file.
func anchors(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	drop := regexp.MustCompile(`[^\p{L}\p{N}_ -]`)
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := strings.CutPrefix(line, "#"); ok {
			h = strings.TrimSpace(strings.TrimLeft(h, "#"))
			out[strings.ReplaceAll(drop.ReplaceAllString(strings.ToLower(h), ""), " ", "-")] = true
		}
	}
	return out
}
