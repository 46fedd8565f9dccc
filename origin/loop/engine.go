//go:build linux

package loop

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/origin/wire"
)

// Config configures an Engine.
type Config struct {
	// Loops is the number of event loops (OS threads); 0 means
	// GOMAXPROCS.
	Loops int
	// ReadBuffer is the size of a pooled read buffer: the most a
	// connection buffers of a request before the Handler is told the
	// buffer is full (Conn.Grow makes room for a larger body).
	ReadBuffer int
	// ReadTimeout bounds the wait for a whole request from its first
	// byte (from accept for a new connection); IdleTimeout the wait for
	// the next request on a kept-alive connection; WriteTimeout the time
	// a response may take to leave. 0: no limit.
	ReadTimeout, IdleTimeout, WriteTimeout time.Duration
	// Window is the most one sendfile call sends (0: a whole span).
	Window int64
	// Handler serves the connections.
	Handler Handler
	// Logger receives the loops' own errors; nil uses slog.Default().
	Logger *slog.Logger
	// Stats, when set, is where the engine counts (several engines may
	// share one); nil: counters of its own.
	Stats *Stats
	// Poller is how the loops learn what is ready: PollerEpoll (also
	// ""), PollerUring (io_uring; New fails where the kernel refuses
	// it) or PollerAuto (io_uring, or epoll where it is refused, said
	// once in the log and counted in Stats.PollerFallbacks).
	Poller string
}

// The pollers Config.Poller names.
const (
	PollerEpoll = "epoll"
	PollerUring = "uring"
	PollerAuto  = "auto"
)

// Handler is what an Engine calls on a loop's thread: the HTTP/1 layer,
// as every transport calls it (wire.Handler).
type Handler = wire.Handler[*Conn]

// Engine serves one listening socket with Config.Loops event loops.
type Engine struct {
	cfg   Config
	log   *slog.Logger
	loops []*loop
	stats *Stats
	// newPoller makes each loop's poller (Config.Poller); poller names
	// it (PollerEpoll or PollerUring).
	newPoller func(*Stats) (poller, error)
	poller    string

	mu       sync.Mutex // protects serving, loops and ln
	serving  bool
	ln       *net.TCPListener
	draining atomic.Bool
	next     atomic.Uint32 // the loop the next adopted connection goes to (round robin)
	started  chan struct{} // closed once Serve has set the loops up (WaitServing)
}

// New validates cfg and builds an engine; Serve starts it.
func New(cfg Config) (*Engine, error) {
	if cfg.Handler == nil {
		return nil, errors.New("loop: no Handler")
	}
	if cfg.Loops < 0 || cfg.ReadBuffer < 0 || cfg.Window < 0 {
		return nil, fmt.Errorf("loop: loops %d, read buffer %d, window %d: want >= 0", cfg.Loops, cfg.ReadBuffer, cfg.Window)
	}
	if cfg.Loops == 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	if cfg.ReadBuffer == 0 {
		cfg.ReadBuffer = 16 << 10
	}
	if cfg.Window == 0 {
		cfg.Window = 1 << 30
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	st := cfg.Stats
	if st == nil {
		st = new(Stats)
	}
	e := &Engine{cfg: cfg, log: cfg.Logger, stats: st, started: make(chan struct{})}
	np, err := e.choosePoller(probeRing)
	if err != nil {
		return nil, err
	}
	e.newPoller = np
	e.log.Info("event loops", "loops", cfg.Loops, "poller", e.poller)
	return e, nil
}

// Poller says which poller the loops use: PollerEpoll or PollerUring
// (PollerAuto resolved).
func (e *Engine) Poller() string { return e.poller }

// Stats returns the engine's counters (live, not a copy).
func (e *Engine) Stats() *Stats { return e.stats }

// Draining reports whether Shutdown has begun: responses should say
// Connection: close.
func (e *Engine) Draining() bool { return e.draining.Load() }

// Serve runs the loops on ln until Shutdown, and returns when every loop
// has ended and every connection is closed. Shutdown closes ln. With a
// nil ln the loops serve adopted connections only (AdoptIO).
func (e *Engine) Serve(ln *net.TCPListener) error {
	e.mu.Lock()
	if e.serving {
		e.mu.Unlock()
		return errors.New("loop: Serve called twice")
	}
	e.serving = true
	e.mu.Unlock()
	lfd, err := listenerFD(ln)
	if err != nil {
		return err
	}
	loops := make([]*loop, 0, e.cfg.Loops)
	for i := 0; i < e.cfg.Loops; i++ {
		l, err := newLoop(e, lfd)
		if err != nil {
			for _, l := range loops {
				l.closeFDs()
			}
			return err
		}
		loops = append(loops, l)
	}
	// Either Shutdown sees the loops, or the loops see that it began.
	e.mu.Lock()
	e.loops, e.ln = loops, ln
	drained := e.draining.Load()
	e.mu.Unlock()
	close(e.started)
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Go(l.run)
	}
	if drained {
		e.dropListener(loops)
	}
	wg.Wait()
	// ln's descriptor is used by the loops until they end: keep ln
	// reachable (and so open) until then.
	runtime.KeepAlive(ln)
	return nil
}

// Adopt serves fd, a connected TCP socket that did not come from the
// engine's listener, on one of its loops as if accepted there
// (Handler.Accept first): a connection handed over once something else
// has spoken on it, such as a TLS handshake before the kernel takes over
// its records (as gnet's Enroll, or nginx swapping a connection's send
// and receive handlers). The engine owns fd from the call on and closes
// it, also when Adopt fails: before Serve has started the loops, once
// Shutdown has begun, or when fd is no connected socket.
func (e *Engine) Adopt(fd int) error { return e.AdoptIO(fd, nil) }

// AdoptIO is Adopt with io reading and closing the connection (nil: the
// plain socket). Handler.Accept finds io in Conn.IO.
func (e *Engine) AdoptIO(fd int, io ConnIO) error {
	e.mu.Lock()
	loops := e.loops
	e.mu.Unlock()
	fail := func(err error) error {
		unix.Close(fd)
		return fmt.Errorf("loop: adopting a connection: %w", err)
	}
	switch {
	case len(loops) == 0:
		return fail(errors.New("the engine is not serving"))
	case e.draining.Load():
		return fail(errors.New("the engine is shutting down"))
	}
	remote, err := rawGetpeername(fd)
	if err != nil {
		return fail(err)
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		return fail(err)
	}
	l := loops[e.next.Add(1)%uint32(len(loops))]
	l.post(func() {
		if l.draining { // Shutdown began since (or the loop has ended)
			unix.Close(fd)
			return
		}
		l.register(fd, remote, io)
	})
	return nil
}

// dropListener has every loop stop watching the listener, then closes it,
// so that the kernel refuses new connections at once (a listener left
// open would keep completing handshakes into its backlog).
func (e *Engine) dropListener(loops []*loop) {
	var wg sync.WaitGroup
	for _, l := range loops {
		wg.Add(1)
		l.post(func() { l.beginDrain(); wg.Done() })
	}
	wg.Wait()
	e.mu.Lock()
	ln := e.ln
	e.ln = nil
	e.mu.Unlock()
	if ln != nil {
		if err := ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			e.log.Warn("closing the listener", "err", err)
		}
	}
}

// Shutdown stops accepting, closes idle connections at once and every
// other one after its response, and returns when all are closed or ctx
// is done; then the rest are closed mid-response and ctx's error
// returned. Serve returns once the loops have ended.
func (e *Engine) Shutdown(ctx context.Context) error {
	e.draining.Store(true)
	e.mu.Lock()
	loops := e.loops
	e.mu.Unlock()
	e.dropListener(loops)
	for _, l := range loops {
		select {
		case <-l.done:
		case <-ctx.Done():
			for _, l := range loops {
				l.post(l.closeAll)
			}
			for _, l := range loops {
				<-l.done
			}
			return ctx.Err()
		}
	}
	return nil
}
