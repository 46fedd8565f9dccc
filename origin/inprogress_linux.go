//go:build linux

package origin

import (
	"errors"

	"golang.org/x/sys/unix"
)

// writerOpen asks the kernel whether any process has the file behind fd
// (opened read-only) open for writing: a read lease (fcntl F_SETLEASE,
// F_RDLCK) is refused with EAGAIN exactly then, and released at once
// when granted. known is false where the kernel will not say: a file
// this process does not own without CAP_LEASE (EACCES), or a file system
// without leases (EINVAL: NFS, FUSE). A writer's open that comes while
// the lease is held waits for its release, microseconds later; the
// runtime ignores the SIGIO that announces it.
func writerOpen(fd int) (open, known bool) {
	_, err := unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_RDLCK)
	switch {
	case err == nil:
		// A concurrent request on the same descriptor may have released
		// the lease already: nothing is left to release then.
		unix.FcntlInt(uintptr(fd), unix.F_SETLEASE, unix.F_UNLCK)
		return false, true
	case errors.Is(err, unix.EAGAIN):
		return true, true
	}
	return false, false
}
