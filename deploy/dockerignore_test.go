package deploy_test

import (
	"os"
	"path"
	"strings"
	"testing"
)

// TestDockerignore: deploy/Dockerfile is built with the repository root as
// its context (COPY . .), so the root's .dockerignore must keep the VCS
// history and local build outputs out of the image's build stage, and must
// not exclude what the Dockerfile copies.
func TestDockerignore(t *testing.T) {
	b, err := os.ReadFile("../.dockerignore")
	if err != nil {
		t.Fatalf("no .dockerignore at the repository root: %v", err)
	}
	var patterns []string
	for _, line := range strings.Split(string(b), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimSuffix(line, "/"))
		}
	}
	ignored := func(p string) bool {
		for _, pat := range patterns {
			for dir := p; dir != "."; dir = path.Dir(dir) { // a pattern excludes a directory's contents too
				if ok, _ := path.Match(pat, dir); ok {
					return true
				}
			}
		}
		return false
	}
	for _, p := range []string{".git/HEAD", "bin/segorigin", "playertest/node_modules/x/index.js"} {
		if !ignored(p) {
			t.Errorf(".dockerignore lets %s into the build context", p)
		}
	}
	for _, p := range []string{"go.mod", "go.sum", "cmd/segorigin/main.go", "origin/server.go", "fixtures/media/hls/ts/master.m3u8"} {
		if ignored(p) {
			t.Errorf(".dockerignore excludes %s, which the image needs", p)
		}
	}
}
