package conn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"segorigin/internal/ratelog"
	"segorigin/origin/clientaddr"
)

// GateConfig configures the connection limits every listener of a server
// shares.
type GateConfig struct {
	// MaxConns bounds concurrent connections per listener (0: no
	// limit). (A bound per client address is the request path's:
	// origin's -max-conns-per-ip counts requests in progress, as nginx's
	// limit_conn does, not connections.)
	MaxConns int
	// OnFDPressure is called when accept fails for lack of descriptors
	// (EMFILE, ENFILE), before the retry: the owner of idle descriptors
	// (the file cache) gives some back. nil: nothing to give back.
	OnFDPressure func(err error)
	// Logger receives the rate-limited "connection limit reached" line
	// and unusable connections; nil uses slog.Default().
	Logger *slog.Logger
	// Trusted are the proxies in front (a CDN shield, a load balancer):
	// only they may send a PROXY header. nil trusts none.
	Trusted *clientaddr.Trusted
	// Proxy says whether connections may start with a PROXY protocol
	// header (v1 or v2); "" is ProxyOff. A header from a peer outside
	// Trusted closes the connection. The header's source is then the
	// connection's RemoteAddr.
	Proxy ProxyMode
	// Stats is where the gate counts; nil: its own (see Gate.Stats).
	Stats *ListenerStats
	// Now is the clock of the log limiter; nil uses time.Now.
	Now func() time.Time
}

// ListenerCounters count connections at accept, over every listener of a
// gate: declared once for C = atomic.Int64 (ListenerStats, what the gate
// increments) and C = int64 (a snapshot of them).
type ListenerCounters[C any] struct {
	ConnsOpen    C // TCP connections open now (HTTP and HTTPS)
	ConnsRefused C // connections closed at accept: over max-conns or max-conns-per-ip
	AcceptEMFILE C // accepts that failed for lack of descriptors (retried)

	// PROXY protocol outcomes, one per connection that could carry a header.
	ProxyAccepted  C // a trusted peer's header named the client
	ProxyLocal     C // a trusted peer's header named no client (v2 LOCAL, v1 UNKNOWN: its own health check)
	ProxyAbsent    C // a trusted peer sent none where one is optional: the peer is the client
	ProxyMissing   C // a trusted peer sent none where one is required: closed
	ProxyUntrusted C // a peer outside the trusted list sent one: closed
	ProxyMalformed C // a trusted peer's header broke the specification: closed
}

// ListenerStats are a gate's live counters.
type ListenerStats = ListenerCounters[atomic.Int64]

// Gate admits connections: it wraps each listener of a server so that it
// yields *TCP, enforces the connection limits (total and per client IP,
// per listener) by closing what is over them at once, and retries accept
// errors that may pass (out of descriptors) with a backoff.
type Gate struct {
	cfg      GateConfig
	stats    *ListenerStats
	log      *slog.Logger
	limitLog ratelog.Limiter // connection limits hit, once per interval
	proxyLog ratelog.Limiter // PROXY headers refused, once per interval
}

// NewGate validates cfg and builds a gate.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.MaxConns < 0 {
		return nil, fmt.Errorf("conn: max-conns %d: want >= 0", cfg.MaxConns)
	}
	switch cfg.Proxy {
	case "":
		cfg.Proxy = ProxyOff
	case ProxyOff:
	case ProxyOptional, ProxyRequired:
		if cfg.Trusted.Empty() {
			return nil, errors.New("conn: PROXY protocol needs trusted proxies")
		}
	default:
		return nil, fmt.Errorf("conn: PROXY protocol mode %q, want off, optional or required", cfg.Proxy)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Stats == nil {
		cfg.Stats = new(ListenerStats)
	}
	g := &Gate{cfg: cfg, stats: cfg.Stats, log: cfg.Logger}
	g.limitLog.Every, g.limitLog.Now = 10*time.Second, cfg.Now
	g.proxyLog.Every, g.proxyLog.Now = 10*time.Second, cfg.Now
	return g, nil
}

// Stats returns the gate's counters (live, not a copy).
func (g *Gate) Stats() *ListenerStats { return g.stats }

// Wrap wraps ln. Listeners that do not yield TCP connections pass them
// through unlimited.
func (g *Gate) Wrap(ln net.Listener) *Listener {
	return &Listener{Listener: ln, gate: g}
}

// Listener is one listener of a gate: it yields *TCP and counts what is
// open on it.
type Listener struct {
	net.Listener
	gate *Gate

	mu     sync.Mutex    // protects conns and closed
	conns  int           // open connections
	closed chan struct{} // closed when conns drops to 0; made by WaitClosed
}

// WaitClosed waits until no connection accepted through l (or let in by
// Admit) is open, or ctx is done.
func (l *Listener) WaitClosed(ctx context.Context) error {
	l.mu.Lock()
	if l.conns == 0 {
		l.mu.Unlock()
		return nil
	}
	if l.closed == nil {
		l.closed = make(chan struct{})
	}
	ch := l.closed
	l.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		n := l.conns
		l.mu.Unlock()
		return fmt.Errorf("conn: %d connections on %s still open: %w", n, l.Addr(), ctx.Err())
	}
}

// countedOutLocked wakes WaitClosed once the last connection is gone.
func (l *Listener) countedOutLocked() {
	if l.conns == 0 && l.closed != nil {
		close(l.closed)
		l.closed = nil
	}
}

// Accept returns the next connection within the limits.
func (l *Listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !retryableAccept(err) {
				return nil, err
			}
			// Out of descriptors (or a connection aborted before we took
			// it): fasthttp would treat this as permanent and stop
			// serving. Give idle fds back, wait, retry, as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.gate.onFDPressure(err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		peer := peerAddr(tc)
		trusted, ok := l.Admit(peer)
		if !ok {
			tc.SetLinger(0)
			tc.Close()
			continue
		}
		g := l.gate
		conn, err := newTCP(tc, l)
		if err != nil {
			l.release()
			tc.Close()
			g.log.Warn("accepted connection unusable", "err", err)
			continue
		}
		conn.trusted = trusted
		conn.proxyPending = g.cfg.Proxy != ProxyOff
		return conn, nil
	}
}

// Admit counts in a new connection from peer, or refuses it (counted and
// logged, rate-limited) when over the limit: Accept's check, for an engine
// that accepts on the raw socket itself. trusted says peer is a trusted
// proxy (which may send a PROXY header: TakeProxy).
func (l *Listener) Admit(peer netip.Addr) (trusted, ok bool) {
	g := l.gate
	trusted = g.cfg.Trusted.Contains(peer)
	if !l.admit() {
		g.stats.ConnsRefused.Add(1)
		if g.limitLog.Allow() {
			g.log.Warn("connection limit reached: closing new connection", "client", peer.String(),
				"max_conns", g.cfg.MaxConns)
		}
		return trusted, false
	}
	return trusted, true
}

// Release gives back the place of a connection Admit let in.
func (l *Listener) Release() { l.release() }

// OnFDPressure is what Accept does when accept fails for lack of
// descriptors, for an engine that accepts itself: counted, and the owner
// of idle descriptors told.
func (l *Listener) OnFDPressure(err error) { l.gate.onFDPressure(err) }

// ProxyExpected says whether connections may begin with a PROXY header.
func (l *Listener) ProxyExpected() bool { return l.gate.cfg.Proxy != ProxyOff }

// admit counts a new connection in, or refuses it when over the limit.
func (l *Listener) admit() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if max := l.gate.cfg.MaxConns; max > 0 && l.conns >= max {
		return false
	}
	l.conns++
	l.gate.stats.ConnsOpen.Add(1)
	return true
}

// release gives back the place of a closed connection.
func (l *Listener) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns--
	l.gate.stats.ConnsOpen.Add(-1)
	l.countedOutLocked()
}

// retryableAccept reports errors after which accepting may succeed later.
func retryableAccept(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// onFDPressure counts an accept that failed for lack of descriptors and
// tells the owner of idle ones.
func (g *Gate) onFDPressure(err error) {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		g.stats.AcceptEMFILE.Add(1)
		if g.cfg.OnFDPressure != nil {
			g.cfg.OnFDPressure(err)
		}
	}
}
