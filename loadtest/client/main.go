// Command client is a verifying, player-like load client for segorigin and
// its peers: N sessions, each on its own keep-alive connection, walk a
// title (a synth workload of ARCHITECTURE.md, or an HLS playlist) in order, at a
// chosen rate or as fast as they can, for a bounded time or number of
// requests, and every body byte is checked. See loadtest/README.md.
//
// Usage:
//
//	go run ./loadtest/client -url http://127.0.0.1:8080 -workload W1 -sessions 8 -duration 10s
//	go run ./loadtest/client -url ... -hls /w4/p00.m3u8 -rate 0.5 -sessions 100
//	go run ./loadtest/client -url ... -hls /hls/byterange/master.m3u8 -verify root -root fixtures/media
//	go run ./loadtest/client -url ... -workload W3 -sessions 1 -requests 1000 -q
//	go run ./loadtest/client -url ... -workload W1 -sessions 2000 -bitrate 2Mbit -duration 60s
//
// It prints a progress line a second on stderr and the result on stdout,
// ending with a "RESULT key=value ..." line; it exits 1 if any request
// failed, 2 on a usage error.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"segorigin/loadtest/load"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "client:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	res, err := load.Run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "client:", err)
		return 2
	}
	res.WriteReport(stdout)
	if res.Errors > 0 || res.IdleFailed > 0 {
		return 1
	}
	return 0
}

func parseFlags(args []string, stderr io.Writer) (load.Config, error) {
	var (
		cfg          load.Config
		workload     string
		hls          string
		prefix       string
		count        int
		size, span   byteSize
		rate         bitrate
		verifyMode   string
		quiet        bool
		idleExplicit bool
	)
	fs := flag.NewFlagSet("client", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "server base `URL`")
	fs.StringVar(&workload, "workload", "W1", "synth workload to walk: W1 (2 MiB segments), W2 (256 KiB ranges of one file), W3 (64 KiB parts), W4 (playlists), W5 (W1 beside -idle connections)")
	fs.StringVar(&hls, "hls", "", "walk this HLS playlist (`path` below -url, or a URL) instead of a workload; a multivariant playlist picks a rendition per session")
	fs.StringVar(&prefix, "prefix", "", "path prefix before the workload's files (e.g. /t/TOKEN)")
	fs.IntVar(&count, "count", 0, "use only the first `N` files of the workload (for a smaller generated set)")
	fs.Var(&size, "size", "file `size` of the workload's files if not the design's (e.g. 8MiB for a small W2)")
	fs.Var(&span, "span", "Range span `size` (W2: 256KiB); 0 keeps the workload's")
	fs.IntVar(&cfg.Sessions, "sessions", 8, "concurrent sessions (players), one keep-alive connection each")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second per session; 0: as fast as possible")
	fs.Var(&rate, "bitrate", "cap each session's body reads at this `rate`: bits a second, or with kbit, Mbit, Gbit (e.g. 2Mbit); 0: unpaced")
	fs.DurationVar(&cfg.Pause, "pause", 0, "wait this long after each response before the next request (a player with a full buffer)")
	fs.DurationVar(&cfg.Stagger, "stagger", 0, "delay each session's first request by a random time below this, so that paced sessions do not ask in lockstep")
	fs.DurationVar(&cfg.Duration, "duration", 10*time.Second, "run for at most this long")
	fs.Int64Var(&cfg.Requests, "requests", 0, "stop after `N` requests in all (0: only -duration bounds the run)")
	fs.StringVar(&verifyMode, "verify", "synth", "check bodies against: synth (content of the URL's base name), root (the file below -root), length (sizes and Content-Range only)")
	fs.StringVar(&cfg.Root, "root", "", "local copy of the served `directory`, for -verify root")
	fs.IntVar(&cfg.IdleConns, "idle", 0, "idle keep-alive connections held open during the run (W5; default 2000 with -workload W5)")
	fs.StringVar(&cfg.IdlePath, "idle-path", "/w4/p00.m3u8", "what each idle connection requests once before going idle")
	fs.DurationVar(&cfg.Timeout, "timeout", 30*time.Second, "bound on one request, body included")
	fs.Uint64Var(&cfg.Seed, "seed", 0, "seed for the sessions' starting points (0: random)")
	fs.BoolVar(&cfg.Revalidate, "revalidate", false, "ask again for a whole file a session fetched before with If-None-Match and the ETag it saw; the answer must be 304 with that ETag and no body (W6)")
	fs.BoolVar(&quiet, "q", false, "no progress lines")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: client [-url URL] [-workload W1..W5 | -hls PATH] [-sessions N] [-rate R] [-bitrate B] [-pause D] [-duration D] [-requests N] [-verify synth|root|length]\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	fs.Visit(func(f *flag.Flag) { idleExplicit = idleExplicit || f.Name == "idle" })
	cfg.Bitrate = float64(rate)
	var err error
	if cfg.Verify, err = load.ParseVerifyMode(verifyMode); err != nil {
		return cfg, err
	}
	if hls != "" {
		cfg.Plan = load.HLSPlan{Path: hls}
	} else {
		p, err := load.WorkloadPlan(workload, count, int64(size))
		if err != nil {
			return cfg, err
		}
		p.Prefix = strings.TrimRight(prefix, "/")
		if span > 0 {
			p.Span = int64(span)
		}
		cfg.Plan = p
		if strings.EqualFold(workload, "W5") && !idleExplicit {
			cfg.IdleConns = 2000
		}
	}
	if !quiet {
		cfg.Progress = stderr
	}
	return cfg, nil
}

// byteSize is a flag value: bytes, or a number with KiB, MiB or GiB.
type byteSize int64

func (b *byteSize) String() string { return strconv.FormatInt(int64(*b), 10) }

func (b *byteSize) Set(s string) error {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"B", 1}, {"", 1}}
	for _, u := range units {
		num, ok := strings.CutSuffix(s, u.suffix)
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(num), 10, 64)
		if err != nil || n < 0 {
			return fmt.Errorf("size %q: want bytes, or a number with KiB, MiB or GiB", s)
		}
		*b = byteSize(n * u.mult)
		return nil
	}
	return fmt.Errorf("size %q: want bytes, or a number with KiB, MiB or GiB", s)
}

// bitrate is a flag value: bits a second, or a number with kbit, Mbit or
// Gbit.
type bitrate float64

func (b *bitrate) String() string { return strconv.FormatFloat(float64(*b), 'f', -1, 64) }

func (b *bitrate) Set(s string) error {
	v, err := load.ParseBitrate(s)
	if err != nil {
		return err
	}
	*b = bitrate(v)
	return nil
}
