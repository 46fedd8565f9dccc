//go:build !linux

package origin

import (
	"os"
	"path/filepath"
)

// realPath returns the path an open file has with every symlink in joined
// (the root joined with the request's name) resolved. Unlike Linux's
// /proc/self/fd, this resolves the name again: a link swapped between the
// open and this call is seen as it is now.
func realPath(_ *os.File, joined string) (string, error) {
	return filepath.EvalSymlinks(joined)
}
