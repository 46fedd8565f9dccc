package origin

import (
	"strings"
	"unsafe"
)

// pathScratch is the size of a pooled path buffer; a longer decoded path
// grows into a fresh one for that request.
const pathScratch = 256

// pathBuf is the working space a request's path is decoded into, reused
// by the next request (pooled on the fasthttp engine, part of the
// connection's request on the loop engine). gen changes each time it is
// handed back, which is what ends the reqNames made over it.
type pathBuf struct {
	b   [pathScratch]byte
	gen uint32
}

// release ends every reqName made over b: b is about to serve another
// request.
func (b *pathBuf) release() { b.gen++ }

// name makes the reqName of key, the cleaned path cleanPathInto wrote
// into b.b (or, when it did not fit, into memory of its own).
func (b *pathBuf) name(key []byte) reqName {
	s := unsafe.String(unsafe.SliceData(key), len(key))
	if len(key) == 0 || unsafe.SliceData(key) != &b.b[0] {
		return reqName{s: s} // not b's memory: nothing to outlive
	}
	return reqName{s: s, buf: b, gen: b.gen}
}

// reqName is a request's file name (its cache key, or a part of it) while
// the request is being answered. The bytes are the request's path buffer,
// which the next request overwrites: the name is read without a copy (a
// request allocates nothing), so it must not outlive its request.
//
// It is not a string, so it cannot reach anything that keeps strings (the
// cache's lists, an error, a log attribute, a read-ahead prediction)
// without one of two visible calls: String, which copies, for whatever
// keeps it; view, the zero-copy string, for a call that does not keep it
// (a lookup that copies what it lists, a comparison, a synchronous log
// line). And a reqName kept past its request cannot read another
// request's path: view panics once the buffer has been handed back.
type reqName struct {
	s   string   // the name; over buf.b when buf is not nil
	buf *pathBuf // the memory s reads, nil when s owns its bytes
	gen uint32   // buf.gen when s was made
}

// view is the name without a copy, valid until the request ends; the
// callee must not keep it.
func (n reqName) view() string {
	if n.buf != nil && n.buf.gen != n.gen {
		panic("origin: a request's name used after its request ended")
	}
	return n.s
}

// String is a copy of the name that may be kept.
func (n reqName) String() string { return strings.Clone(n.view()) }

// sub is the part s of n's name (a substring of n.view()), still tied to
// n's request.
func (n reqName) sub(s string) reqName { return reqName{s: s, buf: n.buf, gen: n.gen} }

// putPath hands a request's path buffer back to the pool, ending its
// names.
func (q *handler) putPath(b *pathBuf) {
	b.release()
	q.pathPool.Put(b)
}
