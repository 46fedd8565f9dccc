//go:build !linux

package coldread

import "errors"

// Resident reports every range as resident where the kernel cannot be
// asked: the pool is then never used and reads behave as without it.
func Resident(fd int, off, n, size int64) (bool, error) { return true, nil }

func load(null, fd int, off, n int64) error {
	return errors.New("coldread: Load is implemented on Linux only")
}

func openNull() (int, error) { return -1, nil }
func closeNull(int) error    { return nil }
