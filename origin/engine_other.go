//go:build !linux

package origin

import (
	"context"
	"errors"
	"net"

	"segorigin/origin/conn"
)

// loopAvailable: the event-loop engine needs epoll.
const loopAvailable = false

const defaultEngine = EngineFastHTTP

type loopServer struct{}

func (s *Server) newLoopServer(*conn.Listener) (*loopServer, error) {
	return nil, errors.New("origin: the loop engine needs Linux")
}
func (ls *loopServer) serve(net.Listener) error {
	return errors.New("origin: the loop engine needs Linux")
}
func (ls *loopServer) shutdown(ctx context.Context) error { return nil }

// connServer serves the listeners the loops do not: here, fasthttp.
type connServer interface {
	serve(net.Listener) error
	shutdown(context.Context) error
}

type fastServer struct{ s *Server }

func (s *Server) newConnServer() connServer { return fastServer{s} }

func (f fastServer) serve(ln net.Listener) error        { return f.s.http.Serve(ln) }
func (f fastServer) shutdown(ctx context.Context) error { return f.s.http.ShutdownWithContext(ctx) }
