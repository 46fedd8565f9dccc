package conn

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"segorigin/internal/ratelog"
)

// GateConfig configures the connection limits every listener of a server
// shares.
type GateConfig struct {
	// MaxConns bounds concurrent connections per listener (0: no limit);
	// MaxConnsPerIP bounds them per client IP.
	MaxConns      int
	MaxConnsPerIP int
	// OnFDPressure is called when accept fails for lack of descriptors
	// (EMFILE, ENFILE), before the retry: the owner of idle descriptors
	// (the file cache) gives some back. nil: nothing to give back.
	OnFDPressure func(err error)
	// Logger receives the rate-limited "connection limit reached" line
	// and unusable connections; nil uses slog.Default().
	Logger *slog.Logger
	// Stats is where the gate counts; nil: its own (see Gate.Stats).
	Stats *ListenerStats
	// Now is the clock of the log limiter; nil uses time.Now.
	Now func() time.Time
}

// ListenerStats count connections at accept, over every listener of a
// gate.
type ListenerStats struct {
	ConnsOpen    atomic.Int64 // TCP connections open now (HTTP and HTTPS)
	ConnsRefused atomic.Int64 // connections closed at accept: over max-conns or max-conns-per-ip
	AcceptEMFILE atomic.Int64 // accepts that failed for lack of descriptors (retried)
}

// Gate admits connections: it wraps each listener of a server so that it
// yields *TCP, enforces the connection limits (total and per client IP,
// per listener) by closing what is over them at once, and retries accept
// errors that may pass (out of descriptors) with a backoff.
type Gate struct {
	cfg      GateConfig
	stats    *ListenerStats
	log      *slog.Logger
	limitLog ratelog.Limiter // connection limits hit, once per interval
}

// NewGate validates cfg and builds a gate.
func NewGate(cfg GateConfig) (*Gate, error) {
	if cfg.MaxConns < 0 || cfg.MaxConnsPerIP < 0 {
		return nil, fmt.Errorf("conn: max-conns %d, max-conns-per-ip %d: want >= 0", cfg.MaxConns, cfg.MaxConnsPerIP)
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
	return g, nil
}

// Stats returns the gate's counters (live, not a copy).
func (g *Gate) Stats() *ListenerStats { return g.stats }

// Wrap wraps ln. Listeners that do not yield TCP connections pass them
// through unlimited.
func (g *Gate) Wrap(ln net.Listener) *Listener {
	return &Listener{Listener: ln, gate: g, perIP: map[string]int{}}
}

// Listener is one listener of a gate: it yields *TCP and counts what is
// open on it.
type Listener struct {
	net.Listener
	gate *Gate

	mu    sync.Mutex     // protects conns and perIP
	conns int            // open connections
	perIP map[string]int // open connections per client IP
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
		ip := ""
		if a, ok := tc.RemoteAddr().(*net.TCPAddr); ok {
			ip = a.IP.String()
		}
		g := l.gate
		if !l.admit(ip) {
			g.stats.ConnsRefused.Add(1)
			if g.limitLog.Allow() {
				g.log.Warn("connection limit reached: closing new connection", "client", ip,
					"max_conns", g.cfg.MaxConns, "max_conns_per_ip", g.cfg.MaxConnsPerIP)
			}
			tc.SetLinger(0)
			tc.Close()
			continue
		}
		conn, err := newTCP(tc, l, ip)
		if err != nil {
			l.release(ip)
			tc.Close()
			g.log.Warn("accepted connection unusable", "err", err)
			continue
		}
		return conn, nil
	}
}

// admit counts a new connection in, or refuses it when over a limit.
func (l *Listener) admit(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	cfg := &l.gate.cfg
	if cfg.MaxConns > 0 && l.conns >= cfg.MaxConns {
		return false
	}
	if cfg.MaxConnsPerIP > 0 && l.perIP[ip] >= cfg.MaxConnsPerIP {
		return false
	}
	l.conns++
	l.perIP[ip]++
	l.gate.stats.ConnsOpen.Add(1)
	return true
}

func (l *Listener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
	l.gate.stats.ConnsOpen.Add(-1)
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
