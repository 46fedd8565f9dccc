//go:build linux

package origin

import (
	"net"
	"strings"
	"sync"
	"time"

	"segorigin/origin/conn"
	"segorigin/origin/loop"
	"segorigin/origin/stream"
)

// startTLSLoops prepares the HTTPS side of the stream transport, which
// already serves: every connection's handshake runs on its goroutine,
// and when the loops are the engine and the kernel seals and opens its
// records, or neither does (crypto/tls on the loop), the socket goes to
// event loops for the rest of its life: those
// of the first plain listener (one set of loops for both, as nginx's
// workers serve both), or loops of its own (an engine serving no
// listener, running in wg until the drain: shutdownConns) when HTTPS is
// served alone.
func (eng *engines) startTLSLoops(q *handler, wrapped []net.Listener, wg *sync.WaitGroup, errc chan<- error) {
	ss, ok := eng.conns.(*streamServer)
	if !ok {
		return
	}
	defer close(ss.ready)
	var st *conn.TLS
	for _, wl := range wrapped {
		if st = conn.Of(wl); st != nil {
			break
		}
	}
	if st == nil || !strings.HasPrefix(st.TransportPath(q.cfg.Engine == EngineLoop), "loop_") {
		return
	}
	if len(eng.loops) > 0 {
		ss.loops.Store(eng.loops[0].eng)
		return
	}
	ls, err := q.newLoopServer(nil)
	if err != nil {
		q.log.Error("HTTPS stays on the stream transport: no event loops for it", "err", err)
		return
	}
	eng.tlsLoops = ls
	ss.loops.Store(ls.eng)
	wg.Go(func() {
		if err := ls.eng.Serve(nil); err != nil {
			errc <- err
		}
	})
}

// loopsStartWait bounds how long a connection waits for the loops to
// start; past it, it stays on its goroutine (stream_ktls or
// stream_userspace).
const loopsStartWait = 5 * time.Second

// handOff runs an HTTPS connection's handshake at accept, under
// ReadTimeout as its first read would, and hands it to the HTTPS loops
// when they serve it (TransportPath: not when only the kernel's transmit
// side took it): true when it went (or was lost on the way, counted).
func (ss *streamServer) handOff(c *stream.Conn) bool {
	nc := c.Underlying()
	if !conn.IsTLS(nc) {
		return false
	}
	if d := ss.s.cfg.ReadTimeout; d > 0 {
		nc.SetReadDeadline(time.Now().Add(d))
	}
	// The stream transport serves before the loops are chosen and
	// started (microseconds): the first connections wait for them.
	<-ss.ready
	var adopt func(int, conn.Adopted) error
	if e := ss.loops.Load(); e != nil && e.WaitServing(loopsStartWait) {
		adopt = func(fd int, a conn.Adopted) error { return e.AdoptIO(fd, a) }
	}
	return conn.HandOff(nc, adopt)
}

// acceptTLS admits an HTTPS connection the stream transport handed over,
// under its listener's limits again (the hand-over gave its place back),
// with the client its PROXY header named, if any, already read.
func (ls *loopServer) acceptTLS(c *loop.Conn, lc conn.Adopted) bool {
	if !lc.Admit() {
		c.Reset()
		return false
	}
	if a := lc.Remote(); a != nil {
		c.SetRemote(a)
	}
	c.SetState(&h1ConnState{})
	return true
}
