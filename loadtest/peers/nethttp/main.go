// Command nethttp is the Go net/http peer of loadtest/compare.sh: an
// http.FileServer over a directory (ServeContent underneath: Range,
// conditionals, and sendfile on plain TCP via io.Copy to the connection).
//
// Usage:
//
//	go run ./loadtest/peers/nethttp -root DIR [-listen 127.0.0.1:8081]
//
// Like segorigin it logs "msg=listening addr=HOST:PORT" on stderr, so
// -listen 127.0.0.1:0 works for scripts. SIGTERM or SIGINT shuts it down.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8081", "listen `address` (port 0 picks a free port)")
	root := flag.String("root", ".", "`directory` to serve")
	flag.Parse()
	if err := run(*listen, *root); err != nil {
		fmt.Fprintln(os.Stderr, "nethttp:", err)
		os.Exit(1)
	}
}

func run(listen, root string) error {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("-root %s: not a directory", root)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           http.FileServer(http.Dir(root)),
		ReadHeaderTimeout: 30 * time.Second,
		IdleTimeout:       75 * time.Second, // as nginx's keepalive_timeout and segorigin's -idle-timeout
	}
	log.Info("listening", "proto", "http", "addr", ln.Addr().String(), "root", root)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }() // ends at Shutdown
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err = srv.Shutdown(sctx)
	if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) && err == nil {
		err = serr
	}
	return err
}
