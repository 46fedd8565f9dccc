//go:build linux

package coldread

import (
	"errors"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cachestatRange and cachestatResult are struct cachestat_range and struct
// cachestat of include/uapi/linux/mman.h (Linux 6.5).
type cachestatRange struct {
	off, len uint64
}

type cachestatResult struct {
	cache, dirty, writeback, evicted, recentlyEvicted uint64
}

// Resident reports whether every page of [off, off+n) of the open file fd
// is in the page cache, so that reading or sendfile of it does not wait for
// storage. size is the file's size: pages past it do not exist and are not
// asked for. It never blocks on storage.
//
// Why cachestat(2): measured here on a 2 MiB range (kernel 6.18), it costs
// 0.2-0.35 µs and answers for every page; preadv2(RWF_NOWAIT) costs 0.46 µs
// and answers for one page only; mmap+mincore+munmap costs 17 µs. Kernels
// before 6.5 answer ENOSYS and get the preadv2 probe of the first and last
// byte.
func Resident(fd int, off, n, size int64) (bool, error) {
	if off >= size || n <= 0 {
		return true, nil
	}
	n = min(n, size-off)
	r := cachestatRange{off: uint64(off), len: uint64(n)}
	var cs cachestatResult
	// RawSyscall: cachestat walks the page cache under RCU and never
	// sleeps on I/O, so it need not tell the scheduler it may block.
	_, _, e := unix.RawSyscall6(unix.SYS_CACHESTAT, uintptr(fd),
		uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&cs)), 0, 0, 0)
	switch e {
	case 0:
		ps := int64(unix.Getpagesize())
		pages := (off+n-1)/ps - off/ps + 1
		return int64(cs.cache) >= pages, nil
	case unix.ENOSYS, unix.EPERM:
		// EPERM: seccomp filters that predate cachestat refuse it.
		return residentNoWait(fd, off, n)
	}
	return false, fmt.Errorf("coldread: cachestat: %w", e)
}

// residentNoWait probes the first and last byte of the range with
// preadv2(RWF_NOWAIT), which fails with EAGAIN instead of waiting for
// storage. A file system without RWF_NOWAIT (EOPNOTSUPP) counts as cold:
// the pool then reads for it, which is never wrong, only slower.
func residentNoWait(fd int, off, n int64) (bool, error) {
	var b [1]byte
	for _, at := range [2]int64{off, off + n - 1} {
		_, err := unix.Preadv2(fd, [][]byte{b[:]}, at, unix.RWF_NOWAIT)
		switch {
		case err == nil:
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.EINVAL):
			return false, nil
		default:
			return false, fmt.Errorf("coldread: preadv2: %w", err)
		}
	}
	return true, nil
}

// load makes [off, off+n) of fd resident: afterwards the range is in the
// page cache (until the kernel evicts it). It blocks on storage: a pool
// reader calls it (Pool.Load). Reading past the end of the file stops
// quietly.
//
// The bytes never reach userspace: sendfile(2) to null, /dev/null opened
// for writing, reads them into the page cache and discards them in the
// kernel, with no buffer and no copy. Without null (-1), or from a file
// the kernel cannot sendfile from (EINVAL), it reads with pread into a
// buffer of its own.
func load(null, fd int, off, n int64) error {
	if null < 0 {
		return loadByRead(fd, off, n)
	}
	for n > 0 {
		k, err := unix.Sendfile(null, fd, &off, int(min(n, 1<<30)))
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EINVAL || err == unix.ENOSYS:
			return loadByRead(fd, off, n)
		case err != nil:
			return fmt.Errorf("coldread: sendfile at %d: %w", off, err)
		case k == 0:
			return nil // end of file: nothing left to make resident
		}
		n -= int64(k) // sendfile moved off on
	}
	return nil
}

// openNull opens /dev/null for load's sendfile: -1, with the error, where
// it cannot be opened (a chroot without it); load then reads instead.
func openNull() (int, error) {
	fd, err := unix.Open("/dev/null", unix.O_WRONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("coldread: open /dev/null: %w", err)
	}
	return fd, nil
}

func closeNull(fd int) error {
	if fd < 0 {
		return nil
	}
	return unix.Close(fd)
}

// loadByRead is load by pread into a discard buffer, for a file the
// kernel cannot sendfile from.
func loadByRead(fd int, off, n int64) error {
	buf := make([]byte, min(n, 64<<10))
	for n > 0 {
		k, err := unix.Pread(fd, buf[:min(int64(len(buf)), n)], off)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return fmt.Errorf("coldread: pread at %d: %w", off, err)
		case k == 0:
			return nil
		}
		off += int64(k)
		n -= int64(k)
	}
	return nil
}
