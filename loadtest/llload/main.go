// Command llload is the low-latency HLS load run: thousands of players
// in blocking playlist reloads (_HLS_msn, _HLS_part) on a few live
// renditions, which it writes itself with the test packager
// (fixtures/llpack) under the served root, a part every -pace. For each
// answer it takes the delay from the rename that published the version
// satisfying it to the answer's last byte (the packager's rename time and
// the client's answer time on the same clock), and checks every byte
// against what was published: each playlist answer is a published version
// from the one asked for on, each part fetched is the file's bytes. With
// -access-log (the server's, -access-log-format json) it also takes the
// server's own delay for each parked reload, from the rename to the last
// byte the server sent, which leaves out the players' own scheduling.
//
//	go run ./loadtest/llload -url http://127.0.0.1:8080 -root /srv/media \
//	    -clients 5000 -playlists 10 -pace 333ms -duration 30s -pid PID -metrics http://127.0.0.1:9090/metrics
//
// It prints a table and a "RESULT key=value ..." line, and exits 1 if any
// request failed or any byte differed. loadtest/llload.sh runs it against
// a server it starts.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"slices"
	"sync"
	"syscall"
	"time"

	"segorigin/fixtures/llpack"
)

// config is a run.
type config struct {
	addr      string        // the server, host:port
	root      string        // the server's root, where the renditions are written
	sub       string        // the renditions' directory under root
	playlists int           // renditions
	clients   int           // players, spread over the renditions
	pace      time.Duration // a part every pace, each rendition
	duration  time.Duration // the measured run
	parts     bool          // fetch each part an answer adds
	partBytes int
	pid       int    // the server's process, for CPU and RSS (0: not measured)
	metrics   string // the server's metrics URL, for its heap and parked requests ("": not measured)
	pprof     string // the server's /debug/pprof/ URL, for its live heap after a collection ("": not measured)
	accessLog string // the server's JSON access log, for its own delays ("": not measured)
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	res.print(os.Stdout, cfg)
	if res.t.errs > 0 {
		os.Exit(1)
	}
}

func parseFlags(args []string) (config, error) {
	fs := flag.NewFlagSet("llload", flag.ContinueOnError)
	var cfg config
	u := fs.String("url", "http://127.0.0.1:8080", "the server")
	fs.StringVar(&cfg.root, "root", "", "the server's root directory: the renditions are written under it (required)")
	fs.StringVar(&cfg.sub, "dir", "llload", "the renditions' directory under -root (emptied first)")
	fs.IntVar(&cfg.playlists, "playlists", 10, "live renditions, one playlist each")
	fs.IntVar(&cfg.clients, "clients", 5000, "players, each on its own connection, spread over the playlists")
	fs.DurationVar(&cfg.pace, "pace", 333*time.Millisecond, "a part every pace, each rendition (3 parts a segment)")
	fs.DurationVar(&cfg.duration, "duration", 30*time.Second, "the measured run, after the clients have connected")
	fs.BoolVar(&cfg.parts, "parts", true, "fetch the part each answer adds, and check its bytes")
	fs.IntVar(&cfg.partBytes, "part-bytes", 16<<10, "bytes of each part")
	fs.IntVar(&cfg.pid, "pid", 0, "the server's process ID: its CPU time and RSS are measured (0: not)")
	fs.StringVar(&cfg.metrics, "metrics", "", "the server's metrics URL (-admin-listen): its heap per parked request is measured")
	fs.StringVar(&cfg.accessLog, "access-log", "", "the server's access log, written with -access-log-format json: the server's own delay for each parked reload, from the rename to its last byte sent, is measured")
	fs.StringVar(&cfg.pprof, "pprof", "", "the server's /debug/pprof/ URL (-admin-pprof): its live heap per parked request is measured after a collection (needs -metrics)")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	pu, err := url.Parse(*u)
	switch {
	case err != nil || pu.Scheme != "http" || pu.Host == "":
		return cfg, fmt.Errorf("llload: -url %q: want http://host:port", *u)
	case cfg.root == "":
		return cfg, fmt.Errorf("llload: -root is required")
	case cfg.playlists < 1 || cfg.clients < 1 || cfg.pace <= 0 || cfg.duration <= 0 || cfg.partBytes < 1:
		return cfg, fmt.Errorf("llload: -playlists, -clients, -pace, -duration and -part-bytes must be positive")
	}
	cfg.addr = pu.Host
	return cfg, nil
}

// result is a run's tally and what the server spent on it.
type result struct {
	t       tally
	elapsed time.Duration
	srv     serverUse
	served  []time.Duration // the server's own delays for the parked reloads (-access-log), sorted
}

// run starts the renditions, then the clients, measures for
// cfg.duration, and stops them all.
func run(ctx context.Context, cfg config) (result, error) {
	feeds := make([]*feed, cfg.playlists)
	for i := range feeds {
		f, err := newFeed(cfg.root, cfg.sub, i, llpack.Config{TargetDuration: 1, Parts: 3, PartBytes: cfg.partBytes})
		if err != nil {
			return result{}, err
		}
		// A segment's worth first, so that every playlist lists parts.
		for range 3 {
			if err := f.publish(); err != nil {
				return result{}, err
			}
		}
		feeds[i] = f
	}
	pace := cfg.pace
	pubCtx, stopPub := context.WithCancel(context.WithoutCancel(ctx))
	var pub sync.WaitGroup
	errs := make(chan error, len(feeds))
	for i, f := range feeds {
		pub.Add(1)
		// The renditions publish in turn, pace/len(feeds) apart, so that
		// their waiters are answered in bursts of clients/playlists.
		go func() { // ends with pubCtx
			defer pub.Done()
			if err := f.run(pubCtx, pace, pace*time.Duration(i)/time.Duration(len(feeds))); err != nil {
				errs <- err
			}
		}()
	}
	res, w, err := runClients(ctx, cfg, feeds)
	stopPub()
	pub.Wait()
	if cfg.accessLog != "" && err == nil {
		if err = flushAccessLog(ctx, cfg.pid, cfg.accessLog); err == nil {
			res.served, err = serverDelays(cfg.accessLog, feeds, w)
		}
	}
	close(errs)
	if perr := <-errs; perr != nil && err == nil {
		err = perr
	}
	return res, err
}

// runClients measures the server idle, connects the clients, lets them
// settle for two parts, then measures cfg.duration.
func runClients(ctx context.Context, cfg config, feeds []*feed) (result, *window, error) {
	before := measureServer(cfg)
	var gcBefore int64
	if cfg.pprof != "" {
		gcBefore = gcHeap(cfg.pprof)
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	w := &window{}
	cs := make([]*client, cfg.clients)
	var wg sync.WaitGroup
	for i := range cs {
		cs[i] = &client{addr: cfg.addr, f: feeds[i%len(feeds)], parts: cfg.parts, size: int64(cfg.partBytes), w: w}
		wg.Add(1)
		go func() { // ends with cctx
			defer wg.Done()
			cs[i].run(cctx)
		}()
	}
	select {
	case <-ctx.Done():
	case <-time.After(2*cfg.pace + time.Second):
	}
	start := measureServer(cfg)
	t0 := time.Now()
	w.start.Store(t0.UnixNano())
	srv := sampleServer(ctx, cfg, before, t0.Add(cfg.duration))
	t1 := time.Now()
	w.end.Store(t1.UnixNano())
	end := measureServer(cfg)
	cancel()
	wg.Wait()
	res := result{elapsed: t1.Sub(t0), srv: srv}
	res.srv.cpu = end.cpu - start.cpu
	res.srv.gcBefore.heap = gcBefore
	for _, c := range cs {
		res.t.merge(&c.t)
	}
	slices.Sort(res.t.waited)
	slices.Sort(res.t.immediate)
	return res, w, ctx.Err()
}

func (t *tally) merge(o *tally) {
	t.waited = append(t.waited, o.waited...)
	t.immediate = append(t.immediate, o.immediate...)
	t.answers += o.answers
	t.timedOut += o.timedOut
	t.parts += o.parts
	t.bytes += o.bytes
	t.errs += o.errs
	if t.firstErr == nil {
		t.firstErr = o.firstErr
	}
}
