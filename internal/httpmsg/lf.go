package httpmsg

import "bytes"

// HasBareLF reports whether a request's header section (the request line
// and field lines, as received) ends a line with LF alone, not CRLF.
//
// RFC 9112 §2.2: "Although the line terminator for the start-line and
// fields is the sequence CRLF, a recipient MAY recognize a single LF as a
// line terminator and ignore any preceding CR." It may, not must; a
// recipient that does not recognize it is reading a malformed message,
// and 400 is the answer (§2.2, "a server ... MAY respond with a 400 (Bad
// Request) response"). segorigin does not recognize it: a front end that
// reads "X: a\nContent-Length: 5" as one field of its own would disagree
// with an origin that reads two about where the message ends, and no
// client that plays media sends a bare LF. fasthttp's reader waits for
// CRLFCRLF, so without this check a bare-LF request would hang until the
// read timeout.
func HasBareLF(head []byte) bool { return BareLF(head) >= 0 }

// BareLF is the offset of the first bare LF in head, -1 without one.
func BareLF(head []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(head[off:], '\n')
		if i < 0 {
			return -1
		}
		if at := off + i; at == 0 || head[at-1] != '\r' {
			return at
		}
		off += i + 1
	}
}

// HasBareCR reports whether a request's header section, as received so
// far, holds a CR that is not followed by LF. A CR that ends head is not
// bare: its LF may still be on its way.
//
// RFC 9112 §2.2: "A recipient of such a bare CR MUST consider that
// element to be invalid or replace each bare CR with SP before processing
// the element". segorigin considers it invalid (400): fasthttp's reader
// finds no line end in it and waits for a CRLFCRLF that such a client
// may never send.
func HasBareCR(head []byte) bool { return BareCR(head) >= 0 }

// BareCR is the offset of the first bare CR in head, -1 without one.
func BareCR(head []byte) int {
	for off := 0; ; {
		i := bytes.IndexByte(head[off:], '\r')
		if i < 0 {
			return -1
		}
		at := off + i
		if at+1 < len(head) && head[at+1] != '\n' {
			return at
		}
		off = at + 1
	}
}
