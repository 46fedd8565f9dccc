//go:build linux

package origin

// liveWaitable: the HTTP/1 layer parks a waiting request on every
// transport (the loops and the stream transport).
const liveWaitable = true

var _ liveWaiter = (*h1Req)(nil)

// waitLive parks r's connection and lists r under its playlist (or the
// hinted part it waits for); if anything changed since r took its file,
// or the server drains, r runs again at once instead (posted, after this
// call returns).
func (ls *h1Server) waitLive(r *h1Req) {
	r.c.Park()
	if !ls.s.live.add(r.p.name.view(), r, r.p.live.gen, r.p.live.deadline, r.p.live.kind()) {
		r.c.Post(r.resumeLive)
	}
}

// wakeLive posts r back to its connection (any goroutine; r is parked and
// listed nowhere else, so expired is r's alone until the post runs).
func (r *h1Req) wakeLive(expired bool) {
	if expired {
		r.p.live.expired = true
	}
	r.c.Post(r.resumeLive)
}

// resumeLive runs on r's connection: the request runs again from stepOpen
// without blocking, as serveRequest runs it; a step that would block goes
// on a goroutine (offload), a playlist that still does not satisfy it
// parks it again, and the answer is sent as an offloaded plan's is.
func (r *h1Req) resumeLive() {
	if !r.c.Closed() {
		r.p.live.waiting, r.p.noBlock = false, true
		r.ls.s.files.advance(&r.ctx, &r.p)
		switch {
		case r.p.wouldBlock:
			r.ls.offloads.Add(1)
			go r.offload()
			return
		case r.p.live.waiting:
			r.ls.waitLive(r)
			return
		}
	}
	r.afterOffload()
}
