// Command fasthttpfs is the fasthttp.FS peer of loadtest/compare.sh:
// fasthttp's own static file handler over a directory, with compression
// off (bodies must be the file's bytes) and byte ranges on. fasthttp
// reaches sendfile by itself for files above 8 KiB on plain TCP.
//
// Usage:
//
//	go run ./loadtest/peers/fasthttpfs -root DIR [-listen 127.0.0.1:8082]
//
// Like segorigin it logs "msg=listening addr=HOST:PORT" on stderr, so
// -listen 127.0.0.1:0 works for scripts. SIGTERM or SIGINT shuts it down.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/valyala/fasthttp"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:8082", "listen `address` (port 0 picks a free port)")
	root := flag.String("root", ".", "`directory` to serve")
	flag.Parse()
	if err := run(*listen, *root); err != nil {
		fmt.Fprintln(os.Stderr, "fasthttpfs:", err)
		os.Exit(1)
	}
}

func run(listen, root string) error {
	if st, err := os.Stat(root); err != nil || !st.IsDir() {
		return fmt.Errorf("-root %s: not a directory", root)
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	fs := &fasthttp.FS{
		Root:               root,
		Compress:           false,
		AcceptByteRange:    true,
		GenerateIndexPages: false,
	}
	srv := &fasthttp.Server{
		Handler:     fs.NewRequestHandler(),
		Name:        "fasthttpfs",
		ReadTimeout: 30 * time.Second,
		IdleTimeout: 75 * time.Second, // as nginx's keepalive_timeout and segorigin's -idle-timeout
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return err
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
	err = srv.ShutdownWithContext(sctx)
	if serr := <-errc; err == nil {
		err = serr
	}
	return err
}
