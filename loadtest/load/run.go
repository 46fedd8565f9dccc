package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Config describes one run. Validated once by Run.
type Config struct {
	// URL is the server's base URL, e.g. "http://127.0.0.1:8080".
	URL string
	// Plan is what each session walks.
	Plan Plan
	// Sessions is the number of concurrent players, each on its own
	// keep-alive connection. 0 is allowed with IdleConns > 0: the run then
	// only holds idle connections for Duration.
	Sessions int
	// Rate is each session's requests per second; 0 means as fast as it
	// can.
	Rate float64
	// Bitrate, if > 0, caps each session's body reads at this many bits
	// a second, like a player on a link of that speed; 0 reads as fast as
	// the server sends. Fetch times then include the pacing: a body of N
	// bytes takes at least N*8/Bitrate.
	Bitrate float64
	// Pause is how long a session waits after each response before its
	// next request: a player whose buffer is full. 0 for none.
	Pause time.Duration
	// Stagger, if > 0, delays each session's first request by a random
	// time below it, so that paced players do not ask in lockstep; the
	// run's Duration includes it.
	Stagger time.Duration
	// Duration bounds the run; it must be positive.
	Duration time.Duration
	// Requests, if > 0, ends the run after this many requests in all.
	Requests int64
	// Verify says what bodies are checked against.
	Verify VerifyMode
	// Root is the local copy of the served directory, for VerifyRoot.
	Root string
	// IdleConns is the number of idle keep-alive connections held open
	// beside the sessions (W5). Each makes one GET of IdlePath, reads the
	// response and then sends nothing until the run ends.
	IdleConns int
	// IdlePath is what each idle connection asks for once; "/" if empty.
	IdlePath string
	// Timeout bounds one request, body included; 30 s if zero.
	Timeout time.Duration
	// Progress, if not nil, gets a line per second, and each of the first
	// MaxErrorSamples errors as it happens.
	Progress io.Writer
	// MaxErrorSamples is how many errors Result keeps in full; 20 if zero.
	MaxErrorSamples int
	// Seed makes the sessions' random starting points repeatable; 0 picks
	// a random seed.
	Seed uint64
	// Revalidate makes each session ask for a whole file it has fetched
	// before with If-None-Match and the ETag it saw (a player or cache
	// revalidating, W6): the answer must be 304 with that ETag and no
	// body. Ranged requests and bodies the walk reads (HLS playlists) are
	// always asked in full.
	Revalidate bool
}

func (c *Config) validate() error {
	var errs []error
	u, err := url.Parse(c.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		errs = append(errs, fmt.Errorf("URL %q: want http://host:port", c.URL))
	}
	if c.Plan == nil && c.Sessions > 0 {
		errs = append(errs, errors.New("no plan"))
	}
	if c.Sessions < 0 || c.IdleConns < 0 || c.Requests < 0 || c.Rate < 0 || c.Bitrate < 0 || c.Pause < 0 || c.Stagger < 0 {
		errs = append(errs, errors.New("sessions, idle connections, requests, rate, bitrate, pause and stagger must not be negative"))
	}
	if c.Sessions == 0 && c.IdleConns == 0 {
		errs = append(errs, errors.New("nothing to do: no sessions and no idle connections"))
	}
	if c.Duration <= 0 {
		errs = append(errs, errors.New("duration must be positive: every run is bounded"))
	}
	if c.Verify == VerifyRoot && c.Root == "" {
		errs = append(errs, errors.New("verify root needs a root directory"))
	}
	if c.Timeout == 0 {
		c.Timeout = 30 * time.Second
	}
	if c.MaxErrorSamples == 0 {
		c.MaxErrorSamples = 20
	}
	if c.IdlePath == "" {
		c.IdlePath = "/"
	}
	if c.Seed == 0 {
		c.Seed = rand.Uint64()
	}
	return errors.Join(errs...)
}

// RequestError is a failed request: what was asked, and why it failed.
type RequestError struct {
	URL   string
	Range string // the Range header sent, or ""
	Err   error
}

func (e *RequestError) Error() string {
	if e.Range != "" {
		return fmt.Sprintf("GET %s (Range: %s): %v", e.URL, e.Range, e.Err)
	}
	return fmt.Sprintf("GET %s: %v", e.URL, e.Err)
}

func (e *RequestError) Unwrap() error { return e.Err }

// runner is the state of one Run shared by its sessions.
type runner struct {
	cfg  Config
	base string // scheme://host, no trailing slash

	// Counters, read by the progress line while sessions add to them.
	claimed  atomic.Int64 // requests started (for Config.Requests)
	requests atomic.Int64 // requests finished, failed ones included
	errors   atomic.Int64 // failed requests
	bytes    atomic.Int64 // body bytes received

	mu      sync.Mutex // protects samples
	samples []error
}

// Run runs the load described by cfg and returns its result. The error is
// for an invalid configuration only; failed requests are counted in
// Result.Errors and sampled in Result.ErrorSamples.
func Run(ctx context.Context, cfg Config) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, fmt.Errorf("load: %w", err)
	}
	u, _ := url.Parse(cfg.URL)
	r := &runner{cfg: cfg, base: u.Scheme + "://" + u.Host}
	// Idle connections first, so that the sessions run beside them; the
	// run's Duration starts once they are open (opening is bounded too).
	dialCtx, dialCancel := context.WithTimeout(ctx, cfg.Duration)
	idle := openIdle(dialCtx, u.Host, cfg.IdlePath, cfg.IdleConns)
	dialCancel()
	if cfg.IdleConns > 0 && cfg.Progress != nil {
		fmt.Fprintf(cfg.Progress, "idle connections open: %d (failed %d)\n", idle.open.Load(), idle.failed.Load())
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Duration)
	defer cancel()

	start := time.Now()
	progressDone := make(chan struct{})
	go func() { // owned by Run: ends when ctx does, Run waits for it
		defer close(progressDone)
		r.progress(ctx, start, idle)
	}()

	hists := make([]sessionHists, cfg.Sessions)
	var wg sync.WaitGroup
	for i := range cfg.Sessions {
		wg.Go(func() { r.session(ctx, i, &hists[i]) })
	}
	wg.Wait()
	if cfg.Sessions == 0 {
		<-ctx.Done() // only idle connections: hold them for Duration
	}
	elapsed := time.Since(start)
	idleOpen, idleLost := idle.open.Load(), idle.lost.Load()
	cancel()
	idle.close()
	<-progressDone

	var h, ttfb histogram
	for i := range hists {
		h.merge(&hists[i].fetch)
		ttfb.merge(&hists[i].ttfb)
	}
	r.mu.Lock()
	samples := r.samples
	r.mu.Unlock()
	return Result{
		Plan:         planString(cfg.Plan),
		Sessions:     cfg.Sessions,
		Requests:     r.requests.Load(),
		Errors:       r.errors.Load(),
		Bytes:        r.bytes.Load(),
		Elapsed:      elapsed,
		P50:          h.quantile(0.50),
		P90:          h.quantile(0.90),
		P99:          h.quantile(0.99),
		P999:         h.quantile(0.999),
		Max:          h.max,
		Mean:         h.mean(),
		TTFBP50:      ttfb.quantile(0.50),
		TTFBP90:      ttfb.quantile(0.90),
		TTFBP99:      ttfb.quantile(0.99),
		TTFBP999:     ttfb.quantile(0.999),
		TTFBMax:      ttfb.max,
		TTFBMean:     ttfb.mean(),
		Bitrate:      cfg.Bitrate,
		Pause:        cfg.Pause,
		ErrorSamples: samples,
		IdleOpen:     int(idleOpen),
		IdleLost:     int(idleLost),
		IdleFailed:   int(idle.failed.Load()),
	}, nil
}

func planString(p Plan) string {
	if p == nil {
		return "none"
	}
	return p.String()
}

// claim takes one request from Config.Requests; false when none are left.
func (r *runner) claim() bool {
	return r.cfg.Requests == 0 || r.claimed.Add(1) <= r.cfg.Requests
}

// sessionHists are one session's latencies, merged by Run at the end.
type sessionHists struct {
	fetch histogram // request to the body's last byte
	ttfb  histogram // request written to the response's headers
}

// player is what one session's requests share.
type player struct {
	client *http.Client
	walk   walker
	buf    []byte     // the body copy buffer
	trace  *sentTrace // when the request was written
	pace   *pacer     // nil: unpaced
	// etags are the ETags this session saw, by URL (Config.Revalidate;
	// nil otherwise).
	etags map[string]string
}

// session is one player: its own connection, its own walk, its own
// latency histograms. It returns at the deadline or the request limit.
func (r *runner) session(ctx context.Context, id int, h *sessionHists) {
	tr := &http.Transport{
		Proxy:               nil, // loopback load: never through a proxy
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
		DisableCompression:  true,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		IdleConnTimeout:     time.Minute,
		ReadBufferSize:      64 << 10,
	}
	defer tr.CloseIdleConnections()
	rng := rand.New(rand.NewPCG(r.cfg.Seed, uint64(id)))
	p := &player{
		client: &http.Client{
			Transport:     tr,
			Timeout:       r.cfg.Timeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		walk:  r.cfg.Plan.walker(r.base, rng),
		buf:   make([]byte, 64<<10),
		trace: &sentTrace{base: time.Now()},
	}
	if r.cfg.Bitrate > 0 {
		p.pace = newPacer(r.cfg.Bitrate)
	}
	if r.cfg.Revalidate {
		p.etags = make(map[string]string)
	}
	reqCtx := p.trace.context(ctx)
	var interval time.Duration
	if r.cfg.Rate > 0 {
		interval = time.Duration(float64(time.Second) / r.cfg.Rate)
	}
	next := time.Now()
	if r.cfg.Stagger > 0 {
		next = next.Add(time.Duration(rng.Int64N(int64(r.cfg.Stagger))))
		if !sleepUntil(ctx, next) {
			return
		}
	}
	for ctx.Err() == nil && r.claim() {
		if interval > 0 {
			if !sleepUntil(ctx, next) {
				return
			}
			next = next.Add(interval)
		}
		s := p.walk.next()
		t0 := time.Now()
		n, ttfb, err := r.fetch(reqCtx, p, s)
		d := time.Since(t0)
		if err != nil && ctx.Err() != nil {
			// Cut off by the end of the run: not a server error, but the
			// bytes came (a paced run ends with every session mid-body).
			r.bytes.Add(n)
			return
		}
		r.requests.Add(1)
		r.bytes.Add(n)
		if err != nil {
			r.fail(err)
			// A refused or broken server must not turn into a busy loop.
			if !sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) {
				return
			}
			continue
		}
		h.fetch.add(d)
		h.ttfb.add(ttfb)
		if r.cfg.Pause > 0 && !sleepUntil(ctx, time.Now().Add(r.cfg.Pause)) {
			return
		}
	}
}

// sleepUntil waits for t or the end of ctx; false if ctx ended.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func (r *runner) fail(err error) {
	r.errors.Add(1)
	r.mu.Lock()
	keep := len(r.samples) < r.cfg.MaxErrorSamples
	if keep {
		r.samples = append(r.samples, err)
	}
	r.mu.Unlock()
	if keep && r.cfg.Progress != nil {
		fmt.Fprintf(r.cfg.Progress, "error: %v\n", err)
	}
}

// progress prints a line per second until ctx ends.
func (r *runner) progress(ctx context.Context, start time.Time, idle *idleSet) {
	if r.cfg.Progress == nil {
		<-ctx.Done()
		return
	}
	tk := time.NewTicker(time.Second)
	defer tk.Stop()
	var lastReq, lastBytes int64
	last := start
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tk.C:
			req, b := r.requests.Load(), r.bytes.Load()
			dt := now.Sub(last).Seconds()
			line := fmt.Sprintf("%4.0fs %9.0f req/s %9.1f MiB/s %6d errors",
				now.Sub(start).Seconds(), float64(req-lastReq)/dt, float64(b-lastBytes)/dt/(1<<20), r.errors.Load())
			if r.cfg.IdleConns > 0 {
				line += fmt.Sprintf(" %6d idle", idle.open.Load())
			}
			fmt.Fprintln(r.cfg.Progress, line)
			lastReq, lastBytes, last = req, b, now
		}
	}
}
