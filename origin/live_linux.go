//go:build linux

package origin

// liveWaitable: the HTTP/1 layer parks a waiting request on every
// transport (the loops and the stream transport).
const liveWaitable = true

// waitLive parks r's connection and lists its request under its playlist
// (or the hinted part it waits for), in a few hundred bytes rather than r
// (live_park_linux.go).
func (ls *h1Server) waitLive(r *h1Req) { ls.park(r) }

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
