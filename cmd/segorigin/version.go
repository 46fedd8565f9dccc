package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"segorigin/origin"
)

// buildInfo names this binary from what the Go toolchain stamped into it:
// the module version (a pseudo-version from the VCS, or "(devel)"), the Go
// release, and the VCS commit ("" when built with -buildvcs=false or
// outside a repository), marked "-dirty" for uncommitted changes.
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
