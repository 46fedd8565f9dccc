package origin

import (
	"os"
	"path/filepath"
	"strconv"
)

// realPath returns the path an open file really has, every symlink on the
// way resolved: the kernel's own answer for the descriptor, so a link
// swapped between the open and this call cannot mislead it. joined (the
// root joined with the request's name) is the fallback where /proc is not
// mounted.
func realPath(f *os.File, joined string) (string, error) {
	if p, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(int(f.Fd()))); err == nil && filepath.IsAbs(p) {
		return p, nil
	}
	return filepath.EvalSymlinks(joined)
}
