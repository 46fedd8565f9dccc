// Command coldload is loadtest/cold.sh's player-like client for a library
// bigger than the server's page cache. With -gen it writes the library:
// HLS titles (a media playlist and numbered .ts segments) and DASH titles
// (an MPD with a SegmentTemplate and numbered .m4s segments), synth bytes.
// Otherwise it runs sessions that each pick a title, fetch its playlist or
// manifest and walk its segments in order at -interval, refetching the
// playlist every -refetch segments (as live players do); at -burst-at it
// adds -burst one-off requests for random segments at once (a cold burst).
// It reports time to first byte (response headers) for playlists and
// segments, the playlists' p99 before and during the burst, the share of
// segment requests answered before -resident-under (a page-cache miss on
// the rig costs at least its read delay), the most threads the processes
// in -cgroup held, and, with -metrics (segorigin's /metrics), the share of
// segment responses segorigin found resident and what read-ahead did.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"segorigin/fixtures/synth"
)

type sample struct {
	ttfb  time.Duration
	kind  int // 0 playlist, 1 segment, 2 burst segment
	burst bool
	code  int
}

type run struct {
	base     string
	client   *http.Client
	titles   int
	segments int
	mu       sync.Mutex // protects samples
	samples  []sample
	inBurst  atomic.Bool
	errors   atomic.Int64
}

func main() {
	gen := flag.String("gen", "", "write the library below this directory and exit")
	titles := flag.Int("titles", 40, "titles (half HLS, half DASH)")
	segments := flag.Int("segments", 30, "segments per title")
	size := flag.Int64("size", 1<<20, "bytes per segment")
	url := flag.String("url", "http://127.0.0.1:8080", "server base URL")
	sessions := flag.Int("sessions", 40, "players")
	interval := flag.Duration("interval", 500*time.Millisecond, "time between one player's segment requests (playback pace)")
	refetch := flag.Int("refetch", 4, "refetch the playlist every N segments")
	duration := flag.Duration("duration", 20*time.Second, "run length")
	burst := flag.Int("burst", 500, "one-off concurrent requests for random segments at -burst-at")
	burstAt := flag.Duration("burst-at", 8*time.Second, "when the burst starts")
	residentUnder := flag.Duration("resident-under", 2*time.Millisecond, "a segment answered sooner counts as found resident")
	cgroup := flag.String("cgroup", "", "cgroup v1 directory whose processes' threads are sampled")
	label := flag.String("label", "", "label of the result row")
	metrics := flag.String("metrics", "", "segorigin /metrics URL, read at the end (optional)")
	flag.Parse()
	if *gen != "" {
		if err := generate(*gen, *titles, *segments, *size); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	r := &run{base: *url, titles: *titles, segments: *segments, client: &http.Client{
		Timeout:   30 * time.Second,
		Transport: &http.Transport{MaxIdleConnsPerHost: *sessions + *burst, DisableCompression: true},
	}}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var maxThreads atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() { sampleThreads(ctx, *cgroup, &maxThreads) })
	for i := range *sessions {
		wg.Go(func() { r.player(ctx, i, *interval, *refetch) })
	}
	wg.Go(func() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(*burstAt):
		}
		r.burst(ctx, *burst)
	})
	wg.Wait()
	r.report(*label, *residentUnder, maxThreads.Load(), scrape(*metrics))
}

// scrape reads what segorigin counted: the share of segment responses it
// found resident, and read-ahead's outcomes.
func scrape(url string) string {
	if url == "" {
		return "-"
	}
	resp, err := http.Get(url)
	if err != nil {
		return "?"
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	v := map[string]float64{}
	for _, l := range strings.Split(string(b), "\n") {
		name, val, ok := strings.Cut(l, " ")
		if !ok || strings.HasPrefix(l, "#") {
			continue
		}
		f, _ := strconv.ParseFloat(val, 64)
		v[name] = f
	}
	checked := v[`segorigin_cold_checked_total{kind="segment"}`]
	out := "-"
	if checked > 0 {
		out = fmt.Sprintf("%.0f%%", 100*v[`segorigin_cold_resident_total{kind="segment"}`]/checked)
	}
	ra := func(o string) int { return int(v[`segorigin_readahead_total{outcome="`+o+`"}`]) }
	return fmt.Sprintf("%s | %d / %d / %d / %d / %d", out, ra("issued"), ra("hit"), ra("wasted"), ra("unused"), ra("dropped"))
}

// player walks one title after another, in order, at the pace given.
func (r *run) player(ctx context.Context, id int, interval time.Duration, refetch int) {
	rng := rand.New(rand.NewPCG(uint64(id), 7))
	time.Sleep(time.Duration(rng.Int64N(int64(interval)))) // spread the sessions
	for ctx.Err() == nil {
		t := rng.IntN(r.titles)
		dash := t%2 == 1
		for seg := 0; seg < r.segments && ctx.Err() == nil; seg++ {
			if seg%refetch == 0 {
				r.get(ctx, playlistPath(t, dash), 0)
			}
			r.get(ctx, segmentPath(t, dash, seg), 1)
			select {
			case <-ctx.Done():
			case <-time.After(interval):
			}
		}
	}
}

// burst asks for n random segments at once, each on its own connection.
func (r *run) burst(ctx context.Context, n int) {
	r.inBurst.Store(true)
	defer r.inBurst.Store(false)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(i), 99))
			t := rng.IntN(r.titles)
			r.get(ctx, segmentPath(t, t%2 == 1, rng.IntN(r.segments)), 2)
		})
	}
	wg.Wait()
}

func (r *run) get(ctx context.Context, path string, kind int) {
	req, err := http.NewRequestWithContext(ctx, "GET", r.base+path, nil)
	if err != nil {
		r.errors.Add(1)
		return
	}
	start := time.Now()
	resp, err := r.client.Do(req)
	if err != nil {
		if ctx.Err() == nil {
			r.errors.Add(1)
		}
		return
	}
	// TTFB is to the first body byte: a server may send its header before
	// it has read anything (nginx does), and the player waits for bytes.
	var one [1]byte
	k, err := io.ReadFull(resp.Body, one[:])
	ttfb := time.Since(start)
	burst := r.inBurst.Load()
	if err == nil || k > 0 {
		_, err = io.Copy(io.Discard, resp.Body)
	}
	resp.Body.Close()
	if err != nil && ctx.Err() == nil {
		r.errors.Add(1)
	}
	r.mu.Lock()
	r.samples = append(r.samples, sample{ttfb: ttfb, kind: kind, burst: burst, code: resp.StatusCode})
	r.mu.Unlock()
}

func playlistPath(t int, dash bool) string {
	if dash {
		return fmt.Sprintf("/dash/t%03d/manifest.mpd", t)
	}
	return fmt.Sprintf("/hls/t%03d/index.m3u8", t)
}

func segmentPath(t int, dash bool, seg int) string {
	if dash {
		return fmt.Sprintf("/dash/t%03d/chunk-0-%04d.m4s", t, seg+1)
	}
	return fmt.Sprintf("/hls/t%03d/seg%04d.ts", t, seg)
}

// sampleThreads records the most threads the cgroup's processes hold.
func sampleThreads(ctx context.Context, cgroup string, max *atomic.Int64) {
	if cgroup == "" {
		return
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(filepath.Join(cgroup, "cgroup.procs"))
		if err != nil {
			continue
		}
		var n int64
		for _, pid := range strings.Fields(string(b)) {
			st, err := os.ReadFile("/proc/" + pid + "/status")
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(st), "\n") {
				if v, ok := strings.CutPrefix(l, "Threads:"); ok {
					k, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
					n += k
				}
			}
		}
		if n > max.Load() {
			max.Store(n)
		}
	}
}

func pct(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[min(len(d)-1, int(float64(len(d))*p))]
}

func ms(d time.Duration) string { return strconv.FormatFloat(float64(d)/1e6, 'f', 2, 64) }

func (r *run) report(label string, residentUnder time.Duration, threads int64, server string) {
	var plIdle, plBurst, seg, burstSeg []time.Duration
	var resident, burst503 int
	for _, s := range r.samples {
		switch {
		case s.kind == 0 && s.burst:
			plBurst = append(plBurst, s.ttfb)
		case s.kind == 0:
			plIdle = append(plIdle, s.ttfb)
		case s.kind == 1:
			seg = append(seg, s.ttfb)
			if s.ttfb < residentUnder {
				resident++
			}
		case s.kind == 2:
			burstSeg = append(burstSeg, s.ttfb)
			if s.code == 503 {
				burst503++
			}
		}
	}
	share := 0.0
	if len(seg) > 0 {
		share = 100 * float64(resident) / float64(len(seg))
	}
	if server == "-" {
		server = "- | -"
	}
	fmt.Printf("| %s | %s / %s | %s (n=%d) | %s / %s | %.0f%% | %s | %s / %s (503: %d of %d) | %d | %d |\n",
		label, ms(pct(plIdle, 0.5)), ms(pct(plIdle, 0.99)), ms(pct(plBurst, 0.99)), len(plBurst),
		ms(pct(seg, 0.5)), ms(pct(seg, 0.99)), share, server,
		ms(pct(burstSeg, 0.5)), ms(pct(burstSeg, 0.99)), burst503, len(burstSeg), threads, r.errors.Load())
}

// generate writes the library.
func generate(dir string, titles, segments int, size int64) error {
	for t := range titles {
		dash := t%2 == 1
		var pl strings.Builder
		if dash {
			fmt.Fprintf(&pl, `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT%dS" minBufferTime="PT2S" profiles="urn:mpeg:dash:profile:isoff-live:2011">
 <Period><AdaptationSet mimeType="video/mp4"><Representation id="0" bandwidth="2000000">
  <SegmentTemplate media="chunk-$RepresentationID$-$Number%%04d$.m4s" startNumber="1" duration="4" timescale="1"/>
 </Representation></AdaptationSet></Period>
</MPD>
`, 4*segments)
		} else {
			pl.WriteString("#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXT-X-PLAYLIST-TYPE:VOD\n")
		}
		for s := range segments {
			p := filepath.Join(dir, segmentPath(t, dash, s))
			if err := synth.WriteFile(p, filepath.Base(p), size); err != nil {
				return err
			}
			if !dash {
				fmt.Fprintf(&pl, "#EXTINF:4.0,\n%s\n", filepath.Base(p))
			}
		}
		if !dash {
			pl.WriteString("#EXT-X-ENDLIST\n")
		}
		if err := os.WriteFile(filepath.Join(dir, playlistPath(t, dash)), []byte(pl.String()), 0o644); err != nil {
			return err
		}
	}
	return nil
}
