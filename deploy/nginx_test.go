package deploy_test

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/template"
	"time"

	"segorigin/internal/testreq"
)

// shieldConfig fills deploy/nginx-shield.conf; its header comment documents
// each field for operators.
type shieldConfig struct {
	User        string
	Workers     int
	RunDir      string
	TempDir     string
	CacheDir    string
	CacheSize   string
	Listen      string
	Origins     []string
	FailTimeout string

	StreamModule string // ngx_stream_module.so to load; "" when StreamListen is ""
	StreamListen string // host:port of the PROXY protocol pass-through; "": none
}

// failTimeout is how long the test's shield keeps a failed origin out of
// the ring: short, so a restarted origin is back within the test.
const failTimeout = 2 * time.Second

// requireTools fails (never skips) when a tool the topology needs is
// missing, naming what installs it.
func requireTools(t *testing.T) {
	t.Helper()
	testreq.Root(t, "network namespaces and veth pairs for the origins")
	for _, tool := range []string{"ip", "nginx", "ffmpeg"} {
		testreq.Tool(t, tool, "run `make test` or `bash .ci/deps`, which installs iproute2, nginx and ffmpeg (Debian packages)")
	}
	out, _ := exec.Command("nginx", "-V").CombinedOutput()
	if !bytes.Contains(out, []byte("with-http_slice_module")) {
		t.Fatalf("this nginx lacks the slice module (nginx -V has no --with-http_slice_module): "+
			"run `make test` or `bash .ci/deps`, which installs Debian's nginx package (it has it)\n%s", out)
	}
}

// shield is a running nginx rendered from nginx-shield.conf.
type shield struct {
	base      string // http://127.0.0.1:PORT
	runDir    string
	accessLog string
	errorLog  string
	cmd       *exec.Cmd
	exited    chan error
}

// startShield renders the template for origins, checks it with nginx -t and
// runs nginx in the foreground (daemon off) in its own process group, so
// stopping it reaches its workers too.
func startShield(t *testing.T, dir string, origins []string) *shield {
	t.Helper()
	return startShieldWith(t, dir, origins, nil)
}

// startShieldWith is startShield with the configuration changed by mod.
func startShieldWith(t *testing.T, dir string, origins []string, mod func(*shieldConfig)) *shield {
	t.Helper()
	tmpl, err := template.ParseFiles("nginx-shield.conf")
	if err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	cfg := shieldConfig{
		User:        "root", // the test's temp dirs are root's; a real shield uses www-data
		Workers:     2,
		RunDir:      filepath.Join(dir, "run"),
		TempDir:     filepath.Join(dir, "tmp"),
		CacheDir:    filepath.Join(dir, "cache"),
		CacheSize:   "2g",
		Listen:      fmt.Sprintf("127.0.0.1:%d", port),
		Origins:     origins,
		FailTimeout: failTimeout.String(),
	}
	if mod != nil {
		mod(&cfg)
	}
	for _, d := range []string{cfg.RunDir, cfg.TempDir, cfg.CacheDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var conf bytes.Buffer
	if err := tmpl.Execute(&conf, cfg); err != nil {
		t.Fatal(err)
	}
	confPath := filepath.Join(dir, "nginx.conf")
	if err := os.WriteFile(confPath, conf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("nginx", "-t", "-c", confPath, "-p", dir).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t rejects the rendered nginx-shield.conf: %v\n%s\n%s", err, out, conf.String())
	}
	s := &shield{
		base:      "http://" + cfg.Listen,
		runDir:    cfg.RunDir,
		accessLog: filepath.Join(cfg.RunDir, "access.log"),
		errorLog:  filepath.Join(cfg.RunDir, "error.log"),
		exited:    make(chan error, 1),
	}
	cmd := exec.Command("nginx", "-c", confPath, "-p", dir, "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start nginx: %v", err)
	}
	s.cmd = cmd
	// This goroutine owns cmd.Wait and ends when the master exits.
	go func() { s.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			errs, _ := os.ReadFile(s.errorLog)
			t.Logf("nginx stderr:\n%s\nnginx error.log (last 4 KiB):\n%s", stderr.String(), tail(errs, 4096))
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", cfg.Listen, time.Second)
		if err == nil {
			c.Close()
			return s
		}
		select {
		case err := <-s.exited:
			s.exited <- err
			errs, _ := os.ReadFile(s.errorLog)
			t.Fatalf("nginx exited at start: %v\n%s\n%s", err, stderr.String(), errs)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("nginx not accepting on %s after 5s: %v", cfg.Listen, err)
		}
	}
}

// stop asks the master for a fast shutdown (SIGTERM) and, after 5 s,
// kills the process group it leads (the master and its workers).
func (s *shield) stop(t *testing.T) {
	select {
	case err := <-s.exited:
		s.exited <- err
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-s.exited:
		s.exited <- err
	case <-time.After(5 * time.Second):
		t.Errorf("nginx pid %d still running 5s after SIGTERM; killing its process group", s.cmd.Process.Pid)
		syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
}

func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}

// logLine is one access log line of the shield: a client request, or with
// log_subrequest one slice subrequest of it.
type logLine struct {
	at       time.Time
	request  string // "GET /path HTTP/1.1"
	status   int
	cache    string   // $upstream_cache_status: HIT, MISS, REVALIDATED, ... or "-"
	upstream []string // every origin tried, in order; the last one answered
	ustatus  string
	ubytes   int64
	ucr      string // Content-Range of the origin's answer ("-" on a hit)
}

var logRE = regexp.MustCompile(`^(\d+)\.(\d+) "([^"]*)" (\d+) \d+ cache=(\S*) up=(.*) ustatus=(.*) ubytes=(.*) ucr="([^"]*)" range="[^"]*"$`)

// readLog returns the access log lines written since byte offset off, and
// the offset after them. nginx writes each line with one write(2), so a
// read sees whole lines.
func (s *shield) readLog(t *testing.T, off int64) ([]logLine, int64) {
	t.Helper()
	data, err := os.ReadFile(s.accessLog)
	if err != nil {
		t.Fatal(err)
	}
	if off > int64(len(data)) {
		t.Fatalf("access log shrank below offset %d", off)
	}
	end := int64(bytes.LastIndexByte(data, '\n') + 1)
	if end < off {
		end = off
	}
	var lines []logLine
	sc := bufio.NewScanner(bytes.NewReader(data[off:end]))
	for sc.Scan() {
		m := logRE.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("access log line %q does not match the shield log_format", sc.Text())
		}
		sec, _ := strconv.ParseInt(m[1], 10, 64)
		ms, _ := strconv.ParseInt(m[2], 10, 64)
		status, _ := strconv.Atoi(m[4])
		l := logLine{
			at:      time.Unix(sec, ms*int64(time.Millisecond)),
			request: m[3],
			status:  status,
			cache:   m[5],
			ustatus: m[7],
			ucr:     m[9],
		}
		for _, b := range strings.FieldsFunc(m[8], func(r rune) bool { return r == ',' || r == ':' || r == ' ' }) {
			n, _ := strconv.ParseInt(b, 10, 64)
			l.ubytes += n
		}
		if m[6] != "-" && m[6] != "" {
			// "A, B" for a retry, "A : B" across internal redirects.
			for _, a := range strings.FieldsFunc(m[6], func(r rune) bool { return r == ',' || r == ' ' }) {
				if a != ":" {
					l.upstream = append(l.upstream, a)
				}
			}
		}
		lines = append(lines, l)
	}
	return lines, end
}

// path is the request's URL path.
func (l logLine) path() string {
	f := strings.Fields(l.request)
	if len(f) < 2 {
		return ""
	}
	p, _, _ := strings.Cut(f[1], "?")
	return p
}

// logStats sums a stretch of the access log: slice fetches per origin,
// failed attempts per origin, and cache statuses per slice.
type logStats struct {
	lines    int
	cache    map[string]int   // per slice (every line)
	fetches  map[string]int   // slices answered, per origin address
	mib      map[string]int64 // bytes received from each origin
	failures map[string]int   // attempts that failed over to the next origin
}

func summarize(lines []logLine) logStats {
	st := logStats{cache: map[string]int{}, fetches: map[string]int{}, mib: map[string]int64{}, failures: map[string]int{}}
	for _, l := range lines {
		st.lines++
		st.cache[l.cache]++
		if n := len(l.upstream); n > 0 {
			st.fetches[l.upstream[n-1]]++
			st.mib[l.upstream[n-1]] += l.ubytes
			for _, a := range l.upstream[:n-1] {
				st.failures[a]++
			}
		}
	}
	return st
}

// hitRatio is the share of slices the cache answered without an origin.
func (st logStats) hitRatio() float64 {
	if st.lines == 0 {
		return 0
	}
	return float64(st.cache["HIT"]) / float64(st.lines)
}

// perOrigin formats per-origin counts in the order of names (addr → label).
func (st logStats) perOrigin(addrs []string, labels []string) string {
	var parts []string
	for i, a := range addrs {
		s := fmt.Sprintf("%s=%d", labels[i], st.fetches[a])
		if st.mib[a] > 0 {
			s += fmt.Sprintf(" (%.1f MiB)", float64(st.mib[a])/(1<<20))
		}
		if f := st.failures[a]; f > 0 {
			s += fmt.Sprintf(" [%d failed over]", f)
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// cacheSummary formats cache statuses, most frequent first.
func (st logStats) cacheSummary() string {
	keys := make([]string, 0, len(st.cache))
	for k := range st.cache {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if st.cache[keys[i]] != st.cache[keys[j]] {
			return st.cache[keys[i]] > st.cache[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %d", k, st.cache[k]))
	}
	return strings.Join(parts, ", ")
}

// owners maps each path to the origin that answered its first slice fetch.
func owners(lines []logLine) map[string]string {
	m := map[string]string{}
	for _, l := range lines {
		if n := len(l.upstream); n > 0 {
			if _, ok := m[l.path()]; !ok {
				m[l.path()] = l.upstream[n-1]
			}
		}
	}
	return m
}

// checkSliceFetches fails unless every fetch the shield sent an origin was
// an aligned 1 MiB slice: answered 206 with Content-Range bytes
// k*1MiB-((k+1)*1MiB-1)/size (shorter only at the end of the file), 304
// when revalidating, or 416 for a 0-byte file.
func checkSliceFetches(t *testing.T, lines []logLine) {
	t.Helper()
	bad, fetches := 0, 0
	for _, l := range lines {
		if len(l.upstream) == 0 {
			continue
		}
		fetches++
		final := l.ustatus
		if i := strings.LastIndexAny(final, ", "); i >= 0 {
			final = final[i+1:]
		}
		// 304: a revalidation. 416 "bytes */0": the slice of a 0-byte file.
		ok := final == "304" || final == "416" && l.ucr == "bytes */0"
		var first, last, size int64
		if n, _ := fmt.Sscanf(l.ucr, "bytes %d-%d/%d", &first, &last, &size); n == 3 && final == "206" {
			ok = first%mib == 0 && (last == first+mib-1 || last == size-1 && last < first+mib)
		}
		if !ok {
			if bad < 5 {
				t.Errorf("shield fetched %s and the origin answered %s with Content-Range %q; want 206 for an aligned 1 MiB slice (or 304)",
					l.path(), l.ustatus, l.ucr)
			}
			bad++
		}
	}
	if bad > 5 {
		t.Errorf("... %d such fetches in all", bad)
	}
	t.Logf("%d origin fetches, all aligned 1 MiB slices", fetches)
}

var mismatchRE = regexp.MustCompile(`etag mismatch in slice response .*request: "GET (\S+) HTTP/[^"]*".*upstream: "http://([^/"]+)/`)

// mismatches reads the error log from byte offset off and returns, per
// path, the origin whose slice the slice module refused because its ETag
// differed from the first slice's.
func (s *shield) mismatches(t *testing.T, off int64) map[string]string {
	t.Helper()
	data, err := os.ReadFile(s.errorLog)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(string(data[min(off, int64(len(data))):]), "\n") {
		if g := mismatchRE.FindStringSubmatch(line); g != nil {
			m[g[1]] = g[2]
		}
	}
	return m
}

// fileSize is the size of the file at p, 0 if it does not exist.
func fileSize(t *testing.T, p string) int64 {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		return 0
	}
	return fi.Size()
}
