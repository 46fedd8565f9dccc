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
	"syscall"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
	"segorigin/origin/admin"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "sign" {
		if err := runSign(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "segorigin sign:", err)
			os.Exit(2)
		}
		return
	}
	if err := run(os.Args[1:], os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "segorigin:", err)
		}
		os.Exit(2)
	}
}

// run parses flags, wires the server and serves until SIGTERM or SIGINT,
// then drains.
func run(args []string, stderr io.Writer) error {
	opts, err := parseFlags(args, stderr, os.LookupEnv)
	if err != nil {
		return err
	}
	logger, err := newLogger(opts.logFormat, opts.logLevel, stderr)
	if err != nil {
		return err
	}
	opts.cfg.Logger = logger
	alog, err := openAccessLog(opts.accessLog)
	if err != nil {
		return err
	}
	if alog != nil {
		defer alog.Close()
		opts.cfg.AccessLog = alog
	}
	srv, err := origin.New(opts.cfg)
	if err != nil {
		return err
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", opts.listen)
	if err != nil {
		return fmt.Errorf("listen %s: %w", opts.listen, err)
	}
	listeners := []net.Listener{ln}
	var tln net.Listener
	if opts.tlsListen != "" {
		if tln, err = net.Listen("tcp", opts.tlsListen); err != nil {
			ln.Close()
			return fmt.Errorf("listen %s: %w", opts.tlsListen, err)
		}
		listeners = append(listeners, origin.TLSListener(tln))
	}
	logger.Info("listening", "proto", "http", "addr", ln.Addr().String(), "root", opts.cfg.Root, "pid", os.Getpid())
	if tln != nil {
		logger.Info("listening", "proto", "https", "addr", tln.Addr().String(), "root", opts.cfg.Root, "pid", os.Getpid())
	}
	logger.Info("body paths", srv.BodyPaths()...)
	logLimits(logger, opts.cfg.CacheFiles)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	admin, err := startAdmin(ctx, opts.adminListen, srv, logger)
	if err != nil {
		for _, l := range listeners {
			l.Close()
		}
		return err
	}
	go onSignals(ctx, srv, opts, alog, logger) // ends with ctx
	err = srv.Run(ctx, opts.drain, listeners...)
	admin.stop()
	logger.Info("stopped", "err", err)
	return err
}

// adminServer is the -admin-listen HTTP server (metrics, health, pprof).
type adminServer struct {
	srv  *http.Server
	done chan struct{} // closed when Serve returned
}

// startAdmin serves the admin endpoints on addr ("" : none). /readyz says
// not ready once ctx is done, while the origin drains.
func startAdmin(ctx context.Context, addr string, srv *origin.Server, logger *slog.Logger) (*adminServer, error) {
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
		Handler:           admin.Handler(srv, func() bool { return ctx.Err() == nil }),
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

// onSignals serves SIGHUP and SIGUSR1 until ctx is done. SIGHUP reloads
// what can change without a restart: the TLS certificate and the auth key
// file (key rotation); connections are not dropped, and a reload that
// fails leaves the previous settings in service. Both signals reopen the
// access log by name, so that logrotate can move it away and signal
// (USR1 is nginx's convention for this; HUP is what other tools send).
func onSignals(ctx context.Context, srv *origin.Server, opts *options, alog *accesslog.File, logger *slog.Logger) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGHUP, syscall.SIGUSR1)
	defer signal.Stop(sig)
	for {
		select {
		case <-ctx.Done():
			return
		case s := <-sig:
			if s == syscall.SIGHUP {
				reload(srv, opts, logger)
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

func reload(srv *origin.Server, opts *options, logger *slog.Logger) {
	if opts.tlsListen != "" {
		if err := srv.ReloadCertificates(); err != nil {
			logger.Warn("SIGHUP: certificates not reloaded", "err", err)
		} else {
			logger.Info("SIGHUP: certificates reloaded")
		}
	}
	if srv.AuthEnabled() {
		fresh := *opts
		if err := fresh.loadAuth(); err != nil {
			logger.Warn("SIGHUP: auth keys not reloaded", "err", err)
		} else if err := srv.ReloadAuth(fresh.cfg.Auth); err != nil {
			logger.Warn("SIGHUP: auth keys not reloaded", "err", err)
		} else {
			logger.Info("SIGHUP: auth settings reloaded")
		}
	}
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
// else a file appended to and reopened on SIGUSR1 and SIGHUP.
func openAccessLog(path string) (*accesslog.File, error) {
	if path == "" {
		return nil, nil
	}
	f, err := accesslog.Open(path)
	if err != nil {
		return nil, fmt.Errorf("-access-log: %w", err)
	}
	return f, nil
}
