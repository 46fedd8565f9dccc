package main

import (
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testwait"
)

// httpGet is one GET on a fresh connection (no keep-alive: each call
// proves the listener still accepts).
func httpGet(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: body: %v", url, err)
	}
	return resp.StatusCode, string(b)
}

// waitExit waits up to d for p to exit, and fails unless it exits 0.
func waitExit(t *testing.T, p *testproc.Proc, d time.Duration) {
	t.Helper()
	select {
	case <-p.Done():
		if err := p.Err(); err != nil {
			t.Fatalf("exit: %v\n%s", err, p.Logs())
		}
	case <-time.After(d):
		t.Fatalf("no exit within %v:\n%s", d, p.Logs())
	}
}

// inOrder reports whether every string of want appears in logs, in order.
func inOrder(logs string, want ...string) bool {
	for _, w := range want {
		i := strings.Index(logs, w)
		if i < 0 {
			return false
		}
		logs = logs[i+len(w):]
	}
	return true
}

// TestShutdownDelay: on SIGTERM /readyz turns 503 at once while the public
// listener still accepts and serves, for -shutdown-delay; then it closes
// and the process drains and exits 0. Each phase is logged, in order.
func TestShutdownDelay(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "index.m3u8"), []byte("#EXTM3U\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-shutdown-delay", "3s")
	file, readyz := "http://"+p.Addr("http")+"/index.m3u8", "http://"+p.Addr("admin")+"/readyz"
	if code, _ := httpGet(t, readyz); code != 200 {
		t.Fatalf("/readyz before SIGTERM: %d", code)
	}
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 2*time.Second, "/readyz 503 after SIGTERM", func() bool { code, _ := httpGet(t, readyz); return code == 503 })
	// Within the delay: a new connection is still accepted and served.
	if code, body := httpGet(t, file); code != 200 || body != "#EXTM3U\n" {
		t.Errorf("GET during the shutdown delay: %d %q, want 200", code, body)
	}
	waitExit(t, p, 20*time.Second)
	if _, err := net.DialTimeout("tcp", p.Addr("http"), time.Second); err == nil {
		t.Errorf("the listener still accepts after the exit")
	}
	if !inOrder(p.Logs(), "shutdown: signal received: not ready, still serving", "shutdown: listeners closed, draining",
		"shutdown: drain complete", "msg=stopped") {
		t.Errorf("shutdown phases not logged in order:\n%s", p.Logs())
	}
}

// TestSecondSignalCutsDelay: a second SIGTERM during a long shutdown delay
// goes straight to the drain.
func TestSecondSignalCutsDelay(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", t.TempDir(), "-shutdown-delay", "1h")
	p.Signal(syscall.SIGTERM)
	testwait.For(t, 5*time.Second, "the first signal logged", func() bool { return strings.Contains(p.Logs(), "shutdown: signal received") })
	p.Signal(syscall.SIGTERM)
	waitExit(t, p, 20*time.Second)
	if !strings.Contains(p.Logs(), "shutdown: second signal: delay cut short") {
		t.Errorf("the cut is not logged:\n%s", p.Logs())
	}
}

// TestSystemdNotify: under a service manager (NOTIFY_SOCKET names a
// unixgram socket, as systemd's Type=notify does) the binary sends READY=1
// once its listener is bound (a connection succeeds at once) and
// STOPPING=1 when SIGTERM starts the shutdown.
func TestSystemdNotify(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	sock := filepath.Join(t.TempDir(), "notify")
	ln, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sock, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	next := func(what string) string {
		t.Helper()
		buf := make([]byte, 4096)
		ln.SetReadDeadline(time.Now().Add(20 * time.Second))
		n, err := ln.Read(buf)
		if err != nil {
			t.Fatalf("no notification (%s): %v", what, err)
		}
		return string(buf[:n])
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-root", t.TempDir())
	cmd.Env = append(testproc.EnvWithout("SEGORIGIN_"), "NOTIFY_SOCKET="+sock)
	p := testproc.Start(t, cmd)
	if msg := next("ready"); !strings.Contains(msg, "READY=1") {
		t.Fatalf("first notification %q, want READY=1", msg)
	}
	c, err := net.DialTimeout("tcp", p.Addr("http"), time.Second)
	if err != nil {
		t.Fatalf("READY=1 sent before the listener accepts: %v", err)
	}
	c.Close()
	p.Signal(syscall.SIGTERM)
	if msg := next("stopping"); !strings.Contains(msg, "STOPPING=1") {
		t.Fatalf("notification after SIGTERM %q, want STOPPING=1", msg)
	}
	p.Stop(t)
}

// TestReadyzMediaRoot: /readyz answers 503 while the media root is gone,
// and 200 again once its path names a directory, which is then served
// (a root made again is served as it is, like a symlinked root swapped to
// another release); the outage is logged once and counted once however
// often it is probed.
func TestReadyzMediaRoot(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	dir := t.TempDir()
	root := filepath.Join(dir, "media")
	if err := os.MkdirAll(filepath.Join(root, "vod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "vod", "a.m3u8"), []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, bin, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-root-check-every", "50ms")
	admin, media := "http://"+p.Addr("admin"), "http://"+p.Addr("http")
	readyz := func() (int, string) { return httpGet(t, admin+"/readyz") }
	if code, _ := readyz(); code != 200 {
		t.Fatalf("/readyz with the root in place: %d", code)
	}
	if code, body := httpGet(t, media+"/vod/a.m3u8"); code != 200 || body != "old" {
		t.Fatalf("GET /vod/a.m3u8: %d %q, want 200 \"old\"", code, body)
	}
	const lost = "media root unavailable: not ready"
	if err := os.Rename(root, root+".away"); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "the lost root logged", func() bool { return strings.Contains(p.Logs(), lost) })
	for range 5 {
		if code, body := readyz(); code != 503 || body != "media root unavailable\n" {
			t.Fatalf("/readyz with the root gone: %d %q, want 503 \"media root unavailable\"", code, body)
		}
	}
	_, metrics := httpGet(t, admin+"/metrics")
	for _, want := range []string{"segorigin_root_available 0", "segorigin_root_unavailable_total 1", "segorigin_build_info{commit="} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	// Made again at the same path: that directory is served.
	if err := os.MkdirAll(filepath.Join(root, "vod"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "vod", "a.m3u8"), []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	testwait.For(t, 5*time.Second, "/readyz 200 with a root made again", func() bool { code, _ := readyz(); return code == 200 })
	if code, body := httpGet(t, media+"/vod/a.m3u8"); code != 200 || body != "new" {
		t.Errorf("GET /vod/a.m3u8 from the root made again: %d %q, want 200 \"new\"", code, body)
	}
	_, metrics = httpGet(t, admin+"/metrics")
	for _, want := range []string{"segorigin_root_available 1", "segorigin_root_unavailable_total 1", "segorigin_root_changes_total 1"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	p.Stop(t)
	if n := strings.Count(p.Logs(), lost); n != 1 {
		t.Errorf("the outage was logged %d times, want once:\n%s", n, p.Logs())
	}
	for _, want := range []string{"media root available again", "media root names another directory"} {
		if !strings.Contains(p.Logs(), want) {
			t.Errorf("no %q line:\n%s", want, p.Logs())
		}
	}
}
