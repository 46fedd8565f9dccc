//go:build linux

package origin

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"runtime"
	"sync"

	"github.com/valyala/fasthttp"
)

// A request that waits for its playlist to change (or for a hinted part)
// may wait three target durations, and thousands wait at once: one per
// player of every live stream. While it waits it holds none of what
// answering takes (the pooled h1Req: its RequestCtx, the header reader's
// buffer, the response parts), only h1Parked: its header as it arrived,
// the response fields resolve set, and the plan's few fields that hold
// past stepOpen. Woken, it takes a pooled h1Req again, which is filled
// from h1Parked, and runs again from stepOpen as before. The event loops
// also give the connection's read buffer back while it is parked with
// nothing buffered.

// h1Parked is a request parked for a live wait in place of its h1Req.
type h1Parked struct {
	ls *h1Server
	c  h1Conn
	// saved is the request's header block (as fasthttp renders the
	// parsed header), then the response's fields so far (appendFields).
	saved  []byte
	reqLen int32
	status int32
	kind   kind
	holds  bool
	name   string // the plan's name, owned
	start  int64  // when the request began (the access log's time), unix nanoseconds
	pol    *policy
	g      *grant // nil for the zero grant (a public path)
	client netip.Addr
	live   liveState
}

var _ liveWaiter = (*h1Parked)(nil)

// park lists r's request under the name it waits for as an h1Parked and
// gives r back to the pool; if anything changed since r took its file, or
// the server drains, it runs again at once instead (posted, after this
// call returns).
func (ls *h1Server) park(r *h1Req) {
	ls.reserveLiveP()
	pk := ls.dehydrate(r)
	c := pk.c
	if st, ok := c.State().(*h1ConnState); ok {
		st.parked = pk
	}
	if g, ok := c.(goneParker); ok {
		g.ParkUntilGone()
	} else {
		c.Park()
	}
	ls.putReq(r)
	if !ls.s.live.add(pk.name, pk, pk.live.gen, pk.live.deadline, pk.live.kind()) {
		c.Post(pk.resume)
	}
}

// goneParker is a connection that can park until its client leaves
// (loop.Conn, stream.Conn): closed at the client's FIN, so that a client
// gone from a wait of seconds is let go at once (dropParked), not when
// its wait ends.
type goneParker interface{ ParkUntilGone() }

// dropParked lets go of the request parked on c, which has closed: taken
// off liveWaits (counted client_left) and finished as a request whose
// connection closed. One already woken is left to its posted resume.
// It runs on c's thread, as park and resume do.
func (ls *h1Server) dropParked(c h1Conn) {
	st, ok := c.State().(*h1ConnState)
	if !ok || st.parked == nil {
		return
	}
	pk := st.parked
	st.parked = nil
	if ls.s.live.leave(pk.name, pk) {
		pk.resume()
	}
}

// liveP is reserveLiveP's, once a process.
var liveP sync.Once

// reserveLiveP gives the runtime one P more than the event loops the
// first time a request parks on them, unless the operator set GOMAXPROCS.
// A loop with work keeps its P while it waits and yields it only every
// few milliseconds (origin/loop), which suits a server that answers what
// its sockets ask; a parked request is answered from the watcher's
// goroutine instead, which with no P to spare waits for a loop's yield
// (about 10 ms at the median under load, where a spare P makes it under
// 2 ms).
func (ls *h1Server) reserveLiveP() {
	liveP.Do(func() {
		if ls.ln == nil || os.Getenv("GOMAXPROCS") != "" {
			return // the stream transport (a goroutine each), or the operator's choice
		}
		loops := ls.s.cfg.Loops
		if loops == 0 {
			loops = runtime.GOMAXPROCS(0)
		}
		if runtime.GOMAXPROCS(0) <= loops {
			runtime.GOMAXPROCS(loops + 1)
		}
	})
}

// dehydrate is what r's request needs to run again from stepOpen.
func (ls *h1Server) dehydrate(r *h1Req) *h1Parked {
	ctx, p := &r.ctx, &r.p
	saved := ctx.Request.Header.AppendBytes(nil)
	reqLen := len(saved)
	saved = appendFields(saved, &ctx.Response.Header)
	pk := &h1Parked{ls: ls, c: r.c, saved: bytes.Clone(saved), reqLen: int32(reqLen),
		status: int32(ctx.Response.StatusCode()), kind: p.kind, holds: p.holds, name: p.name.String(),
		start: requestTime(ctx).UnixNano(), pol: ls.s.pol.of(ctx), client: p.client, live: p.live}
	if !p.g.zero() {
		g := p.g
		g.seg = reqName{s: g.seg.String()}
		g.query.tok = bytes.Clone(g.query.tok)
		pk.g = &g
	}
	return pk
}

// wakeLive posts pk back to its connection (any goroutine; pk is listed
// nowhere else, so expired is pk's alone until the post runs).
func (pk *h1Parked) wakeLive(expired bool) {
	if expired {
		pk.live.expired = true
	}
	pk.c.Post(pk.resume)
}

// resume runs on pk's connection: the request takes a pooled h1Req again
// and runs from stepOpen (resumeLive).
func (pk *h1Parked) resume() {
	if st, ok := pk.c.State().(*h1ConnState); ok && st.parked == pk {
		st.parked = nil
	}
	r := pk.ls.getReq(pk.c)
	if err := pk.restore(r); err != nil {
		// The bytes parsed when the request arrived: this is a bug, and
		// the connection cannot be answered in order.
		pk.ls.s.log.Error("origin: a parked request could not be restored", "err", err)
		pk.c.Abort(false)
	}
	r.resumeLive()
}

// restore fills r, fresh from the pool, with pk's request.
func (pk *h1Parked) restore(r *h1Req) error {
	ctx := &r.ctx
	r.rd.Reset(pk.saved[:pk.reqLen])
	r.br.Reset(&r.rd)
	err := ctx.Request.Header.Read(r.br)
	r.rd.Reset(nil)
	r.br.Reset(nil)
	if err != nil {
		return fmt.Errorf("origin: reading a parked request's header: %w", err)
	}
	if err := setFields(&ctx.Response.Header, pk.saved[pk.reqLen:]); err != nil {
		return err
	}
	if pk.status != 0 {
		ctx.Response.SetStatusCode(int(pk.status))
	}
	ctx.SetUserValue(userPolicy, pk.pol)
	ctx.SetUserValue(userStart, pk.start)
	p := &r.p
	*p = plan{kind: pk.kind, noBlock: true, step: stepOpen, name: reqName{s: pk.name},
		client: pk.client, holds: pk.holds, live: pk.live}
	if pk.g != nil {
		p.g = *pk.g
	}
	p.rh.scan(&ctx.Request.Header)
	return nil
}

// appendFields appends h's fields to b, each as its name, a NUL, its
// value and a NUL: a field's name and value never hold a NUL (RFC 9110
// §5.5).
func appendFields(b []byte, h *fasthttp.ResponseHeader) []byte {
	for k, v := range h.All() {
		b = append(append(append(append(b, k...), 0), v...), 0)
	}
	return b
}

var errParkedFields = errors.New("origin: malformed fields of a parked response")

// setFields adds the fields appendFields wrote in b to h.
func setFields(h *fasthttp.ResponseHeader, b []byte) error {
	for len(b) > 0 {
		k, rest, ok := bytes.Cut(b, []byte{0})
		if !ok {
			return errParkedFields
		}
		v, rest, ok := bytes.Cut(rest, []byte{0})
		if !ok {
			return errParkedFields
		}
		h.AddBytesKV(k, v)
		b = rest
	}
	return nil
}

// zero reports whether g is the grant of a public path (nothing to keep).
func (g *grant) zero() bool {
	return g.until == 0 && !g.private && g.seg.s == "" && g.query.tok == nil && !g.query.link && g.query.linkExpiry.IsZero()
}
