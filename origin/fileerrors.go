package origin

import (
	"errors"
	"io/fs"
	"syscall"

	"github.com/valyala/fasthttp"
)

// FileErrorReason is why the server could not open or read a file that a
// request named, for a reason of the server's side (not a missing file,
// not the client's path): it indexes FileErrorCounters.ByReason and names
// the segorigin_file_errors_total label.
type FileErrorReason uint8

const (
	FilePermissionDenied FileErrorReason = iota // EACCES or EPERM on the open or a directory on the way: 403, as nginx answers
	FileIO                                      // EIO: 500
	FileOther                                   // any other error answered 500
	NumFileErrorReasons                         // how many reasons there are
)

// String is the reason's metric label.
func (r FileErrorReason) String() string {
	names := [NumFileErrorReasons]string{FilePermissionDenied: "permission_denied", FileIO: "io", FileOther: "other"}
	if r < NumFileErrorReasons {
		return names[r]
	}
	return "invalid"
}

// fileErrorReasonOf is the reason for an error answered with code (403
// or a 500; the caller passes nothing else).
func fileErrorReasonOf(err error) FileErrorReason {
	switch {
	case errors.Is(err, fs.ErrPermission):
		return FilePermissionDenied
	case errors.Is(err, syscall.EIO):
		return FileIO
	}
	return FileOther
}

// FileErrorCounters count requests answered 403 or 500 because a file
// could not be opened or read, by FileErrorReason.
type FileErrorCounters[C any] struct {
	ByReason [NumFileErrorReasons]C
}

// permissionDenied counts and logs a request whose file the server may
// not open (EACCES, EPERM): nginx answers it 403 and logs "(13:
// Permission denied)"; so does this, at most once per interval (a
// directory made unreadable refuses every request below it), with the
// request path redacted as every other line's.
func (rs *responder) permissionDenied(ctx *fasthttp.RequestCtx, err error) {
	rs.st.FileErrors.ByReason[FilePermissionDenied].Add(1)
	if !rs.permLog.Allow() {
		return
	}
	var errno syscall.Errno
	errors.As(err, &errno)
	rs.log.Error("permission denied: answering 403", "path", rs.loggable(string(ctx.Path())),
		"err", rs.loggable(err.Error()), "errno", int(errno), "suppressed", rs.permLog.Suppressed())
}

// fileErrorMetrics declares the metric of FileErrorCounters.
func fileErrorMetrics(t *table, st *FileErrorCounters[int64]) {
	m := t.counter("file_errors_total", "Requests whose file the server could not open or read, by reason: permission_denied (answered 403, as nginx does), io (EIO, 500), other (500).", "reason")
	t.each(m, st.ByReason[:], func(r int) string { return FileErrorReason(r).String() })
}
