package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"segorigin/origin"
)

// version and commit are what a release build (make dist) links in with
// -ldflags -X: the git describe of the tree and its commit, which the
// toolchain's own stamp lacks in a build with -buildvcs=false or from a
// git worktree. Set at link time only; empty in any other build.
var (
	version string
	commit  string
)

// buildInfo names this binary from what the Go toolchain stamped into it:
// the module version (a pseudo-version from the VCS, or "(devel)"), the Go
// release, and the VCS commit ("" when built with -buildvcs=false or
// outside a repository), marked "-dirty" for uncommitted changes; a
// release build's version and commit replace the first and the last.
func buildInfo() buildVersion {
	b := origin.BuildInfo{Version: "(devel)", GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return buildVersion(b)
	}
	if bi.Main.Version != "" {
		b.Version = bi.Main.Version
	}
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			b.Commit = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if dirty && b.Commit != "" {
		b.Commit += "-dirty"
	}
	if version != "" {
		b.Version = version
	}
	if commit != "" {
		b.Commit = commit
	}
	return buildVersion(b)
}

// buildVersion is origin.BuildInfo printed for -version.
type buildVersion origin.BuildInfo

func (b buildVersion) String() string {
	commit := b.Commit
	if commit == "" {
		commit = "unknown"
	}
	return fmt.Sprintf("segorigin %s (%s, commit %s)", b.Version, b.GoVersion, commit)
}
