package origin

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"segorigin/cache"
	"segorigin/origin/conn"
	"segorigin/watcher"
)

// Server is a segorigin origin: one fasthttp server over one media root,
// with its file cache and, when enabled, the watcher that invalidates it.
type Server struct {
	cfg   Config
	log   *slog.Logger
	cache *cache.Cache
	watch *watcher.Watcher // nil when cfg.Watch is false
	cold  *coldPath        // nil when cfg.ColdReaders is 0
	ra    *readAhead       // nil when read-ahead is off
	root  *mediaRoot       // the directory served, opens under it, its checks
	resp  *responder       // header fields by configuration and status, error answers
	pol   policies         // the request policy in force: what Reload changes (policy.go)
	admit *admission       // access rules, tokens, client addresses and limits
	gate  *conn.Gate       // connection limits of every listener
	tls   *conn.TLS        // nil without a TLS certificate
	stats counters

	bufPool sync.Pool // *[]byte copy buffers of the userspace body path

	fasthttpLog *fasthttpLogger // fasthttp's own lines (they echo request bytes), once per interval

	pub  *publisher   // the settle rule: files still being written
	live *liveWaits   // requests waiting for a playlist to change (Low-Latency HLS)
	tags *contentTags // content validators (-etag content)

	dates dateClamp // keeps Last-Modified at or before Date
	rec   recorder  // counts, times and logs every finished response

	files *files   // the file steps (steps.go)
	h     *handler // the request path every engine drives (handler.go)
}

// New validates cfg and builds a server. It starts no goroutine: Run does.
func New(cfg Config) (_ *Server, err error) {
	if err := cfg.validate(); err != nil {
		return nil, fmt.Errorf("origin: invalid configuration: %w", err)
	}
	var undo cleanups
	defer func() {
		if err != nil {
			err = errors.Join(err, undo.run())
		}
	}()
	s, err := newServer(cfg, &undo)
	if err != nil {
		return nil, err
	}
	// In order: the gate's hook reaches s.cache only at accept, after New;
	// read-ahead needs the cold pool and the cache, and the watcher the
	// cache.
	if s.gate, err = newGate(s.cfg, s.admit.client.trusted, s.onFDPressure, &s.stats); err != nil {
		return nil, err
	}
	p, err := makePolicy(s.cfg, &s.stats)
	if err != nil {
		return nil, fmt.Errorf("origin: %w", err)
	}
	s.pol.swap(p)
	if s.tls, err = newTLS(s.cfg, &s.stats); err != nil {
		return nil, err
	}
	for _, build := range []func(*cleanups) error{s.newColdPath, s.newCache, s.addReadAhead} {
		if err := build(&undo); err != nil {
			return nil, err
		}
	}
	if s.watch, err = newWatcher(s.cfg, invalidator{s}, s.cache, s.pub.noteWrite); err != nil {
		return nil, err
	}
	s.files = newFiles(s)
	s.h = newHandler(s)
	return s, nil
}

// newFiles gives the file steps the subsystems they consult, once every
// one is built.
func newFiles(s *Server) *files {
	f := &files{
		cache: s.cache, resp: s.resp, stats: &s.stats, pub: s.pub, tags: s.tags,
		dates: &s.dates, pol: &s.pol, cold: s.cold, ra: s.ra, clientID: &s.admit.client,
		etagContent: s.cfg.ETag == ETagContent, maxRanges: s.cfg.MaxRanges, now: s.cfg.Now,
		logOutcome: s.rec.access.w != nil,
	}
	f.lv = &liveSteps{
		live: s.live, cache: s.cache, resp: s.resp, stats: &s.stats, pub: s.pub,
		dates: &s.dates, pol: &s.pol, files: f,
	}
	return f
}

// cleanups is what New undoes, last first, when a later step fails.
type cleanups []func() error

func (c *cleanups) add(f func() error) { *c = append(*c, f) }

func (c cleanups) run() error {
	var errs []error
	for i := len(c) - 1; i >= 0; i-- {
		errs = append(errs, c[i]())
	}
	return errors.Join(errs...)
}

// newServer makes the server's own state from cfg: the root, who a
// request is from, the response tables, the logs, pools and histograms.
func newServer(cfg Config, undo *cleanups) (*Server, error) {
	abs, err := filepath.Abs(cfg.Root)
	if err != nil {
		return nil, fmt.Errorf("origin: root: %w", err)
	}
	cfg.Root = abs
	rt, err := openRootDir(abs)
	if err != nil {
		return nil, fmt.Errorf("origin: root: %w", err)
	}
	undo.add(rt.dir.Close)
	s := &Server{cfg: cfg, log: cfg.Logger}
	s.resp = newResponder(cfg, &s.pol, &s.stats, s.rec.countResponse, s.loggable)
	if s.admit, err = newAdmission(cfg, &s.pol, &s.stats, s.resp, s.loggable); err != nil {
		return nil, fmt.Errorf("origin: invalid configuration: %w", err)
	}
	s.root = newMediaRoot(cfg, rt, &s.stats, func() {
		invalidator{s}.InvalidateAll()
		if s.watch != nil {
			s.watch.Reroot()
		}
	})
	s.bufPool.New = func() any { b := make([]byte, copyBufSize); return &b }
	s.pub = newPublisher(cfg, &s.stats.InProgress, func(name string) { s.cache.Invalidate(name) }, s.loggable)
	s.live = newLiveWaits(cfg, &s.stats.Live, func(name string) (*cache.Handle, error) { return s.cache.Acquire(name) })
	s.fasthttpLog = &fasthttpLogger{log: cfg.Logger, loggable: s.loggable}
	s.fasthttpLog.lim.Every, s.fasthttpLog.lim.Now = 10*time.Second, cfg.Now
	s.rec.init(cfg, &s.stats, s.admit.redactor, s.admit.client.addr)
	return s, nil
}

// newColdPath makes the cold readers, the bound on opens and read-ahead.
func (s *Server) newColdPath(*cleanups) (err error) {
	pool, err := newColdPool(s.cfg)
	if err != nil {
		return fmt.Errorf("origin: %w", err)
	}
	s.tags = newContentTags(s.cfg, pool, &s.stats.Content, &s.resp.coldLog, s.loggable)
	if pool == nil {
		s.log.Warn("cold readers off (cold-readers 0): a send of bytes not in the page cache blocks its thread on storage, nothing is read ahead, and opens are not bounded")
		return nil
	}
	s.cold = &coldPath{pool: pool, st: &s.stats.Cold, now: s.cfg.Now, acquire: func(name string) (*cache.Handle, error) { return s.cache.Acquire(name) },
		log: s.log, loggable: s.loggable, failLog: &s.resp.coldLog}
	s.root.opens = make(chan struct{}, s.cfg.ColdReaders)
	return nil
}

// newCache makes the file cache over the root: a step of New.
func (s *Server) newCache(undo *cleanups) (err error) {
	if s.cache, err = newFileCache(s.cfg, s.root); err != nil {
		return err
	}
	undo.add(s.cache.Close)
	return nil
}

// addReadAhead makes read-ahead, over the cold readers and the cache.
func (s *Server) addReadAhead(*cleanups) (err error) {
	if s.cold == nil || s.cfg.ReadAhead.Readers == 0 {
		return nil
	}
	if s.ra, err = newReadAhead(s); err != nil {
		return fmt.Errorf("origin: read-ahead: %w", err)
	}
	return nil
}

// invalidator hands the watcher's invalidations to the file cache and to
// read-ahead's index of what playlists and sidx boxes say.
type invalidator struct{ s *Server }

func (v invalidator) Invalidate(name string) {
	v.s.cache.Invalidate(name)
	v.s.live.changed(name)
	if v.s.ra != nil {
		v.s.ra.forget(name)
	}
}

func (v invalidator) InvalidatePrefix(dir string) {
	v.s.cache.InvalidatePrefix(dir)
	v.s.live.changedAll()
	if v.s.ra != nil {
		v.s.ra.forgetAll() // rare (a directory renamed): start over
	}
}

func (v invalidator) InvalidateAll() {
	v.s.cache.InvalidateAll()
	v.s.live.changedAll()
	if v.s.ra != nil {
		v.s.ra.forgetAll()
	}
}

// Run serves on every listener until ctx is done, then drains: it stops
// accepting, lets responses in flight finish until drain elapses, and
// returns. Listeners marked by TLSListener serve HTTPS. Run owns the
// watcher goroutine, the certificate reload poll, the media root check, the
// cold readers and one serving goroutine per listener; all have ended when
// it returns. The listeners are closed.
func (s *Server) Run(ctx context.Context, drain time.Duration, listeners ...net.Listener) error {
	if len(listeners) == 0 {
		return errors.New("origin: Run needs at least one listener")
	}
	wrapped := make([]net.Listener, len(listeners))
	gates := make([]*conn.Listener, len(listeners))
	for i, ln := range listeners {
		var err error
		if wrapped[i], gates[i], err = s.serveListener(ln); err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return err
		}
	}
	var wg sync.WaitGroup
	bgCtx, stopBackground := context.WithCancel(context.Background())
	s.startBackground(bgCtx, &wg)
	errc := make(chan error, len(listeners))
	eng := startEngines(s.h, listeners, wrapped, gates, &wg, errc)
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	eng.drain(s.log, drain)
	// fasthttp's Shutdown closes only the listeners whose Serve has begun;
	// a Serve that begins after it (ctx done right at start) would accept
	// forever. Closed here, such a Serve ends at its first Accept. (The
	// others are closed already: that error says nothing.)
	for _, wl := range wrapped {
		wl.Close()
	}
	stopBackground()
	wg.Wait()
	return runErr
}

// startBackground starts the work that outlives every connection: the
// watcher, the root check, the cold readers and the certificate poll,
// each in wg until ctx ends. They stop after the drain: responses
// finishing during it may still need a cold reader.
func (s *Server) startBackground(ctx context.Context, wg *sync.WaitGroup) {
	if s.watch != nil {
		wg.Go(func() {
			if err := s.watch.Run(ctx); err != nil {
				s.log.Error("watcher stopped", "err", err)
			}
		})
	}
	if s.cfg.RootCheckEvery > 0 {
		wg.Go(func() { s.root.watch(ctx, s.cfg.RootCheckEvery) })
	}
	if s.cold != nil {
		wg.Go(func() { s.cold.pool.Run(ctx) })
	}
	if s.tls != nil {
		wg.Go(func() { s.tls.PollCertificates(ctx) })
	}
}

// engines are the servers of Run's listeners: an event loop for each
// plain listener the loops take, and one connServer for the rest.
type engines struct {
	loops     []*loopServer
	conns     connServer
	connGates []*conn.Listener // the gates of the listeners conns serves
	tlsLoops  connServer       // the loops conns hands HTTPS connections to (tlsloops_linux.go); nil: none
}

// startEngines serves each listener (wrapped: its gated form) in wg; a
// server that stops with an error reports it on errc.
func startEngines(q *handler, listeners, wrapped []net.Listener, gates []*conn.Listener, wg *sync.WaitGroup, errc chan<- error) *engines {
	eng := &engines{conns: q.newConnServer()}
	for i, ln := range listeners {
		wl := wrapped[i]
		if ls := q.loopFor(ln, wl); ls != nil {
			eng.loops = append(eng.loops, ls)
			wg.Go(func() {
				if err := ls.serve(ln); err != nil {
					errc <- fmt.Errorf("origin: serve %s: %w", ln.Addr(), err)
				}
			})
			continue
		}
		eng.connGates = append(eng.connGates, gates[i])
		wg.Go(func() {
			if err := eng.conns.serve(wl); err != nil {
				errc <- fmt.Errorf("origin: serve %s: %w", ln.Addr(), err)
			}
		})
	}
	eng.startTLSLoops(q, wrapped, wg, errc)
	return eng
}

// drain stops every engine accepting and waits, up to drain, for the
// connections they hold to finish, all engines at once.
func (eng *engines) drain(log *slog.Logger, drain time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	// Every listener closes before any connection does: the loops close
	// their idle connections at once, HTTPS ones among them, and a
	// client that then connects again must be refused.
	if s, ok := eng.conns.(interface{ stopAccepting() }); ok {
		s.stopAccepting()
	}
	var wg sync.WaitGroup
	errs := make([]error, len(eng.loops)+1)
	wg.Go(func() { errs[0] = eng.shutdownConns(ctx) })
	for i, ls := range eng.loops {
		wg.Go(func() { errs[i+1] = ls.shutdown(ctx) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		log.Warn("shutdown: drain deadline passed with connections open", "err", err)
	} else {
		log.Info("shutdown: drain complete")
	}
}

// loopFor is the loop engine for a plain listener given to Run, or nil
// when fasthttp serves it (HTTPS, -engine fasthttp, a listener that is
// not TCP). wl is its gate-wrapped form, which the loop engine uses for
// the limits alone.
func (q *handler) loopFor(ln, wl net.Listener) *loopServer {
	if q.cfg.Engine != EngineLoop {
		return nil
	}
	gl, ok := wl.(*conn.Listener)
	if _, tcp := ln.(*net.TCPListener); !ok || !tcp {
		return nil
	}
	ls, err := q.newLoopServer(gl)
	if err != nil {
		q.log.Error("loop engine unavailable: serving with fasthttp", "listener", ln.Addr().String(), "err", err)
		return nil
	}
	return ls
}

// Close releases the cache and the root. Call it after Run returned.
func (s *Server) Close() error {
	return errors.Join(s.cache.Close(), s.root.close())
}

// CacheStats returns a snapshot of the file cache's counters.
func (s *Server) CacheStats() cache.Stats { return s.cache.Stats() }

// onFDPressure is the gate's hook when accept runs out of descriptors:
// shed the file cache's idle ones and log, once per interval.
func (s *Server) onFDPressure(err error) {
	s.cache.Shed()
	if s.resp.emfileLog.Allow() {
		s.log.Error("out of file descriptors: accept failed; shedding the file cache and retrying", "err", err,
			"suppressed", s.resp.emfileLog.Suppressed())
	}
}

// fasthttpLogger routes fasthttp's own messages into slog, at most one per
// interval: for every connection that sends an unparseable request,
// fasthttp writes a line that echoes the request's bytes, which a client
// could otherwise use to fill the disk. The text is redacted and cut.
type fasthttpLogger struct {
	lim      rateLimitedLog
	log      *slog.Logger
	loggable func(string) string
}

func (f *fasthttpLogger) Printf(format string, args ...any) {
	if !f.lim.Allow() {
		return
	}
	f.log.Warn(f.loggable(fmt.Sprintf(format, args...)), "component", "fasthttp",
		"suppressed", f.lim.Suppressed())
}

// BodyPaths describes, as slog attributes, which body paths this process
// can use: sendfile on plain TCP, kTLS (with the ciphers the kernel took,
// or the reason it is off), and the userspace copy.
func (s *Server) BodyPaths() []any {
	sendfile := conn.SendfileAvailable && !s.cfg.DisableSendfile
	if s.tls == nil {
		return []any{"sendfile", sendfile, "ktls", false, "ktls_reason", "no TLS listener", "copy", true}
	}
	on, reason := s.tls.KTLSStatus()
	if !on {
		return append([]any{"sendfile", sendfile, "ktls", false, "ktls_reason", reason, "copy", true}, tlsPaths(s.tls, loopAvailable && s.cfg.Engine == EngineLoop)...)
	}
	var ciphers []string
	for _, c := range s.tls.KTLSCiphers() {
		ciphers = append(ciphers, c.String())
	}
	return append([]any{"sendfile", sendfile, "ktls", true, "ktls_ciphers", strings.Join(ciphers, ","), "copy", true}, tlsPaths(s.tls, loopAvailable && s.cfg.Engine == EngineLoop)...)
}
