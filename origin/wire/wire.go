package wire

import "errors"

// Response is a response to send: memory parts and file spans, in order.
// The HTTP/1 layer owns it (and what its parts point to) until Done.
type Response struct {
	Parts []Part
	// Close closes the connection once the response is sent.
	Close bool
	// Ready, when set, is asked before each window of a file span (at
	// most the transport's window, from off): it returns how much of it
	// may be sent now without waiting for storage. ok false means "not
	// yet": the layer resumes the connection once it may be asked again.
	Ready func(p *Part, off, n int64) (send int64, ok bool)
	// Resident, set by Ready, says the window it just allowed was found
	// in the page cache, every page of it, by a check made for this
	// response (the first window's before the response was sent). The
	// event loop then sends it without asking again, but only in the
	// wake-up the response began in: a claim never outlives a wait. It
	// clears Resident after each Ready; a transport that does not check
	// residency ignores it.
	Resident bool
	// More, when set, is asked once every part is sent, for a response
	// whose length is not known when it starts (a file still being
	// written, sent chunked): more true, it has replaced Parts with the
	// next ones, sent next; more false, the response is complete. ok
	// false means "not yet", as Ready's: the layer resumes the connection
	// once it may be asked again. Ask it through Next.
	More func(r *Response) (more, ok bool)
	// NoSendfile sends file spans by pread and write (-disable-sendfile).
	NoSendfile bool
	// Rate, when more than 0, paces the response to Rate bytes a second
	// once its first RateAfter bytes are sent (nginx's limit_rate and
	// limit_rate_after; see Allowance): file spans leave no faster than
	// that; memory parts (a header, a body from memory) leave whole, and
	// their bytes count.
	Rate, RateAfter int64
	// Done is called once, on the connection's thread of control, when
	// the response has been handed to the kernel (err nil) or has failed
	// (err set; the connection then closes). sent counts the bytes sent.
	Done func(sent int64, err error)

	// Set by the transport, for Done to read: how file spans went.
	Copied    bool // by pread and write (sendfile refused, off, or a userspace TLS connection)
	KernelTLS bool // by sendfile on a socket whose records the kernel seals (kTLS)

	// Cursor is the transport's place in Parts while it sends in pieces.
	Cursor Cursor
}

// Cursor is how far a transport has sent a Response.
type Cursor struct {
	Part       int   // the part being sent
	Off        int64 // how much of it is sent
	ReadyUntil int64 // how far into the part Ready has allowed sending
	Sent       int64 // bytes sent in all
	Started    bool  // the write timeout runs
	Began      int64 // when sending began (Unix ns): where pacing counts from
}

// Next asks More, if set, for the parts after those sent (see More), and
// puts the cursor at the first of them.
func (r *Response) Next() (more, ok bool) {
	if r.More == nil {
		return false, true
	}
	if more, ok = r.More(r); more {
		r.Cursor.Part, r.Cursor.Off, r.Cursor.ReadyUntil = 0, 0, 0
	}
	return more, ok
}

// Part is a span of memory (Mem) or, when Mem is nil, Len bytes of the
// file Fd from Off.
type Part struct {
	Mem []byte
	Fd  int
	Off int64
	Len int64
}

// Size is the part's length in bytes.
func (p *Part) Size() int64 {
	if p.Mem != nil {
		return int64(len(p.Mem))
	}
	return p.Len
}

// Reset clears r for reuse, keeping its Parts capacity.
func (r *Response) Reset() {
	*r = Response{Parts: r.Parts[:0]}
}

// Total is the number of bytes r sends.
func (r *Response) Total() int64 {
	var n int64
	for i := range r.Parts {
		n += r.Parts[i].Size()
	}
	return n
}

// ErrTruncated: a file span ended early (the file shrank while it was
// being sent); the connection closes rather than send fewer bytes than
// announced.
var ErrTruncated = errors.New("wire: file shorter than the span announced")

// Handler is the HTTP/1 layer as a transport calls it, for its connection
// type C. The calls for one connection never overlap.
type Handler[C any] interface {
	// Accept is called for a new connection; false closes it at once.
	Accept(c C) bool
	// Data is called when c has unread bytes in (at least one), no
	// response in flight and is not parked. It returns how many bytes of
	// in it consumed; 0 means in holds no whole request yet, and the
	// transport reads more (full says in is at its capacity: the Handler
	// must answer, Grow, or the connection closes). A Handler that starts
	// a response calls c.Send, now or later after c.Park.
	Data(c C, in []byte, full bool) int
	// Timeout is called when c waited too long for a request (reading
	// says the request had begun). The connection closes after it; the
	// Handler may Send a last response first.
	Timeout(c C, reading bool)
	// Closed is called once when c is closed.
	Closed(c C)
}
