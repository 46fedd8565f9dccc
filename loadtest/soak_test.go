package loadtest_test

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
	"segorigin/loadtest/load"
	"segorigin/loadtest/verify"
)

var soakDuration = flag.Duration("soak", 2*time.Minute, "how long TestSoak loads and churns (longer runs: -soak 30m)")

// TestSoak: the verifying load client against the real server while a churn
// process renames, truncates, deletes and creates files. Pass: zero
// mismatched bytes, zero unexpected statuses, and the server's descriptors
// and goroutines back to their baseline at the end.
func TestSoak(t *testing.T) {
	testreq.Slow(t, "loads and churns for -soak (2m)")
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	const stable, churned = 40, 24
	w1 := synth.Workloads()[0]
	w1.Count, w1.Size = stable, 512<<10
	for i := range stable {
		writeSynthFile(t, filepath.Join(root, w1.Path(i)), 512<<10)
	}
	for i := range churned {
		writeSynthFile(t, churnPath(root, i), int64(64<<10+i*4096))
	}
	srv := startSoakServer(t, bin, root)

	// Warm up, then take the baseline the end is compared with.
	mustLoad(t, srv.addr, load.SynthPlan{Workload: w1}, 2*time.Second)
	baseFDs, baseG := srv.fds(t), srv.goroutines(t)
	t.Logf("baseline: %d fds, %d goroutines; soak for %v", baseFDs, baseG, *soakDuration)

	ctx, cancel := context.WithTimeout(context.Background(), *soakDuration)
	defer cancel()
	var wg sync.WaitGroup
	var churns atomic.Int64
	var cuts truncations
	wg.Go(func() { churn(ctx, t, root, churned, &churns, &cuts) })
	var st churnStats
	for range 4 {
		wg.Go(func() { readChurned(ctx, t, srv.addr, churned, &st, &cuts) })
	}
	res, err := load.Run(ctx, load.Config{
		URL: "http://" + srv.addr, Plan: load.SynthPlan{Workload: w1}, Sessions: 8,
		Duration: *soakDuration, Verify: load.VerifySynth, IdleConns: 200, IdlePath: "/" + w1.Path(0),
	})
	wg.Wait()
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	t.Logf("stable set: %d requests, %d errors, %.0f MiB/s, p99 %v; churned set: %d responses (%d 200/206 verified, %d 404, %d 416, %d 503 in progress, %d cut short by a truncation, %d with zeros in a truncated folio), %d churn operations",
		res.Requests, res.Errors, res.MiBPerSecond(), res.P99, st.total.Load(), st.ok.Load(), st.missing.Load(), st.unsatisfiable.Load(), st.inProgress.Load(), st.cut.Load(), st.pageTail.Load(), churns.Load())
	if res.Errors > 0 {
		t.Errorf("stable set: %d errors, first: %v", res.Errors, res.ErrorSamples)
	}
	if n := st.bad.Load(); n > 0 {
		t.Errorf("churned set: %d mismatched or unexpected responses", n)
	}
	if st.ok.Load() == 0 || churns.Load() == 0 {
		t.Errorf("the soak did nothing: %d verified churned responses, %d churn operations", st.ok.Load(), churns.Load())
	}
	// Descriptors: the cache may hold more files than at the baseline
	// (churn created some), never more than the churned set; connections
	// and in-flight bodies must all be gone. Goroutines: none serving a
	// connection or a body (fasthttp's idle workers wait in its pool for
	// up to 10 s and are not a leak), and the total back near the baseline.
	deadline := time.Now().Add(30 * time.Second)
	for {
		fds, g, serving := srv.fds(t), srv.goroutines(t), srv.serving(t)
		if fds <= baseFDs+churned && serving == 0 && g <= baseG+4 {
			t.Logf("end: %d fds, %d goroutines", fds, g)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not back to baseline 30s after the load: %d fds (baseline %d), %d goroutines (baseline %d), %d serving a connection", fds, baseFDs, g, baseG, serving)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func churnPath(root string, i int) string {
	return filepath.Join(root, "churn", fmt.Sprintf("d%d", i%3), fmt.Sprintf("c%02d.m4s", i))
}

func writeSynthFile(t *testing.T, path string, size int64) {
	t.Helper()
	if err := synth.WriteFile(path, filepath.Base(path), size); err != nil {
		t.Fatal(err)
	}
}

// churn rewrites the churned set until ctx is done. Every version of a file
// holds synth bytes of its own name, so any byte served at offset i must be
// synth(name, i) whatever version it came from; sizes change, so responses
// may be cut short or answered 404 or 416, never with a wrong byte.
func churn(ctx context.Context, t *testing.T, root string, n int, ops *atomic.Int64, cuts *truncations) {
	rng := rand.New(rand.NewPCG(1, 2))
	for ctx.Err() == nil {
		i := rng.IntN(n)
		p := churnPath(root, i)
		name := filepath.Base(p)
		size := int64(16<<10 + rng.IntN(1<<20))
		var err error
		switch rng.IntN(5) {
		case 0, 1: // atomic replace by rename, as packagers do
			tmp := p + ".tmp"
			if err = synth.WriteFile(tmp, name, size); err == nil {
				err = os.Rename(tmp, p)
			}
		case 2: // truncate in place (only ever shrinking: extending would add zeros)
			var fi os.FileInfo
			if fi, err = os.Stat(p); err == nil {
				cuts.add(name, fi.Size()/2)
				err = os.Truncate(p, fi.Size()/2)
			}
		case 3: // delete
			err = os.Remove(p)
		case 4: // create where missing, written as a packager writes a new segment
			if _, err = os.Stat(p); errors.Is(err, os.ErrNotExist) {
				err = synth.WriteFile(p, name, size)
			}
		}
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Errorf("churn: %v", err)
			return
		}
		ops.Add(1)
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
		}
	}
}

type churnStats struct {
	total, ok, missing, unsatisfiable, cut, bad atomic.Int64
	pageTail                                    atomic.Int64 // responses with zeros in the page a truncation cut
	inProgress                                  atomic.Int64 // 503s for an empty segment (being created, or truncated to nothing)
}

// truncations remembers, per file name, every size a file was truncated to.
type truncations struct {
	mu sync.Mutex         // protects at
	at map[string][]int64 // name → truncation points
}

func (c *truncations) add(name string, size int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at == nil {
		c.at = map[string][]int64{}
	}
	c.at[name] = append(c.at[name], size)
}

// maxFolio is the largest page-cache folio (a PMD, 2 MiB on x86-64).
const maxFolio = 2 << 20

// inCutFolio reports whether offset o lies in [T, end of T's folio) for a
// truncation point T of name: the bytes truncate(2) zeroes in place.
func (c *truncations) inCutFolio(name string, o int64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, T := range c.at[name] {
		if o >= T && o < (T/maxFolio+1)*maxFolio {
			return true
		}
	}
	return false
}

// checkBody compares body with synth(name) from off. A byte may differ only
// by being zero at or after a point the file was truncated to, inside the
// folio holding that point: sendfile shares page-cache folios with the
// socket (that is zero copy), and truncate(2) zeroes the rest of the folio
// holding the new end in place (with large folios, many pages), even while
// it is queued for sending. Seen here: whole pages of zeros after a
// truncation point, in responses that completed. nginx's sendfile shares
// the property; atomic rename, the way packagers publish, never shows it.
// It returns whether such zeros were seen, or an error for any other
// difference.
func checkBody(name string, off int64, body []byte, cuts *truncations) (pageTail bool, err error) {
	want := make([]byte, len(body))
	synth.Fill(name, off, want)
	for i := range body {
		if body[i] == want[i] {
			continue
		}
		o := off + int64(i)
		if body[i] == 0 && cuts.inCutFolio(name, o) {
			pageTail = true
			continue
		}
		return pageTail, fmt.Errorf("%s: byte at offset %d is %#x, want %#x", name, o, body[i], want[i])
	}
	return pageTail, nil
}

// readChurned fetches churned files, whole or a Range, and checks every
// byte that arrives against synth.
func readChurned(ctx context.Context, t *testing.T, addr string, n int, st *churnStats, cuts *truncations) {
	tr := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 1}
	defer tr.CloseIdleConnections()
	cl := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for ctx.Err() == nil {
		i := rng.IntN(n)
		rel := strings.TrimPrefix(filepath.ToSlash(churnPath("", i)), "/")
		name := filepath.Base(rel)
		req, _ := http.NewRequest("GET", "http://"+addr+"/"+rel, nil)
		var off int64
		if rng.IntN(2) == 0 {
			off = int64(rng.IntN(256 << 10))
			req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+int64(rng.IntN(128<<10))))
		}
		resp, err := cl.Do(req)
		if err != nil {
			if ctx.Err() == nil {
				st.bad.Add(1)
				t.Errorf("GET %s: %v", rel, err)
			}
			continue
		}
		st.total.Add(1)
		body, rerr := io.ReadAll(resp.Body)
		resp.Body.Close()
		switch resp.StatusCode {
		case 200, 206:
			if resp.StatusCode == 206 {
				first, _, _, err := verify.ParseContentRange(resp.Header.Get("Content-Range"))
				if err != nil {
					st.bad.Add(1)
					t.Errorf("GET %s: %v", rel, err)
					continue
				}
				off = first
			} else {
				off = 0
			}
			cut := rerr != nil || int64(len(body)) != resp.ContentLength
			pageTail, err := checkBody(name, off, body, cuts)
			if err != nil {
				st.bad.Add(1)
				t.Errorf("GET %s (Range %q, cut short %v): %v", rel, req.Header.Get("Range"), cut, err)
				continue
			}
			if pageTail {
				st.pageTail.Add(1)
			}
			if cut {
				st.cut.Add(1)
				continue
			}
			st.ok.Add(1)
		case 404:
			st.missing.Add(1)
		case 416:
			st.unsatisfiable.Add(1)
		case 503:
			// A file being created in place, or one truncated to
			// nothing, is an empty segment: in progress, never cached.
			if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("Retry-After") == "" {
				st.bad.Add(1)
				t.Errorf("GET %s: 503 with Cache-Control %q, Retry-After %q; want no-store and a Retry-After",
					rel, resp.Header.Get("Cache-Control"), resp.Header.Get("Retry-After"))
				continue
			}
			st.inProgress.Add(1)
		default:
			st.bad.Add(1)
			t.Errorf("GET %s: unexpected status %d", rel, resp.StatusCode)
		}
	}
}

func mustLoad(t *testing.T, addr string, plan load.Plan, d time.Duration) {
	t.Helper()
	res, err := load.Run(context.Background(), load.Config{URL: "http://" + addr, Plan: plan, Sessions: 4, Duration: d, Verify: load.VerifySynth})
	if err != nil || res.Errors > 0 {
		t.Fatalf("warm-up: %v, %d errors %v", err, res.Errors, res.ErrorSamples)
	}
}

// soakServer is the real binary with its admin listener.
type soakServer struct {
	addr, admin string
	pid         int
}

// startSoakServer runs the binary with an admin listener; the test's
// cleanup stops it (SIGTERM, SIGKILL after 40 s).
func startSoakServer(t *testing.T, bin, root string) *soakServer {
	t.Helper()
	cmd := exec.Command(bin, "-root", root, "-settle", "0", "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-admin-pprof", "-cache-files", "256")
	p := testproc.Start(t, cmd, testproc.Timeout(15*time.Second))
	t.Cleanup(func() { p.Terminate(40 * time.Second) })
	return &soakServer{addr: p.Addr("http"), admin: p.Addr("admin"), pid: p.PID()}
}

func (s *soakServer) fds(t *testing.T) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", s.pid))
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

var goroutinesRE = regexp.MustCompile(`(?m)^go_goroutines (\d+)`)

func (s *soakServer) goroutines(t *testing.T) int {
	resp, err := http.Get("http://" + s.admin + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := goroutinesRE.FindSubmatch(b)
	if m == nil {
		t.Fatal("no go_goroutines in /metrics")
	}
	n, _ := strconv.Atoi(string(m[1]))
	return n
}

// serving counts the server's goroutines that serve a connection or send a
// body, from its pprof goroutine dump.
func (s *soakServer) serving(t *testing.T) int {
	resp, err := http.Get("http://" + s.admin + "/debug/pprof/goroutine?debug=2")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	n := 0
	for _, g := range strings.Split(string(b), "\n\n") {
		if strings.Contains(g, "fasthttp.(*Server).serveConn") || strings.Contains(g, "origin.(*bodyStream)") {
			n++
		}
	}
	return n
}
