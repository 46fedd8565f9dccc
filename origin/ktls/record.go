package ktls

// Framer follows the record framing of a TLS byte stream (RFC 8446 §5.1:
// a 5-byte header in the clear whose last two bytes are the body's
// length, then the body) as the bytes go by, so that a reader can stop at
// a record's end: Room says how far that is. The handshake reads through
// it, one record per read, so crypto/tls never holds ciphertext past the
// client's Finished: what the client sent after it stays in the socket for
// the kernel to open.
type Framer struct {
	hdr  [5]byte // the current record's header, as far as seen
	nhdr int
	left int // body bytes of the current record still to come
}

// Room returns how many bytes end the current header or body: a read of
// at most that many never crosses a record boundary.
func (f *Framer) Room() int {
	if f.left > 0 {
		return f.left
	}
	return len(f.hdr) - f.nhdr
}

// Advance takes the first bytes of p, up to Room, and returns how many it
// took and whether they completed a header (Header returns it).
func (f *Framer) Advance(p []byte) (n int, header bool) {
	if f.left > 0 {
		n = min(f.left, len(p))
		f.left -= n
		return n, false
	}
	n = copy(f.hdr[f.nhdr:], p)
	f.nhdr += n
	if f.nhdr < len(f.hdr) {
		return n, false
	}
	f.nhdr = 0
	f.left = int(f.hdr[3])<<8 | int(f.hdr[4])
	return n, true
}

// Header returns the last complete record header.
func (f *Framer) Header() [5]byte { return f.hdr }

// Boundary reports whether the stream so far ends on a record boundary.
func (f *Framer) Boundary() bool { return f.left == 0 && f.nhdr == 0 }
