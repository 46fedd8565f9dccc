package stream

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"segorigin/origin/wire"
)

// Handler is the HTTP/1 layer, as every transport calls it
// (wire.Handler); the calls for one connection come from its goroutine,
// one at a time.
type Handler = wire.Handler[*Conn]

// Config is a Server's configuration.
type Config struct {
	// ReadBuffer is a connection's read buffer, allocated at its first
	// byte and given back while it is idle.
	ReadBuffer int
	// ReadTimeout bounds a request from its first byte to its end (and
	// the TLS handshake); IdleTimeout the wait for a next request;
	// WriteTimeout a response. 0: none.
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// Window is the most one file write sends (and the unit Ready is
	// asked about); 0: 4 MiB.
	Window int64
	// Handler serves the connections.
	Handler Handler
	// SendfileRefused, when set, is called when a file system refuses
	// sendfile and the span goes by pread and write instead.
	SendfileRefused func()
	// Logger receives the transport's own errors; nil: slog.Default().
	Logger *slog.Logger
}

// Server serves the connections of listeners, one goroutine each.
type Server struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex // protects conns, draining's transitions and lns
	conns    map[*Conn]struct{}
	lns      []net.Listener
	draining atomic.Bool
	wg       sync.WaitGroup // the connections' goroutines
	bufs     sync.Pool      // *[]byte of cap ReadBuffer: read buffers of connections not idle
	peers    peerWatch      // the parked connections' sockets (ParkUntilGone)
}

// getBuf returns an empty read buffer.
func (s *Server) getBuf() []byte {
	if b, ok := s.bufs.Get().(*[]byte); ok {
		return (*b)[:0]
	}
	return make([]byte, 0, s.cfg.ReadBuffer)
}

// putBuf gives b back, unless Grow replaced it with a larger one.
func (s *Server) putBuf(b []byte) {
	if cap(b) == s.cfg.ReadBuffer {
		s.bufs.Put(&b)
	}
}

// New returns a Server.
func New(cfg Config) *Server {
	if cfg.Window <= 0 {
		cfg.Window = 4 << 20
	}
	if cfg.ReadBuffer <= 0 {
		cfg.ReadBuffer = 16 << 10
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Server{cfg: cfg, log: log, conns: make(map[*Conn]struct{})}
}

// Serve accepts from ln until it is closed (Shutdown closes it), serving
// each connection on a goroutine of its own, which the Server owns: it
// ends when its connection closes, and Shutdown waits for it.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.draining.Load() {
		s.mu.Unlock()
		return nil
	}
	s.lns = append(s.lns, ln)
	s.mu.Unlock()
	for {
		nc, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) || s.draining.Load() {
				return nil
			}
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			// The listener's gate backs off on descriptor pressure
			// itself; anything else ends this Serve.
			return err
		}
		c := s.track(nc)
		if c == nil {
			nc.Close()
			continue
		}
		go c.serve()
	}
}

// track registers a connection; nil once draining.
func (s *Server) track(nc net.Conn) *Conn {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.draining.Load() {
		return nil
	}
	c := &Conn{s: s, nc: nc, box: mailbox{wake: make(chan struct{}, 1)}}
	c.out = sender{nc: nc, cfg: &s.cfg, wait: func() bool { return waitResume(c) }}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return c
}

func (s *Server) untrack(c *Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// StopAccepting closes the listeners: no connection is accepted from now
// on, and the server is draining. Shutdown does it first; a caller that
// drains other engines beside this one calls it before any of them
// closes a connection, so that a client that sees its idle connection
// closed finds the listeners closed too.
func (s *Server) StopAccepting() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stopAcceptingLocked()
}

func (s *Server) stopAcceptingLocked() {
	s.draining.Store(true)
	for _, ln := range s.lns {
		ln.Close() // a second Close of a listener only fails
	}
}

// Shutdown stops accepting, closes idle connections at once and the others
// after their response in flight (the Handler sees Draining and answers
// with Connection: close), and waits for every connection's goroutine; at
// ctx's end it closes what is left and returns ctx's error.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.stopAcceptingLocked()
	for c := range s.conns {
		// A connection waiting for a request wakes now, sees the
		// drain and closes; one mid-request keeps its deadline.
		if c.idle.Load() {
			c.nc.SetReadDeadline(time.Now())
		}
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	defer s.peers.stop() // after the connections, which take themselves off it
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		for c := range s.conns {
			c.nc.Close() // its goroutine's I/O fails and it ends
		}
		s.mu.Unlock()
		<-done
		return ctx.Err()
	}
}

// ErrTruncated: a file span ended early (the file shrank while being
// sent); the connection closes rather than send fewer bytes than announced.
var ErrTruncated = wire.ErrTruncated

// errNotStream: the HTTP layer reads and writes through the transport.
var errNotStream = errors.New("stream: Conn is not read or written as a stream")
