package origin

import (
	"context"
	"net"
	"sync/atomic"

	"segorigin/origin/loop"
	"segorigin/origin/stream"
)

// streamServer serves the listeners the event loops do not (HTTPS, and
// plain HTTP with -engine fasthttp) with the stream transport, a
// goroutine per connection, driving the same HTTP/1 layer: one set of
// protocol rules whatever carries the bytes. The listener (the gate, and
// TLS over it) has already admitted each connection and read any PROXY
// header.
type streamServer struct {
	*h1Server
	srv   *stream.Server
	loops atomic.Pointer[loop.Engine] // where HTTPS connections whose records the kernel opens go (startTLSLoops); nil: none
	ready chan struct{}               // closed once startTLSLoops has set loops, or decided on none
}

func (q *handler) newStreamServer() *streamServer {
	ss := &streamServer{h1Server: q.newH1Server(nil), ready: make(chan struct{})}
	ss.srv = stream.New(stream.Config{
		ReadBuffer:      h1FirstBuffer,
		ReadTimeout:     q.cfg.ReadTimeout,
		IdleTimeout:     q.cfg.IdleTimeout,
		WriteTimeout:    q.cfg.WriteTimeout,
		Window:          coldWindow,
		Handler:         ss,
		SendfileRefused: func() { q.stats.Transport.SendfileFallbacks.Add(1) },
		Logger:          q.log,
	})
	return ss
}

func (ss *streamServer) serve(ln net.Listener) error { return ss.srv.Serve(ln) }

// shutdown answers the requests waiting for a playlist (503), drains the connections (idle ones closed at once, the others
// after their response, all by ctx's end) and waits for the goroutines
// that were building plans.
// stopAccepting closes the stream transport's listeners (HTTPS's
// among them) before any engine begins closing idle connections (drain).
func (ss *streamServer) stopAccepting() { ss.srv.StopAccepting() }

var _ interface{ stopAccepting() } = (*streamServer)(nil) // what drain asks first

func (ss *streamServer) shutdown(ctx context.Context) error {
	ss.s.live.drain() // parked blocking reloads answer now, not at their deadline
	err := ss.srv.Shutdown(ctx)
	ss.offloads.Wait()
	return err
}

// Accept: the listener admitted the connection already.
func (ss *streamServer) Accept(c *stream.Conn) bool {
	if ss.handOff(c) {
		return false // an event loop serves it now (tlsloops_linux.go)
	}
	c.SetState(&h1ConnState{})
	return true
}

// Data hands the connection's bytes to the HTTP/1 layer.
func (ss *streamServer) Data(c *stream.Conn, in []byte, full bool) int { return ss.data(c, in, full) }

// Timeout answers a request that did not arrive in time with 408.
func (ss *streamServer) Timeout(c *stream.Conn, reading bool) { ss.timeout(c, reading) }

// Closed: the connection's Close gives its place back to the gate; a
// request still waiting for its body goes back to the pool; one parked
// (its client left: stream.Conn.ParkUntilGone) is let go.
func (ss *streamServer) Closed(c *stream.Conn) {
	ss.dropPending(c)
	ss.dropParked(c)
}

// connServer serves the listeners the loops do not.
type connServer interface {
	serve(net.Listener) error
	shutdown(context.Context) error
}

func (q *handler) newConnServer() connServer { return q.newStreamServer() }
