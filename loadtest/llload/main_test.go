package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// TestLoadShort is the load run made small: 200 players in blocking
// reloads on 10 playlists for 3 s against the server binary. Every answer
// is a version published from the part asked for on, every part fetched
// is its file's bytes, no reload times out, the server parks them (its
// metrics count them held), the players wait for the renames (their
// requests reach the server before the part is published) and the
// server's access log gives its own delay for the parked ones.
func TestLoadShort(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the load run reads /proc")
	}
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	accessLog := filepath.Join(t.TempDir(), "access.log")
	p := testproc.Start(t, exec.Command(bin, "-root", root, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-admin-pprof",
		"-access-log", accessLog, "-access-log-format", "json"),
		testproc.Timeout(15*time.Second))
	t.Cleanup(func() { p.Terminate(10 * time.Second) })
	cfg := config{addr: p.Addr("http"), root: root, sub: "llload", playlists: 10, clients: 200,
		pace: 333 * time.Millisecond, duration: 3 * time.Second, parts: true, partBytes: 4 << 10,
		pid: p.PID(), metrics: "http://" + p.Addr("admin") + "/metrics", pprof: "http://" + p.Addr("admin") + "/debug/pprof/", accessLog: accessLog}
	res, err := run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	res.print(&out, cfg)
	t.Log(out.String())
	tl := &res.t
	switch {
	case tl.errs != 0:
		t.Errorf("%d errors, the first: %v", tl.errs, tl.firstErr)
	case tl.timedOut != 0:
		t.Errorf("%d reloads timed out (503)", tl.timedOut)
	case tl.answers < int64(cfg.clients) || tl.parts < int64(cfg.clients):
		t.Errorf("%d answers and %d parts for %d clients in %v: want one each at least", tl.answers, tl.parts, cfg.clients, cfg.duration)
	case len(tl.waited) == 0:
		t.Errorf("no reload waited for its rename: %d answered at once", len(tl.immediate))
	case res.srv.peak.parked == 0:
		t.Errorf("the server's metrics never counted a parked reload")
	case len(res.served) == 0:
		t.Errorf("the server's access log gave no delay for a parked reload (%d waited on the clients' side)", len(tl.waited))
	}
}
