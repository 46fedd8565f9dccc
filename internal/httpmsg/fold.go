package httpmsg

import "bytes"

// HasObsFold reports whether a raw header block (the field lines after the
// request line, as received) contains an obsolete line folding: a field
// line that begins with a space or a horizontal tab. RFC 9112 §5.2: "A
// server that receives an obs-fold in a request message that is not within
// a "message/http" container MUST either reject the message by sending a
// 400 (Bad Request) ... or replace each received obs-fold with one or more
// SP octets". Replacing is what lets a front end that reads the folded line
// as a field of its own (" Content-Length: 39") disagree with the origin
// about where the message ends, so segorigin rejects.
//
// A block that begins with whitespace counts too: RFC 9112 §2.2 says such a
// line between the start-line and the first field "MUST" be rejected or
// consumed, never read as a field.
//
// It looks only at the byte after each LF (bytes.IndexByte, vectorised),
// not at every byte: every request's header block passes through it.
func HasObsFold(raw []byte) bool {
	for {
		if len(raw) > 0 && (raw[0] == ' ' || raw[0] == '\t') {
			return true
		}
		i := bytes.IndexByte(raw, '\n')
		if i < 0 {
			return false
		}
		raw = raw[i+1:]
	}
}
