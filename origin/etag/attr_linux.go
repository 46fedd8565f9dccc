//go:build linux

package etag

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxAttr bounds the attribute value read: FormatAttr's is under 128.
const maxAttr = 256

// Load returns the tag the attribute on fd holds for v. ok false: no
// attribute, one for another version, or a file system without them.
func Load(fd int, v Version) (t Tag, ok bool, err error) {
	var buf [maxAttr]byte
	n, err := unix.Fgetxattr(fd, Attr, buf[:])
	switch {
	case errors.Is(err, unix.ENODATA), errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.ERANGE):
		return Tag{}, false, nil
	case err != nil:
		return Tag{}, false, fmt.Errorf("etag: fgetxattr %s: %w", Attr, err)
	}
	s, err := ParseAttr(buf[:n])
	if err != nil {
		return Tag{}, false, nil // not ours, or damaged: hash again and overwrite
	}
	t, ok = s.For(v)
	return t, ok, nil
}

// Store writes t for v to fd's attribute; now is the clock (Unix
// nanoseconds). ErrNoAttr (wrapped) when the file system or the
// permissions refuse it.
func Store(fd int, v Version, t Tag, now func() int64) error {
	err := unix.Fsetxattr(fd, Attr, FormatAttr(v, t, now()), 0)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.ENOTSUP), errors.Is(err, unix.EPERM), errors.Is(err, unix.EACCES), errors.Is(err, unix.EROFS):
		return fmt.Errorf("%w: %s: %w", ErrNoAttr, Attr, err)
	}
	return fmt.Errorf("etag: fsetxattr %s: %w", Attr, err)
}

// VersionOf is the Version fi (an fstat) describes.
func VersionOf(fi fs.FileInfo) Version {
	v := Version{Size: fi.Size(), ModTime: fi.ModTime().UnixNano()}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		v.Ctime = st.Ctim.Sec*1e9 + st.Ctim.Nsec
	}
	return v
}
