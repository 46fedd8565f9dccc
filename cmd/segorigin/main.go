// Command segorigin serves a directory of HLS and DASH media over HTTP/1.1
// with full Range support; `segorigin sign` mints auth tokens.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"sync/atomic"
	"syscall"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
	"segorigin/origin/admin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sign" {
		os.Exit(exitCode("segorigin sign", runSign(os.Args[2:], os.Stdout)))
	}
	if len(os.Args) > 1 && os.Args[1] == "etag" {
		os.Exit(exitCode("segorigin etag", runETag(os.Args[2:], os.Stdout)))
	}
	os.Exit(exitCode("segorigin", run(os.Args[1:], os.Stdout, os.Stderr)))
}

// exitCode is 0 for success and for -h, 2 (after the error) otherwise.
func exitCode(prog string, err error) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(os.Stderr, prog+":", err)
	return 2
}

// run parses flags, wires the server and serves until SIGTERM or SIGINT,
// then shuts down in phases (see shutdown).
func run(args []string, stdout, stderr io.Writer) error {
	environ := os.Environ()
	opts, err := parseFlags(args, stdout, environ)
	if err != nil {
		return err
	}
	build := buildInfo()
	if opts.version {
		fmt.Fprintln(stdout, build)
		return nil
	}
	// Signals are taken before anything is bound, so that a stop right
	// after the listening line is never the default action (an exit with
	// no drain).
	sigs, hup := make(chan os.Signal, 2), make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	signal.Notify(hup, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sigs)
	defer signal.Stop(hup)
	logger, err := newLogger(opts.logFormat, opts.logLevel, stderr)
	if err != nil {
		return err
	}
	opts.cfg.Logger, opts.cfg.Build = logger, origin.BuildInfo(build)
	alog, err := openAccessLog(opts.accessLog, opts.accessLogBuffer)
	if err != nil {
		return err
	}
	if alog != nil {
		defer func() {
			if err := alog.Close(); err != nil {
				logger.Error("access log: the last lines were not written", "path", alog.Path(), "err", err)
			}
		}()
		opts.cfg.AccessLog = alog
	}
	// HTTPS connections stay on goroutines beside the loops only where the
	// kernel seals and crypto/tls opens (-ktls tx); the others go to the loops.
	reserveLoopP(&opts.cfg, opts.tlsListen != "" && opts.cfg.TLS.KTLS == origin.KTLSTX)
	srv, err := origin.New(opts.cfg)
	if err != nil {
		return err
	}
	defer srv.Close()
	listeners, err := listen(opts, logger)
	if err != nil {
		return err
	}
	logger.Info("body paths", srv.BodyPaths()...)
	logLimits(logger, opts.cfg.CacheFiles)

	life, endLife := context.WithCancel(context.Background())
	defer endLife()
	var ready atomic.Bool // false from the first stop signal on: /readyz 503
	ready.Store(true)
	admin, err := startAdmin(opts.adminListen, srv, ready.Load, logger)
	if err != nil {
		closeAll(listeners)
		return err
	}
	notify := newNotifier(os.Getenv("NOTIFY_SOCKET"), logger)
	go onSignals(life, hup, srv, opts, &reloader{args: args, environ: environ, start: opts}, alog, logger) // ends with life
	serving, stopServing := context.WithCancel(context.Background())
	defer stopServing()
	// The listeners are bound: connections queue in the kernel from now on.
	notify.send("READY=1\nSTATUS=serving")
	logger.Info("ready", "version", build.Version, "systemd_notify", notify.enabled())
	go shutdown(life, sigs, opts, &ready, notify, logger, stopServing) // ends with life or once stopServing is called
	err = srv.Run(serving, opts.drain, listeners...)
	admin.stop()
	logger.Info("stopped", "err", err)
	return err
}

// shutdown waits for the first SIGTERM or SIGINT and shuts down in phases,
// each logged: not ready (/readyz 503) while still serving for
// -shutdown-delay, so a load balancer stops sending; then stopServing
// closes the listeners and Run drains. A second signal ends the delay at
// once. It returns early when life ends (Run failed by itself).
func shutdown(life context.Context, sigs <-chan os.Signal, opts *options, ready *atomic.Bool,
	notify *notifier, logger *slog.Logger, stopServing func()) {
	var sig os.Signal
	select {
	case <-life.Done():
		return
	case sig = <-sigs:
	}
	ready.Store(false)
	notify.send("STOPPING=1\nSTATUS=shutting down: not ready, still serving")
	logger.Info("shutdown: signal received: not ready, still serving", "signal", sig.String(), "shutdown_delay", opts.shutdownDelay)
	if opts.shutdownDelay > 0 {
		t := time.NewTimer(opts.shutdownDelay)
		select {
		case <-t.C:
		case sig = <-sigs:
			t.Stop()
			logger.Info("shutdown: second signal: delay cut short", "signal", sig.String())
		case <-life.Done():
			t.Stop()
			return
		}
	}
	notify.send("STATUS=draining")
	logger.Info("shutdown: listeners closed, draining", "drain_timeout", opts.drain)
	stopServing()
}

// listen binds -listen (unless empty) and -tls-listen (if set) and logs
// the address each actually bound.
func listen(opts *options, logger *slog.Logger) ([]net.Listener, error) {
	var listeners []net.Listener
	for _, l := range []struct{ proto, addr string }{{"http", opts.listen}, {"https", opts.tlsListen}} {
		if l.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", l.addr)
		if err != nil {
			closeAll(listeners)
			return nil, fmt.Errorf("listen %s: %w", l.addr, err)
		}
		logger.Info("listening", "proto", l.proto, "addr", ln.Addr().String(), "url", playURL(l.proto, ln.Addr()),
			"root", opts.cfg.Root, "pid", os.Getpid())
		if l.proto == "https" {
			ln = origin.TLSListener(ln)
		}
		listeners = append(listeners, ln)
	}
	return listeners, nil
}

func closeAll(listeners []net.Listener) {
	for _, l := range listeners {
		l.Close()
	}
}

// adminServer is the -admin-listen HTTP server (metrics, health, pprof).
type adminServer struct {
	srv  *http.Server
	done chan struct{} // closed when Serve returned
}

// startAdmin serves the admin endpoints on addr ("" : none). /readyz says
// not ready once ready returns false (shutting down) or the media root is
// unavailable.
func startAdmin(addr string, srv *origin.Server, ready func() bool, logger *slog.Logger) (*adminServer, error) {
	a := &adminServer{done: make(chan struct{})}
	if addr == "" {
		close(a.done)
		return a, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("-admin-listen %s: %w", addr, err)
	}
	a.srv = &http.Server{
		Handler:           admin.Handler(srv, ready),
		ReadHeaderTimeout: 10 * time.Second,
	}
	logger.Info("listening", "proto", "admin", "addr", ln.Addr().String(), "pid", os.Getpid())
	go func() { // owned by a: ends when stop shuts the server down
		defer close(a.done)
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Error("admin listener stopped", "err", err)
		}
	}()
	return a, nil
}

func (a *adminServer) stop() {
	if a.srv != nil {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		a.srv.Shutdown(sctx)
	}
	<-a.done
}

// onSignals serves SIGHUP and SIGUSR1 (hup, registered by run before
// anything is bound) until ctx is done. SIGHUP reloads what can change
// without a restart: the TLS certificate, and the settings read again
// (the -config file, the auth key file, -access-file) whose schema marks
// them reloadable; connections are not dropped, and a reload that fails
// leaves the previous settings in service. Both signals reopen the access log by
// name, so that logrotate can move it away and signal (USR1 is nginx's
// convention for this; HUP is what other tools send).
func onSignals(ctx context.Context, sig <-chan os.Signal, srv *origin.Server, opts *options, r *reloader, alog *accesslog.File, logger *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sig:
			if s == syscall.SIGHUP {
				reload(srv, opts, r, logger)
			}
			reopenAccessLog(alog, s, logger)
		}
	}
}

// reopenAccessLog reopens the access log file, if there is one; a failure
// keeps lines going to the old descriptor.
func reopenAccessLog(alog *accesslog.File, s os.Signal, logger *slog.Logger) {
	if alog == nil || alog.Path() == "-" {
		return
	}
	if err := alog.Reopen(); err != nil {
		logger.Warn("access log not reopened: lines still go to the old file", "signal", s.String(), "err", err)
		return
	}
	logger.Info("access log reopened", "signal", s.String(), "path", alog.Path())
}

// reload is SIGHUP: the certificate pair, then the settings.
func reload(srv *origin.Server, opts *options, r *reloader, logger *slog.Logger) {
	if opts.tlsListen != "" {
		if err := srv.ReloadCertificates(); err != nil {
			logger.Warn("SIGHUP: certificates not reloaded", "err", err)
		} else {
			logger.Info("SIGHUP: certificates reloaded")
		}
	}
	reloadSettings(srv, r, logger)
}

func newLogger(format, level string, w io.Writer) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	hopts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(w, hopts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(w, hopts)), nil
	}
	return nil, fmt.Errorf("-log-format: %q, want text or json", format)
}

// logLimits reports the descriptor limit (Go raises the soft limit to the
// hard one at start) and warns when the cache could exhaust it.
func logLimits(l *slog.Logger, cacheFiles int) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		l.Warn("getrlimit NOFILE", "err", err)
		return
	}
	l.Info("file descriptors", "limit", rl.Cur, "cache_files", cacheFiles)
	if uint64(cacheFiles) > rl.Cur/2 {
		l.Warn("cache-files is more than half the descriptor limit: connections may run out",
			"limit", rl.Cur, "cache_files", cacheFiles)
	}
}

// openAccessLog opens -access-log: "" none (nil), "-" standard output,
// else a file appended to and reopened on SIGUSR1 and SIGHUP; its lines
// buffered as b says (-access-log-buffer, -access-log-flush).
func openAccessLog(path string, b accesslog.Buffer) (*accesslog.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := accesslog.OpenBuffered(path, b)
	if err != nil {
		return nil, fmt.Errorf("-access-log: %w", err)
	}
	return f, nil
}

// reserveLoopP sets GOMAXPROCS for the loop engine (unless the operator
// set it): one P per loop, for a loop keeps its P while it waits in
// epoll_wait and lets other goroutines run only when it yields (within a
// millisecond of one becoming ready); and one P more when HTTPS
// connections are served by goroutines beside the loops (tls: -ktls tx),
// so that they have a P of their own. Otherwise a P to spare would sit
// idle, and each yield of a loop would wake a thread to look for work on
// it: with HTTPS on the loops (a handshake is the only goroutine), 12.6
// µs a request on HTTPS 1 KiB playlists against 11.7 without it.
func reserveLoopP(cfg *origin.Config, tls bool) {
	if cfg.Engine != origin.EngineLoop || os.Getenv("GOMAXPROCS") != "" {
		return
	}
	if cfg.Loops == 0 {
		cfg.Loops = runtime.GOMAXPROCS(0)
	}
	ps := cfg.Loops
	if tls {
		ps++
	}
	runtime.GOMAXPROCS(ps)
}
