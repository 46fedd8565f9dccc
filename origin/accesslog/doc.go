// Package accesslog formats access log lines and owns the file they go to.
//
// It owns two formats, chosen once ([ParseFormat]):
//
//   - [Combined]: the nginx/Apache "combined" format, so that GoAccess
//     (--log-format=COMBINED), AWStats, lnav and every log shipper's
//     nginx parser read it as is:
//     client - - [02/Jan/2006:15:04:05 -0700] "METHOD TARGET PROTO" status bytes "referer" "user-agent".
//     Field bytes are escaped as nginx escapes them (", \, control bytes
//     and DEL as \xHH); valid UTF-8 is kept, invalid bytes are escaped.
//   - [JSON]: one object per line, every field always present and always
//     of one type, durations in seconds as numbers (see [Entry] for the
//     names).
//
// and [File], an append-only log file that Reopen re-opens by name, so
// that logrotate can move it away and signal the process (nginx's
// convention: USR1), written a line at a time or, with a [Buffer],
// many lines at once (nginx's buffer= and flush=).
//
// Every field a client chooses is cut to a fixed size after escaping
// (limits.go), so that a combined line stays within [MaxCombinedLine] and a
// JSON line within [MaxJSONLine] whatever the request.
//
// It never redacts (the caller hands it text already cleaned of tokens),
// never reads a request, and formats without allocating. Its one use of
// the clock is a buffered File's flush timer, armed only while lines
// wait, so an idle server's log costs nothing.
package accesslog
