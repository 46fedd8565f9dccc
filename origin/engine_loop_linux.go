package origin

import (
	"context"
	"errors"
	"net"
	"net/netip"

	"segorigin/origin/conn"
	"segorigin/origin/loop"
)

// loopAvailable: this platform has the event-loop engine.
const loopAvailable = true

// defaultEngine serves plain HTTP unless -engine says otherwise.
const defaultEngine = EngineLoop

// loopServer serves one plain-HTTP listener with the event loops
// (origin/loop), which hand each connection's bytes to the HTTP/1 layer.
// It adds what only the loops need: the gate's admission at accept (the
// loops accept themselves) and its release at close.
type loopServer struct {
	*h1Server
	eng *loop.Engine
}

func (q *handler) newLoopServer(gl *conn.Listener) (*loopServer, error) {
	ls := &loopServer{h1Server: q.newH1Server(gl)}
	eng, err := loop.New(loop.Config{
		Loops:        q.cfg.Loops,
		ReadBuffer:   h1FirstBuffer,
		ReadTimeout:  q.cfg.ReadTimeout,
		IdleTimeout:  q.cfg.IdleTimeout,
		WriteTimeout: q.cfg.WriteTimeout,
		Window:       coldWindow,
		Handler:      ls,
		Logger:       q.log,
		Stats:        &q.stats.Loop,
		Poller:       q.cfg.Poller,
	})
	if err != nil {
		return nil, err
	}
	ls.eng = eng
	return ls, nil
}

func (ls *loopServer) serve(ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return errors.New("origin: the loop engine serves TCP listeners only")
	}
	return ls.eng.Serve(tl)
}

// shutdown answers the requests waiting for a playlist (503), drains the engine (idle connections closed at once, the others
// after their response, all by ctx's end) and waits for the goroutines
// that were building plans.
func (ls *loopServer) shutdown(ctx context.Context) error {
	ls.s.live.drain() // parked blocking reloads answer now, not at their deadline
	err := ls.eng.Shutdown(ctx)
	ls.offloads.Wait()
	return err
}

// Accept admits a connection under the gate's limits.
func (ls *loopServer) Accept(c *loop.Conn) bool {
	if lc, ok := c.IO().(conn.Adopted); ok {
		return ls.acceptTLS(c, lc) // HTTPS, handed over after its handshake (tlsloops_linux.go)
	}
	var peer netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(a.IP)
		peer = peer.Unmap()
	}
	trusted, ok := ls.ln.Admit(peer)
	if !ok {
		c.Reset()
		return false
	}
	c.SetState(&h1ConnState{trusted: trusted, proxyPending: ls.ln.ProxyExpected()})
	return true
}

// Data hands the connection's bytes to the HTTP/1 layer.
func (ls *loopServer) Data(c *loop.Conn, in []byte, full bool) int { return ls.data(c, in, full) }

// Timeout answers a request that did not arrive in time with 408.
func (ls *loopServer) Timeout(c *loop.Conn, reading bool) { ls.timeout(c, reading) }

// Closed gives the connection's place back to the gate.
func (ls *loopServer) Closed(c *loop.Conn) {
	ls.dropPending(c)
	ls.dropParked(c)
	if lc, ok := c.IO().(conn.Adopted); ok {
		lc.Release()
	} else if _, admitted := c.State().(*h1ConnState); admitted {
		ls.ln.Release()
	}
}

// AcceptError: accept ran out of descriptors.
func (ls *loopServer) AcceptError(err error) { ls.ln.OnFDPressure(err) }

// SendfileRefused: the file system refused sendfile; the loop copies.
func (ls *loopServer) SendfileRefused(*loop.Conn) {
	ls.s.stats.Transport.SendfileFallbacks.Add(1)
}
