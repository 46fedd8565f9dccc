package main

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// start runs argv (the binary, possibly under strace or sh) and waits for
// its listening line.
//
// Tests that serve files they wrote a moment before pass -settle 0: the
// files are complete, and the settle rule would hold them back.
func start(t *testing.T, argv ...string) *testproc.Proc {
	t.Helper()
	return testproc.Start(t, exec.Command(argv[0], argv[1:]...))
}

// TestRunDefaults: the binary with no flags but -listen serves the bundled
// fixtures, logs its address and body paths, and exits 0 on SIGTERM.
func TestRunDefaults(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	// Run from the repository root so the default -root resolves.
	p := start(t, "sh", "-c", "cd ../.. && exec "+bin+" -listen 127.0.0.1:0")
	resp, err := http.Get("http://" + p.Addr("http") + "/hls/ts/master.m3u8")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.HasPrefix(string(body), "#EXTM3U") {
		t.Fatalf("GET master.m3u8: %d %q", resp.StatusCode, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.apple.mpegurl" {
		t.Errorf("Content-Type %q", ct)
	}
	p.Stop(t)
	if !strings.Contains(p.Logs(), "msg=\"body paths\" sendfile=true") {
		t.Errorf("no body paths line in:\n%s", p.Logs())
	}
}

// TestEnvFlags: SEGORIGIN_* variables set flags not given on the command
// line; the command line wins.
func TestEnvFlags(t *testing.T) {
	env := []string{"PATH=/bin", "SEGORIGIN_MAX_RANGES=7", "SEGORIGIN_ROOT=/srv/media", "SEGORIGIN_CORS_ORIGINS=https://a.example"}
	o, err := parseFlags([]string{"-root", "/cli"}, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	if o.cfg.MaxRanges != 7 || o.cfg.Root != "/cli" || len(o.cfg.CORSOrigins) != 1 || o.cfg.CORSOrigins[0] != "https://a.example" {
		t.Errorf("parseFlags = max-ranges %d, root %q, cors %q; want 7, /cli, [https://a.example]", o.cfg.MaxRanges, o.cfg.Root, o.cfg.CORSOrigins)
	}
	for _, tc := range []struct{ env, want string }{
		{"SEGORIGIN_MAX_RANGES=many", `SEGORIGIN_MAX_RANGES="many": want an integer`},
		{"SEGORIGIN_READ_TIMEOUT=10", `SEGORIGIN_READ_TIMEOUT="10": want a duration such as 10s`},
		{"SEGORIGIN_WATCH=maybe", `SEGORIGIN_WATCH="maybe": want true or false`},
		{"SEGORIGIN_LISTNE=0.0.0.0:80", `SEGORIGIN_LISTNE: no such flag`},
		{"SEGORIGIN_SHUTDOWN_DELAY=-5s", `-shutdown-delay -5s, -drain-timeout 30s: want durations >= 0`},
	} {
		_, err := parseFlags(nil, io.Discard, []string{tc.env})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("parseFlags with %s: error %v, want one containing %q", tc.env, err, tc.want)
		}
	}
}

// TestSyscallsPerRequest proves zero copy: the server runs under strace -f
// -c, serves N keep-alive GETs of a cached file, and the counts show one
// sendfile per request, no pread/read of file bytes and no open per
// request.
func TestSyscallsPerRequest(t *testing.T) {
	testreq.Tool(t, "strace", "the Debian package strace, which .ci/deps installs")
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	if err := synth.WriteFile(filepath.Join(root, "seg.m4s"), "seg.m4s", 100_000); err != nil {
		t.Fatal(err)
	}
	// strace counts a whole process life, start-up included: run twice,
	// with few and with many requests, and divide the difference. The
	// calls counted are the epoll poller's (make uring runs the suites
	// with SEGORIGIN_POLLER=uring, whose sends are in the ring): -poller
	// epoll, whatever the environment says.
	const few, many = 10, 210
	run := func(n int, extra ...string) map[string]int {
		out := filepath.Join(t.TempDir(), "strace.txt")
		argv := append([]string{"strace", "-f", "-qq", "-c", "-o", out, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-poller", "epoll"}, extra...)
		p := start(t, argv...)
		keepAliveGets(t, p.Addr("http"), "/seg.m4s", n)
		p.Stop(t)
		return straceCounts(t, out)
	}
	a, b := run(few), run(many)
	per := func(sc string) float64 { return float64(b[sc]-a[sc]) / (many - few) }
	var table strings.Builder
	for sc := range b {
		if d := per(sc); d != 0 {
			fmt.Fprintf(&table, "  %-14s %.2f\n", sc, d)
		}
	}
	t.Logf("syscalls per keep-alive GET of a cached 100 kB file:\n%s", table.String())
	// A little under 1 can be the shorter run's extra call: a response
	// whose first sendfile the young socket buffer cut short is finished
	// by a second one when the socket drains.
	if d := per("sendfile"); d < 0.95 || d > 1.1 {
		t.Errorf("sendfile per request = %.2f, want 1 (every body by sendfile)", d)
	}
	if d := per("sendmsg"); d < 0.95 || d > 1.1 {
		t.Errorf("sendmsg per request = %.2f, want 1 (the header, with MSG_MORE)", d)
	}
	for _, sc := range []string{"pread64", "openat", "fstat", "newfstatat", "close", "write", "writev"} {
		if d := per(sc); d > 0.05 {
			t.Errorf("%s per request = %.2f, want 0: no file bytes through user space, no open per request", sc, d)
		}
	}
	// The same with the fd cache off: the open, fstat and close it saves
	// show up, so the measurement above can see them.
	a, b = run(few, "-cache-files", "0"), run(many, "-cache-files", "0")
	t.Logf("with -cache-files 0: openat %.2f, fstat %.2f, close %.2f per request", per("openat"), per("fstat"), per("close"))
	if d := per("openat"); d < 0.95 {
		t.Errorf("with the cache off, openat per request = %.2f, want 1", d)
	}
}

// straceCounts parses `strace -c` output into calls per syscall.
func straceCounts(t *testing.T, path string) map[string]int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int{}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) < 5 || f[len(f)-1] == "total" || f[0] == "%" || strings.HasPrefix(f[0], "-") {
			continue
		}
		if n, err := strconv.Atoi(f[3]); err == nil {
			counts[f[len(f)-1]] = n
		}
	}
	return counts
}

// TestSyscallsPerSmallResponse: a small file the cache inlined leaves in
// one send (header and body together), with no sendfile or file read per
// request; bodiless answers and errors leave in one send too. The loop
// engine sends every response with one sendmsg (its iovecs); fasthttp
// sends inline bodies with writev and the rest with write.
func TestSyscallsPerSmallResponse(t *testing.T) {
	testreq.Tool(t, "strace", "the Debian package strace, which .ci/deps installs")
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	if err := synth.WriteFile(filepath.Join(root, "p.m3u8"), "p.m3u8", 1024); err != nil {
		t.Fatal(err)
	}
	const few, many = 10, 210
	type request = smallRequest
	run := func(n int, engine string, r request) map[string]int {
		out := filepath.Join(t.TempDir(), "strace.txt")
		// The epoll poller's calls, as in TestSyscallsPerRequest.
		p := start(t, "strace", "-f", "-qq", "-c", "-o", out, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-engine", engine, "-poller", "epoll")
		keepAliveRequests(t, p.Addr("http"), r.method, r.target, r.status, n, r.headers...)
		p.Stop(t)
		return straceCounts(t, out)
	}
	etag := func() string {
		p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0")
		defer p.Stop(t)
		resp, err := http.Get("http://" + p.Addr("http") + "/p.m3u8")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.Header.Get("ETag")
	}()
	for _, engine := range []struct{ name, inline, bare string }{
		{"loop", "sendmsg", "sendmsg"},
		{"fasthttp", "writev", "write"},
	} {
		testSmallResponseSyscalls(t, engine.name, func(send string) string {
			if send == "writev" {
				return engine.inline
			}
			return engine.bare
		}, run, etag)
	}
}

type smallRequest = struct {
	name, method, target string
	status               int
	headers              []string
	send                 string // the one send per response (fasthttp's name)
}

func testSmallResponseSyscalls(t *testing.T, engine string, sendOf func(string) string, run func(int, string, smallRequest) map[string]int, etag string) {
	const few, many = 10, 210
	for _, tc := range []smallRequest{
		{"GET of an inlined 1 KiB file", "GET", "/p.m3u8", 200, nil, "writev"},
		{"GET of a range of it", "GET", "/p.m3u8", 206, []string{"Range: bytes=0-1"}, "writev"},
		{"304 (If-None-Match)", "GET", "/p.m3u8", 304, []string{"If-None-Match: " + etag}, "write"},
		{"412 (If-Match)", "GET", "/p.m3u8", 412, []string{`If-Match: "other"`}, "write"},
		{"416", "GET", "/p.m3u8", 416, []string{"Range: bytes=5000-"}, "write"},
		{"HEAD", "HEAD", "/p.m3u8", 200, nil, "write"},
		{"404", "GET", "/missing.m3u8", 404, nil, "write"},
		{"OPTIONS", "OPTIONS", "/p.m3u8", 204, nil, "write"},
	} {
		tc.name = engine + ": " + tc.name
		tc.send = sendOf(tc.send)
		a, b := run(few, engine, tc), run(many, engine, tc)
		per := func(sc string) float64 { return float64(b[sc]-a[sc]) / (many - few) }
		var table strings.Builder
		for sc := range b {
			if d := per(sc); d != 0 {
				fmt.Fprintf(&table, "  %-14s %.2f\n", sc, d)
			}
		}
		t.Logf("%s: syscalls per keep-alive request:\n%s", tc.name, table.String())
		if d := per(tc.send); d < 0.95 || d > 1.05 {
			t.Errorf("%s: %s per request = %.2f, want 1 (header and body in one send)", tc.name, tc.send, d)
		}
		for _, sc := range []string{"sendfile", "sendmsg", "pread64", "openat", "fstat", "newfstatat", "write", "writev"} {
			if d := per(sc); sc != tc.send && d > 0.05 {
				t.Errorf("%s: %s per request = %.2f, want 0", tc.name, sc, d)
			}
		}
	}
}

func keepAliveGets(t *testing.T, addr, target string, n int) {
	t.Helper()
	keepAliveRequests(t, addr, "GET", target, 200, n)
}

// keepAliveRequests makes n requests on one connection, with extra header
// lines, and checks each answers status.
func keepAliveRequests(t *testing.T, addr, method, target string, status, n int, headers ...string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	extra := strings.Join(headers, "\r\n")
	if extra != "" {
		extra += "\r\n"
	}
	for i := range n {
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: t\r\n%s\r\n", method, target, extra)
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != status {
			t.Fatalf("%s %s %q, request %d: status %d, want %d", method, target, headers, i, resp.StatusCode, status)
		}
	}
}

// TestEMFILE: a server whose descriptor limit is low answers 503 with
// Retry-After while clients hold every descriptor, logs it, and serves
// normally by itself once they let go.
func TestEMFILE(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	for i := range 64 {
		if err := os.WriteFile(filepath.Join(root, fmt.Sprintf("f%02d.ts", i)), []byte("segment"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// ulimit -n in sh sets the soft and hard limits, so Go's start-up
	// raise of the soft limit to the hard one changes nothing.
	// -cache-files 0: with a cache, a request out of descriptors sheds the
	// previous request's cached fd and succeeds (graceful, and covered by
	// cache/emfile_test.go), so whether a 503 shows would depend on timing.
	// Without one, every open needs a free descriptor.
	p := start(t, "sh", "-c", "ulimit -n 40 && exec "+bin+" -listen 127.0.0.1:0 -root "+root+" -settle 0 -cache-files 0 -watch=false")
	a, err := net.Dial("tcp", p.Addr("http"))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	br := bufio.NewReader(a)
	get := func(name string) *http.Response {
		t.Helper()
		a.SetDeadline(time.Now().Add(10 * time.Second))
		fmt.Fprintf(a, "GET /%s HTTP/1.1\r\nHost: t\r\n\r\n", name)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("GET %s: %v", name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := get("f00.ts"); r.StatusCode != 200 {
		t.Fatalf("before pressure: %d", r.StatusCode)
	}
	// Hold the server's descriptors: idle connections it accepts until
	// accept itself fails with EMFILE.
	var idle []net.Conn
	defer func() {
		for _, c := range idle {
			c.Close()
		}
	}()
	for range 60 {
		c, err := net.Dial("tcp", p.Addr("http"))
		if err != nil {
			t.Fatal(err)
		}
		idle = append(idle, c)
	}
	saw503 := false
	deadline := time.Now().Add(15 * time.Second)
	for i := 1; !saw503 && time.Now().Before(deadline); i = i%63 + 1 {
		r := get(fmt.Sprintf("f%02d.ts", i))
		switch r.StatusCode {
		case 503:
			saw503 = true
			if ra := r.Header.Get("Retry-After"); ra == "" {
				t.Errorf("503 without Retry-After")
			}
		case 200:
			time.Sleep(20 * time.Millisecond) // accept grabs freed fds; let it
		default:
			t.Fatalf("under pressure: status %d", r.StatusCode)
		}
	}
	if !saw503 {
		t.Fatalf("no 503 while every descriptor was held")
	}
	for _, c := range idle {
		c.Close()
	}
	idle = nil
	ok := false
	for deadline := time.Now().Add(15 * time.Second); !ok && time.Now().Before(deadline); {
		ok = true
		for i := range 10 {
			if get(fmt.Sprintf("f%02d.ts", 30+i)).StatusCode != 200 {
				ok = false
				time.Sleep(100 * time.Millisecond)
				break
			}
		}
	}
	if !ok {
		t.Fatalf("still failing 15s after the descriptors were freed")
	}
	a.Close()
	p.Stop(t)
	if !strings.Contains(p.Logs(), "out of file descriptors") {
		t.Errorf("no 'out of file descriptors' log line:\n%s", p.Logs())
	}
}

// TestDrainOnSIGTERM: SIGTERM during a large download stops accepting, lets
// the download finish byte-exact, then exits 0; the admin endpoint says
// not ready meanwhile.
func TestDrainOnSIGTERM(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	const size = 48 << 20
	if err := synth.WriteFile(filepath.Join(root, "big.mp4"), "big.mp4", size); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-drain-timeout", "20s")
	readyz := "http://" + p.Addr("admin") + "/readyz"
	if code, _ := httpGet(t, readyz); code != 200 {
		t.Fatalf("/readyz before SIGTERM: %d, want 200", code)
	}
	c, err := net.Dial("tcp", p.Addr("http"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.(*net.TCPConn).SetReadBuffer(64 << 10)
	c.SetDeadline(time.Now().Add(60 * time.Second))
	fmt.Fprintf(c, "GET /big.mp4 HTTP/1.1\r\nHost: t\r\n\r\n")
	br := bufio.NewReaderSize(c, 64<<10)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, size)
	if _, err := io.ReadFull(resp.Body, body[:1<<20]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(p.PID(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// New connections are refused once the listener is closed.
	refused := false
	for range 100 {
		if nc, err := net.DialTimeout("tcp", p.Addr("http"), time.Second); err != nil {
			refused = true
			break
		} else {
			nc.Close()
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !refused {
		t.Errorf("still accepting connections 2s after SIGTERM")
	}
	// The download is still in flight (the client has read 1 MiB of 48):
	// the admin listener answers, not ready.
	if code, _ := httpGet(t, readyz); code != 503 {
		t.Errorf("/readyz during the drain: %d, want 503", code)
	}
	if _, err := io.ReadFull(resp.Body, body[1<<20:]); err != nil {
		t.Fatalf("download cut by SIGTERM: %v", err)
	}
	if bad, ok := synth.Verify("big.mp4", 0, body); !ok {
		t.Fatalf("byte %d differs after the drain", bad)
	}
	waitExit(t, p, 30*time.Second)
}

// keepAliveGetter opens one connection to addr and returns what GETs
// target on it and reports the status; the connection closes with t.
func keepAliveGetter(t *testing.T, addr, target string) func() int {
	t.Helper()
	get := keepAliveClient(t, addr, "GET "+target+" HTTP/1.1\r\nHost: t\r\n\r\n")
	return func() int {
		r, _ := get()
		return r.StatusCode
	}
}

// TestSIGHUPRotatesKeys: a new key file takes effect on SIGHUP, on a
// keep-alive connection opened before the reload, and `segorigin sign`
// mints a path the server accepts.
func TestSIGHUPRotatesKeys(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	os.MkdirAll(filepath.Join(root, "vod/t1"), 0o755)
	os.WriteFile(filepath.Join(root, "vod/t1/master.m3u8"), []byte("#EXTM3U\n"), 0o644)
	keys := filepath.Join(t.TempDir(), "keys.txt")
	k1 := "k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"
	k2 := "k2 f0f1f2f3f4f5f6f7f8f9fafbfcfdfeff00112233445566778899aabbccddeeff\n"
	if err := os.WriteFile(keys, []byte("# rotation test\n"+k1), 0o600); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-auth-key-file", keys)
	newKeys := filepath.Join(t.TempDir(), "new.txt")
	os.WriteFile(newKeys, []byte(k2), 0o600)
	out, err := exec.Command(bin, "sign", "-key-file", newKeys, "-scope", "/vod/t1/", "-ttl", "10m").Output()
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	path := strings.TrimSpace(string(out)) + "master.m3u8"
	if !strings.HasPrefix(path, "/t/") {
		t.Fatalf("sign printed %q, want /t/<token>/vod/t1/", path)
	}
	get := keepAliveGetter(t, p.Addr("http"), path)
	if code := get(); code != 403 {
		t.Fatalf("token of a key not yet in the file: %d, want 403", code)
	}
	if err := os.WriteFile(keys, []byte(k1+k2), 0o600); err != nil {
		t.Fatal(err)
	}
	syscall.Kill(p.PID(), syscall.SIGHUP)
	deadline := time.Now().Add(10 * time.Second)
	for get() != 200 {
		if time.Now().After(deadline) {
			t.Fatalf("rotated key not accepted 10s after SIGHUP:\n%s", p.Logs())
		}
		time.Sleep(50 * time.Millisecond)
	}
	p.Stop(t)
	if !strings.Contains(p.Logs(), "SIGHUP: settings reloaded") {
		t.Errorf("no reload log line:\n%s", p.Logs())
	}
}
