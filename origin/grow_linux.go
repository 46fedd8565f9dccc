//go:build linux

package origin

import (
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/origin/wire"
)

// growStream is an h1Req's stream of a growing file (grow.go): the
// response's More, which frames each window of new bytes as a chunk and
// parks the connection when there are none yet.
type growStream struct {
	r       *h1Req
	off     int64         // file bytes sent: the next chunk starts here
	grew    time.Time     // when the file last grew (or the stream began)
	stall   time.Duration // how long it may not grow
	ended   bool          // the last chunk is in the response's parts
	outcome growOutcome   // how it ended, once it has
	line    [20]byte      // the chunk-size line
	// state: growIdle, growListed (in liveWaits: a wake is to come), or
	// growOrphan (listed, and its connection closed: the wake gives r
	// back to the pool).
	state atomic.Int32
	more  func(*wire.Response) (bool, bool)
}

const (
	growIdle int32 = iota
	growListed
	growOrphan
)

var (
	crlf      = []byte("\r\n")
	lastChunk = []byte("0\r\n\r\n")
)

// startGrowing sends the header of r's stream; its chunks follow as the
// file grows (next).
func (r *h1Req) startGrowing() {
	s, resp, g := r.ls.s, &r.resp, &r.grow
	hdr := &r.ctx.Response.Header
	hdr.SetContentLength(-1) // Transfer-Encoding: chunked
	r.head = hdr.AppendBytes(r.head[:0])
	r.hdrLen = len(r.head)
	resp.Parts = append(resp.Parts, wire.Part{Mem: r.head})
	resp.NoSendfile = !sendfileOn(s)
	if g.more == nil {
		g.r, g.more = r, g.next
	}
	resp.More = g.more
	g.off, g.grew, g.stall, g.ended, g.outcome = 0, time.Now(), r.p.growStall, false, growAborted
	r.via = "sendfile"
	s.stats.Grow.Streaming.Add(1)
	r.c.Send(resp)
}

// next is the response's More, on r's connection: the bytes written since
// the last chunk as a chunk, the last chunk once the writer has closed
// the file, or not yet (parked until the file changes or growPoll
// passes). A stream that stalls too long, or that a drain ends, closes
// its connection without the last chunk.
func (g *growStream) next(resp *wire.Response) (more, ok bool) {
	r := g.r
	lw := r.ls.s.live
	if g.ended {
		g.outcome = growComplete
		return false, true
	}
	if lw.isDraining() {
		return g.fail(growDrained)
	}
	gen := lw.changes.Load() // before looking: see liveWaits.add
	fd := r.p.h.Fd()
	open, known := writerOpen(fd) // before the size: a close after it is seen next time
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil || st.Size < g.off {
		return g.fail(growAborted) // gone wrong, or shrunk: the bytes sent are not its
	}
	now := time.Now()
	switch {
	case st.Size > g.off:
		n := st.Size - g.off
		line := append(strconv.AppendInt(g.line[:0], n, 16), crlf...)
		resp.Parts = append(resp.Parts[:0], wire.Part{Mem: line}, wire.Part{Fd: fd, Off: g.off, Len: n}, wire.Part{Mem: crlf})
		g.off, g.grew = st.Size, now
		return true, true
	case known && !open:
		resp.Parts = append(resp.Parts[:0], wire.Part{Mem: lastChunk})
		g.ended = true
		return true, true
	case peerGone(r.c): // live_peer_linux.go
		return g.fail(growAborted)
	case now.Sub(g.grew) >= g.stall:
		return g.fail(growTimedOut)
	}
	c := r.c
	g.state.Store(growListed)
	if !lw.add(r.p.h.Name, g, gen, now.Add(growPoll), liveGrow) {
		g.state.Store(growIdle)
		c.Post(c.Continue) // changed meanwhile: look again
	}
	return false, false
}

// fail ends the stream without its last chunk: its connection closes.
func (g *growStream) fail(o growOutcome) (more, ok bool) {
	g.outcome = o
	c := g.r.c
	c.Post(func() { c.Abort(false) })
	return false, false
}

// wakeLive is liveWaits' word that the file may have grown (or growPoll
// passed, or the server drains): any goroutine.
func (g *growStream) wakeLive(bool) {
	c := g.r.c // stable while listed: r is not given back before the wake
	switch {
	case g.state.CompareAndSwap(growListed, growIdle):
		c.Post(c.Continue)
	case g.state.CompareAndSwap(growOrphan, growIdle):
		g.r.ls.putReq(g.r)
	}
}

// endGrowing counts the end of r's stream, when r streamed one; false
// when r is still listed in liveWaits, which gives it back to the pool
// at its wake rather than now.
func (r *h1Req) endGrowing() bool {
	if !r.p.grow {
		return true
	}
	g := &r.grow
	g.outcome.count(&r.ls.s.stats.Grow)
	g.outcome = growAborted
	return !g.state.CompareAndSwap(growListed, growOrphan)
}
