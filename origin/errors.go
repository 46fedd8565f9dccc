package origin

import (
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"strconv"
	"strings"
	"syscall"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/internal/ratelog"
	"segorigin/origin/coldread"
	"segorigin/ranges"
)

var (
	// errMessage: the request message itself is malformed (RFC 9112);
	// each reason wraps it, and all are answered 400 with a close.
	errMessage        = errors.New("origin: malformed request message")
	errFieldName      = fmt.Errorf("%w: header field name is not a token", errMessage)
	errObsFold        = fmt.Errorf("%w: header field line folded (obs-fold)", errMessage)
	errBareLF         = fmt.Errorf("%w: request line or field line ends in a bare LF", errMessage)
	errBareCR         = fmt.Errorf("%w: a CR not followed by LF in the header section", errMessage)
	errHost           = fmt.Errorf("%w: invalid Host or absolute-form authority", errMessage)
	errTransferCoding = fmt.Errorf("%w: Transfer-Encoding without chunked as its final coding", errMessage)
	errBodyTooLarge   = errors.New("origin: request body over the limit")
	errTargetTooLong  = errors.New("origin: request-target longer than the header buffer")
	// errCodingNotImplemented: a transfer coding before chunked (gzip).
	errCodingNotImplemented = errors.New("origin: transfer coding not implemented")
	errMethod               = errors.New("origin: method not allowed")
	errNotImplemented       = errors.New("origin: method not recognised")
	errVersion              = errors.New("origin: HTTP major version not supported")
	errPrecondition         = errors.New("origin: precondition failed")
)

// statusFor maps an error to the HTTP status a client gets. It is the one
// place that does so; the error's text never reaches the client.
func statusFor(err error) int {
	switch {
	case errors.Is(err, errBadPath), errors.Is(err, errPathEscapes), errors.Is(err, errMessage),
		errors.Is(err, errLiveDirective):
		return fasthttp.StatusBadRequest
	case errors.Is(err, errMethod):
		return fasthttp.StatusMethodNotAllowed
	case errors.Is(err, errNotImplemented):
		return fasthttp.StatusNotImplemented
	case errors.Is(err, errVersion):
		return fasthttp.StatusHTTPVersionNotSupported
	case errors.Is(err, errPrecondition):
		return fasthttp.StatusPreconditionFailed
	case errors.Is(err, ranges.ErrUnsatisfiable):
		return fasthttp.StatusRequestedRangeNotSatisfiable
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, cache.ErrIsDir), errors.Is(err, cache.ErrNotRegular),
		errors.Is(err, errDirPath), errors.Is(err, errHiddenPath),
		errors.Is(err, syscall.ENOTDIR), errors.Is(err, syscall.ENAMETOOLONG),
		isRootEscape(err):
		// Directories are never listed, and a symlink that leaves the root
		// is, for the client, simply not there.
		return fasthttp.StatusNotFound
	case errors.Is(err, errAccessRefused):
		return fasthttp.StatusForbidden
	case errors.Is(err, fs.ErrPermission):
		// nginx answers 403 when open(2) fails with EACCES (and logs
		// "(13: Permission denied)"): the file is there, the server may
		// not read it. Logged and counted by permissionDenied.
		return fasthttp.StatusForbidden
	case errors.Is(err, syscall.EMFILE), errors.Is(err, syscall.ENFILE), isColdBusy(err),
		errors.Is(err, errInProgress), errors.Is(err, errContentUnknown), errors.Is(err, errClientLimit),
		errors.Is(err, errLiveTimeout):
		return fasthttp.StatusServiceUnavailable
	}
	return fasthttp.StatusInternalServerError
}

// retryAfterValues is the range Retry-After is drawn from, in seconds: a
// burst of clients refused at once should not all come back at once, and
// the wait stays short (cold readers and descriptors free up in
// milliseconds to seconds).
var retryAfterValues = [...]string{"1", "2", "3"}

// retryAfter picks a Retry-After value from r, a uniformly random number.
func retryAfter(r uint64) string { return retryAfterValues[r%uint64(len(retryAfterValues))] }

// isColdBusy: the cold-read pool refused or timed out the request, or its
// open waited past the same deadline (for a turn, or for another
// request's open of the file).
func isColdBusy(err error) bool {
	return errors.Is(err, coldread.ErrBusy) || errors.Is(err, coldread.ErrDeadline) ||
		errors.Is(err, errOpenWait) || errors.Is(err, cache.ErrWaitTimeout)
}

// isRootEscape recognises os.Root's refusal of a path (a symlink, mostly)
// that resolves outside the root. os.Root does not export that error value
// (os.errPathEscapes), so its text is the only handle on it.
func isRootEscape(err error) bool {
	var pe *fs.PathError
	return errors.As(err, &pe) && strings.Contains(pe.Err.Error(), "path escapes from parent")
}

// fail answers a request with the status for err and a short body, and logs
// what an operator needs (but not on the hot 404/412/416 paths, which are
// counted instead).
func (rs *responder) fail(ctx *fasthttp.RequestCtx, err error) {
	code := statusFor(err)
	switch {
	case code == fasthttp.StatusServiceUnavailable:
		// RFC 9110 §10.2.3: Retry-After "indicate[s] how long the service
		// is expected to be unavailable to the client".
		ctx.Response.Header.Set("Retry-After", retryAfter(rand.Uint64()))
		switch {
		case errors.Is(err, errInProgress), errors.Is(err, errContentUnknown), errors.Is(err, errClientLimit),
			errors.Is(err, errLiveTimeout):
			// Counted, and logged, where they are found.
		case isColdBusy(err):
			if rs.coldLog.Allow() {
				rs.log.Warn("cold readers saturated: answering 503", "path", rs.loggable(string(ctx.Path())), "err", err)
			}
		case rs.emfileLog.Allow():
			rs.log.Error("out of file descriptors: shedding the file cache, answering 503",
				"path", rs.loggable(string(ctx.Path())), "err", err, "suppressed", rs.emfileLog.Suppressed())
		}
	case code == fasthttp.StatusNotImplemented, code == fasthttp.StatusHTTPVersionNotSupported,
		errors.Is(err, errMessage):
		// The client's doing, not the server's: counted, and logged at
		// most once per interval.
		if rs.parseErrLog.Allow() {
			rs.log.Info("request refused", "status", code, "remote", ctx.RemoteAddr().String(), "err", err,
				"suppressed", rs.parseErrLog.Suppressed())
		}
	case code >= 500:
		rs.st.FileErrors.ByReason[fileErrorReasonOf(err)].Add(1)
		rs.log.Error("request failed", "path", rs.loggable(string(ctx.Path())), "err", rs.loggable(err.Error()))
	case errors.Is(err, errLiveDirective):
		// A player asking past the live edge: routine, not logged.
	case code == fasthttp.StatusBadRequest:
		rs.st.BadPaths.Add(1)
		if rs.badPathLog.Allow() {
			rs.log.Info("bad request path", "raw", rs.loggable(string(ctx.URI().PathOriginal())), "err", err,
				"suppressed", rs.badPathLog.Suppressed())
		}
	case errors.Is(err, errAccessRefused):
		// Counted and logged by admitted, by reason.
	case code == fasthttp.StatusForbidden:
		rs.permissionDenied(ctx, err)
	default:
		if isRootEscape(err) && rs.escapeLog.Allow() {
			rs.log.Info("refused a path that leaves the root", "err", rs.loggable(err.Error()),
				"suppressed", rs.escapeLog.Suppressed())
		}
	}
	rs.setErrorHeaders(ctx, code)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.SetStatusCode(code)
	ctx.SetBodyString(strconv.Itoa(code) + " " + fasthttp.StatusMessage(code) + "\n")
}

// handleParseError answers requests fasthttp could not parse (oversized
// headers: 431; timeouts: 408; anything else: 400). fasthttp closes the
// connection after it.
func (rs *responder) handleParseError(ctx *fasthttp.RequestCtx, err error) {
	code := fasthttp.StatusBadRequest
	var small *fasthttp.ErrSmallBuffer
	var ne interface{ Timeout() bool }
	switch {
	case errors.As(err, &small):
		code = fasthttp.StatusRequestHeaderFieldsTooLarge
		rs.st.HeaderTooLarge.Add(1)
	case errors.As(err, &ne) && ne.Timeout():
		code = fasthttp.StatusRequestTimeout
	case errors.Is(err, errVersion):
		code = fasthttp.StatusHTTPVersionNotSupported
	case errors.Is(err, errBodyTooLarge), errors.Is(err, fasthttp.ErrBodyTooLarge):
		// RFC 9110 §15.5.14.
		code = fasthttp.StatusRequestEntityTooLarge
	case errors.Is(err, errTargetTooLong):
		// RFC 9112 §3: "A server that receives a request-target longer
		// than any URI it wishes to parse MUST respond with a 414 (URI
		// Too Long) status code".
		code = fasthttp.StatusRequestURITooLong
	case errors.Is(err, errCodingNotImplemented):
		code = fasthttp.StatusNotImplemented
	}
	rs.st.BadRequests.Add(1)
	rs.countResponse(code)
	if rs.parseErrLog.Allow() {
		rs.log.Info("unparseable request", "status", code, "remote", ctx.RemoteAddr().String(),
			"err", rs.loggable(err.Error()), "suppressed", rs.parseErrLog.Suppressed())
	}
	rs.setCORS(ctx, ctx.Request.Header.Peek("Origin"))
	rs.setErrorHeaders(ctx, code)
	ctx.Response.Header.SetCanonical(hdrNoSniff, valNoSniff)
	ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	ctx.SetStatusCode(code)
	ctx.SetBodyString(strconv.Itoa(code) + " " + fasthttp.StatusMessage(code) + "\n")
}

// rateLimitedLog lets one log line through per interval, so a flood of the
// same failure cannot flood the log.
type rateLimitedLog = ratelog.Limiter

// maxLoggedText bounds a logged path or error text: such text may come
// from the request, and a client must not decide how much is written.
const maxLoggedText = 256

// loggable returns text fit for a log line: tokens redacted, cut to
// maxLoggedText bytes.
func (s *Server) loggable(text string) string {
	text = s.admit.redactor().String(text) // before the cut, which could split a token
	if len(text) > maxLoggedText {
		text = text[:maxLoggedText] + "...(cut)"
	}
	return text
}
