package main

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"segorigin/internal/ktlsvm"
)

// The measure plan (ktlsvm.PlanMeasure): what an HTTPS connection served
// by the event loops costs against a plain HTTP one, in one boot, so
// that the emulated CPU cancels out of the ratios.
const (
	// measureConns idle connections are held open on each server; the
	// first tenth warms it up, the rest are measured.
	measureConns = 10_000
	// measureDialers open them concurrently.
	measureDialers = 16
	// measureRequests per file (an inline playlist, a sendfile
	// segment), one after the other on one connection, make the
	// system-call count.
	measureRequests = 400
	// rssBudget is how much more an idle HTTPS connection may cost the
	// server than a plain one.
	rssBudget = 1536
	// straceBin is where the host puts strace in the guest.
	straceBin = "/usr/bin/strace"
)

// measure runs both measurements and reports each as a result.
func (e *env) measure() {
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &syscall.Rlimit{Cur: 4 * measureConns, Max: 4 * measureConns}); err != nil {
		e.rep.Result(ktlsvm.MeasureRSS, fmt.Errorf("RLIMIT_NOFILE: %w", err))
		return
	}
	e.rep.Result(ktlsvm.MeasureRSS, e.measureRSS())
	e.rep.Result(ktlsvm.MeasureSyscalls, e.measureSyscalls())
}

// measureRSS holds measureConns idle connections, each after one
// request, on a fresh server per protocol, and compares the growth of
// the server's resident memory (after a collection) per connection.
func (e *env) measureRSS() error {
	per := map[string]float64{}
	for _, proto := range []string{"http", "https"} {
		s, err := e.startServer("rss-"+proto, "127.0.0.1", "auto", longWriteTimeout, nil, "-idle-timeout", "1h", "-admin-pprof")
		if err != nil {
			return err
		}
		var conns []net.Conn
		p, heap, err := e.rssPerConn(s, proto, &conns)
		for _, c := range conns {
			c.Close()
		}
		if serr := s.stop(); err == nil {
			err = serr
		}
		if err != nil {
			return fmt.Errorf("%s: %w", proto, err)
		}
		per[proto] = p
		e.rep.Info("measure rss %s: %.0f bytes resident, %.0f bytes of Go heap in use per idle connection (%d connections)", proto, p, heap, measureConns)
	}
	d := per["https"] - per["http"]
	e.rep.Info("measure rss: an idle HTTPS connection costs %.0f bytes more than a plain one (%.2fx)", d, per["https"]/per["http"])
	if d > rssBudget {
		return fmt.Errorf("an idle HTTPS connection costs %.0f bytes more than a plain one, want at most %d", d, rssBudget)
	}
	return nil
}

// rssPerConn opens the connections (into conns, for the caller to close)
// and returns the growth per connection of the server's resident set and
// of its heap in use, from the first tenth to all.
func (e *env) rssPerConn(s *server, proto string, conns *[]net.Conn) (rss, heap float64, err error) {
	warm := measureConns / 10
	if err := openIdle(s, proto, warm, conns); err != nil {
		return 0, 0, err
	}
	rss0, heap0, err := serverMemory(s)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	if err := openIdle(s, proto, measureConns-warm, conns); err != nil {
		return 0, 0, err
	}
	rss1, heap1, err := serverMemory(s)
	if err != nil {
		return 0, 0, err
	}
	n := float64(measureConns - warm)
	e.rep.Info("measure: %d %s connections opened in %.1f s", measureConns-warm, proto, time.Since(start).Seconds())
	return (rss1 - rss0) / n, (heap1 - heap0) / n, nil
}

// openIdle opens n connections to s, each answered one request, and
// leaves them open.
func openIdle(s *server, proto string, n int, conns *[]net.Conn) error {
	var mu sync.Mutex
	var wg sync.WaitGroup
	var errs []error
	next := make(chan int, n)
	for i := range n {
		next <- i
	}
	close(next)
	cfg := measureTLS(s)
	for range measureDialers {
		wg.Go(func() {
			for range next {
				c, err := dialMeasure(s, proto, cfg)
				if err == nil {
					err = getOn(c, bufio.NewReaderSize(c, 2048), "/play.m3u8", s.sizes["/play.m3u8"])
				}
				mu.Lock()
				if c != nil {
					*conns = append(*conns, c)
				}
				if err != nil {
					errs = append(errs, err)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%d of %d connections failed, first: %w", len(errs), n, errs[0])
	}
	return nil
}

// measureTLS is the measuring client's TLS: the server's own certificate
// (its fingerprint as it logged it), and sessions resumed, which spares
// the emulated CPU a signature per connection.
func measureTLS(s *server) *tls.Config {
	return &tls.Config{
		InsecureSkipVerify: true, // checked by fingerprint
		VerifyConnection:   func(st tls.ConnectionState) error { return checkCert(st, s.cert) },
		ClientSessionCache: tls.NewLRUClientSessionCache(64),
		// X25519 alone: the post-quantum hybrid Go offers first costs the
		// emulated CPU far more, and the key exchange is not measured.
		CurvePreferences: []tls.CurveID{tls.X25519},
		NextProtos:       []string{"http/1.1"},
	}
}

func dialMeasure(s *server, proto string, cfg *tls.Config) (net.Conn, error) {
	d := net.Dialer{Timeout: 30 * time.Second}
	if proto == "http" {
		return d.Dial("tcp", s.http)
	}
	return tls.DialWithDialer(&d, "tcp", s.https, cfg)
}

// getOn asks for path on c and reads the answer, which must be 200 with
// size bytes.
func getOn(c net.Conn, br *bufio.Reader, path string, size int64) error {
	c.SetDeadline(time.Now().Add(connDeadline))
	if _, err := io.WriteString(c, request("GET", path)); err != nil {
		return err
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		return err
	}
	n, err := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	switch {
	case err != nil:
		return err
	case resp.StatusCode != http.StatusOK || n != size:
		return fmt.Errorf("GET %s: %d with %d bytes, want 200 with %d", path, resp.StatusCode, n, size)
	}
	return nil
}

// serverMemory collects the server's garbage (pprof's heap profile with
// gc=1), then reads its resident set (VmRSS) and its Go heap in use.
func serverMemory(s *server) (rss, heap float64, err error) {
	c := http.Client{Timeout: 60 * time.Second}
	resp, err := c.Get("http://" + s.admin + "/debug/pprof/heap?gc=1")
	if err != nil {
		return 0, 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	time.Sleep(2 * time.Second)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0, 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) == 3 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseFloat(f[1], 64)
			rss = kb * 1024
		}
	}
	m, err := scrape(s.admin)
	if err != nil {
		return 0, 0, err
	}
	return rss, m["go_memstats_heap_inuse_bytes"], nil
}

// measureSyscalls counts, with strace -f -c attached to a fresh server,
// the system calls of measureRequests requests for each file on one
// kept-alive connection, plain HTTP then HTTPS (its handshake done
// before strace attaches), and compares them per request.
func (e *env) measureSyscalls() error {
	s, err := e.startServer("syscalls", "127.0.0.1", "auto", longWriteTimeout, nil)
	if err != nil {
		return err
	}
	defer s.stop()
	per := map[string]float64{}
	for _, proto := range []string{"http", "https"} {
		c, err := dialMeasure(s, proto, measureTLS(s))
		if err != nil {
			return err
		}
		calls, err := straceRequests(s, c)
		c.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", proto, err)
		}
		const reqs = 2 * measureRequests
		var all, io int
		var each []string
		for _, name := range slices.Sorted(maps.Keys(calls)) {
			n := calls[name]
			all += n
			if !runtimeCalls[name] {
				io += n
			}
			if n >= reqs/20 {
				each = append(each, fmt.Sprintf("%s=%.2f", name, float64(n)/reqs))
			}
		}
		per[proto] = float64(io) / reqs
		e.rep.Info("measure syscalls %s: %.2f per request, %.2f without the runtime's clock, sleeps and waits (%d requests; per request: %s)",
			proto, float64(all)/reqs, per[proto], reqs, strings.Join(each, " "))
	}
	e.rep.Info("measure syscalls: HTTPS on the loops makes %.2fx the system calls of plain HTTP per request, without the runtime's", per["https"]/per["http"])
	return nil
}

// runtimeCalls are the Go runtime's own system calls: timekeeping (the
// emulated guest has no vDSO clock, so every clock read is a call), its
// threads' sleeps and wake-ups, and the loops' waits. Their count follows
// the time a run takes under strace, not the requests.
var runtimeCalls = map[string]bool{
	"clock_gettime": true, "futex": true, "nanosleep": true, "sched_yield": true,
	"epoll_pwait": true, "epoll_wait": true, "rt_sigreturn": true, "tgkill": true, "getpid": true,
}

// straceRequests warms c up, then runs the requests under strace and
// returns its count of the server's system calls, by name.
func straceRequests(s *server, c net.Conn) (map[string]int, error) {
	br := bufio.NewReaderSize(c, 64<<10)
	files := []string{"/play.m3u8", "/seg.m4s"}
	for range 10 {
		for _, f := range files {
			if err := getOn(c, br, f, s.sizes[f]); err != nil {
				return nil, err
			}
		}
	}
	out := "/tmp/strace.txt"
	st := exec.Command(straceBin, "-f", "-c", "-S", "calls", "-o", out, "-p", strconv.Itoa(s.cmd.Process.Pid))
	stderr, err := st.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := st.Start(); err != nil {
		return nil, err
	}
	if err := waitAttached(stderr); err != nil {
		st.Process.Kill()
		st.Wait()
		return nil, err
	}
	go io.Copy(io.Discard, stderr) // ends at strace's exit
	for range measureRequests {
		for _, f := range files {
			if err := getOn(c, br, f, s.sizes[f]); err != nil {
				st.Process.Kill()
				st.Wait()
				return nil, err
			}
		}
	}
	// On SIGINT strace detaches, writes its table and ends by the
	// signal: its exit says nothing, the table does.
	st.Process.Signal(syscall.SIGINT)
	st.Wait()
	b, err := os.ReadFile(out)
	if err != nil {
		return nil, err
	}
	return parseStraceCount(string(b))
}

// waitAttached reads strace's stderr until it says it has attached
// ("Process N attached with M threads": -f -p takes every thread).
func waitAttached(r io.Reader) error {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "attached") {
			return nil
		}
	}
	return fmt.Errorf("strace ended before it attached: %v", sc.Err())
}

// parseStraceCount reads strace -c's table: the calls of each system
// call, by name.
func parseStraceCount(out string) (map[string]int, error) {
	calls := map[string]int{}
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) < 5 || strings.HasPrefix(l, "%") || strings.HasPrefix(l, "-") {
			continue
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		if name := f[len(f)-1]; name != "total" {
			calls[name] = n
		}
	}
	if len(calls) == 0 {
		return nil, errors.New("strace -c printed no table: " + out)
	}
	return calls, nil
}
