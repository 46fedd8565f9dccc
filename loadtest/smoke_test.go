package loadtest_test

// Smoke tests: each wrk script, the load client, compare.sh, players.sh
// and syscalls.sh run for a second or two against the real server binary built
// from ./cmd/segorigin, on a small generated set, so that none of them can
// rot. The long runs are the scripts' own defaults, run by hand.

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// The small set: the workloads' layout and names, fewer and smaller files.
// W1 keeps its 200 names (the W4 playlists point into all of them), at
// 128 KiB each.
const (
	w1Count = 200
	w1Size  = 128 << 10
	w2Size  = 4 << 20
	w3Count = 20
	w3Size  = 64 << 10
)

// needTools fails the test when a tool the scripts need is missing, or
// skips it under -short (.ci/deps installs them).
func needTools(t *testing.T, tools ...string) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("loadtest scripts read /proc and need Linux")
	}
	for _, tool := range tools {
		testreq.Tool(t, tool, "apt-get install "+tool+"; .ci/deps installs it")
	}
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// smallSet writes the small workload set (about 30 MiB).
func smallSet(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	write := func(rel string, size int64) {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := synth.WriteFile(p, filepath.Base(p), size); err != nil {
			t.Fatal(err)
		}
	}
	ws := synth.Workloads()
	for i := range w1Count {
		write(ws[0].Path(i), w1Size)
	}
	write("w2/big.mp4", w2Size)
	// A file whose bytes are not its name's: the client must catch it.
	if err := os.MkdirAll(filepath.Join(dir, "bad", "w3"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := synth.WriteFile(filepath.Join(dir, "bad", "w3", "part0000.m4s"), "part0001.m4s", w3Size); err != nil {
		t.Fatal(err)
	}
	for i := range w3Count {
		write(ws[2].Path(i), w3Size)
	}
	if err := os.MkdirAll(filepath.Join(dir, "w4"), 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range ws[3].Count {
		text := synth.Playlist(ws[3].FileName(i), int(ws[3].Size))
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(ws[3].Path(i))), text, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// startServer runs the binary on a free loopback port and returns its
// address; the test's cleanup stops it (SIGTERM, SIGKILL after 10 s).
func startServer(t *testing.T, bin, root string) string {
	t.Helper()
	p := testproc.Start(t, exec.Command(bin, "-root", root, "-settle", "0", "-listen", "127.0.0.1:0"), testproc.Timeout(15*time.Second))
	t.Cleanup(func() { p.Terminate(10 * time.Second) })
	return p.Addr("http")
}

// resultKV parses the last "RESULT k=v ..." line of out.
func resultKV(t *testing.T, out string) map[string]string {
	t.Helper()
	kv := map[string]string{}
	lines := strings.Split(out, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if rest, ok := strings.CutPrefix(lines[i], "RESULT "); ok {
			for _, f := range strings.Fields(rest) {
				if k, v, ok := strings.Cut(f, "="); ok {
					kv[k] = v
				}
			}
			return kv
		}
	}
	t.Fatalf("no RESULT line in:\n%s", out)
	return nil
}

func atoi(t *testing.T, kv map[string]string, key string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(kv[key], 10, 64)
	if err != nil {
		t.Fatalf("RESULT %s=%q: not a number", key, kv[key])
	}
	return n
}

// run runs a command with a deadline and returns its combined output.
func run(t *testing.T, timeout time.Duration, env []string, name string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(testproc.EnvWithout("SEGORIGIN_"), env...) // only the SEGORIGIN_* it is given
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func TestSmoke(t *testing.T) {
	testreq.Slow(t, "runs every load script against segorigin and nginx (about two minutes)")
	needTools(t, "wrk", "nginx", "bash", "go")
	// SEGORIGIN_BIN tests that binary instead of building ./cmd/segorigin,
	// as compare.sh and syscalls.sh do.
	server := os.Getenv("SEGORIGIN_BIN")
	if server == "" {
		server = testproc.Build(t, "./cmd/segorigin")
	}
	client := testproc.Build(t, "./loadtest/client")
	data := smallSet(t)
	addr := startServer(t, server, data)
	url := "http://" + addr

	t.Run("wrk scripts", func(t *testing.T) {
		scripts := []struct {
			script string
			conns  int
			args   []string
		}{
			{"w1.lua", 4, []string{strconv.Itoa(w1Count), strconv.Itoa(w1Size)}},
			{"w2.lua", 4, []string{strconv.Itoa(w2Size), "262144"}},
			{"w3.lua", 4, []string{strconv.Itoa(w3Count), strconv.Itoa(w3Size)}},
			{"w4.lua", 4, nil},
			// W5 with wrk alone: many connections, each idle 200 ms between requests.
			{"w5.lua", 64, []string{strconv.Itoa(w1Count), strconv.Itoa(w1Size), "200"}},
		}
		for _, s := range scripts {
			t.Run(s.script, func(t *testing.T) {
				args := append([]string{"-t1", "-c" + strconv.Itoa(s.conns), "-d1s", "--latency",
					"-s", filepath.Join("loadtest", "wrk", s.script), url, "--"}, s.args...)
				out, err := run(t, 30*time.Second, nil, "wrk", args...)
				if err != nil {
					t.Fatalf("wrk %s: %v\n%s", s.script, err, out)
				}
				kv := resultKV(t, out)
				if atoi(t, kv, "requests") == 0 || atoi(t, kv, "unexpected") != 0 || kv["checked"] != "1" {
					t.Fatalf("wrk %s: %d requests, %d unexpected, checked %s; want some, 0, 1\n%s",
						s.script, atoi(t, kv, "requests"), atoi(t, kv, "unexpected"), kv["checked"], out)
				}
			})
		}
	})

	t.Run("load client", func(t *testing.T) {
		runs := [][]string{
			{"-workload", "W5", "-idle", "200", "-count", strconv.Itoa(w1Count), "-size", strconv.Itoa(w1Size)},
			{"-workload", "W2", "-size", strconv.Itoa(w2Size)},
			{"-workload", "W3", "-count", strconv.Itoa(w3Count), "-size", strconv.Itoa(w3Size)},
			{"-workload", "W4"},
			{"-hls", "/w4/p00.m3u8"},
		}
		for _, r := range runs {
			t.Run(strings.Join(r[:2], " "), func(t *testing.T) {
				args := append([]string{"-url", url, "-sessions", "4", "-duration", "400ms"}, r...)
				out, err := run(t, 30*time.Second, nil, client, args...)
				if err != nil {
					t.Fatalf("client %s: %v\n%s", strings.Join(args, " "), err, out)
				}
				kv := resultKV(t, out)
				if atoi(t, kv, "requests") == 0 || atoi(t, kv, "errors") != 0 {
					t.Fatalf("client %s: want requests and no errors\n%s", strings.Join(args, " "), out)
				}
				if r[1] == "W5" && atoi(t, kv, "idle_open") != 200 {
					t.Fatalf("client %s: idle_open %s, want 200\n%s", strings.Join(args, " "), kv["idle_open"], out)
				}
			})
		}
		// A wrong byte or a wrong expectation must fail the run, naming
		// the URL and the reason.
		fails := []struct {
			args []string
			want []string
		}{
			{[]string{"-workload", "W3", "-prefix", "/bad", "-count", "1"}, []string{"/bad/w3/part0000.m4s", "part0000.m4s: byte at offset"}},
			{[]string{"-workload", "W1"}, []string{"/w1/seg", "want the file's size 2097152"}}, // the design's 2 MiB, not 128 KiB
		}
		for _, f := range fails {
			args := append([]string{"-url", url, "-sessions", "1", "-duration", "300ms"}, f.args...)
			out, err := run(t, 30*time.Second, nil, client, args...)
			if err == nil || !strings.Contains(out, f.want[0]) || !strings.Contains(out, f.want[1]) {
				t.Errorf("client %s: err %v, want exit 1 naming %q and %q\n%s", strings.Join(args, " "), err, f.want[0], f.want[1], out)
			}
		}
	})

	t.Run("compare.sh", func(t *testing.T) {
		outFile := filepath.Join(t.TempDir(), "compare.txt")
		out, err := run(t, 120*time.Second, []string{"SEGORIGIN_BIN=" + server}, "bash", "loadtest/compare.sh",
			"-d", "1", "-rounds", "1", "-workloads", "W4,W6", "-dir", data, "-o", outFile)
		if err != nil {
			t.Fatalf("compare.sh: %v\n%s", err, out)
		}
		table, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		w4, w6, ok := strings.Cut(string(table), "\nW6: ")
		if !strings.Contains(w4, "W4: 1 KiB playlists") || !ok {
			t.Fatalf("compare.sh wrote no W4 and W6 tables:\n%s", table)
		}
		checkRows(t, "compare.sh", []string{w4, w6}, "segorigin", "nginx", "nethttp", "fasthttpfs")
	})

	t.Run("compare_tls.sh", func(t *testing.T) {
		outFile := filepath.Join(t.TempDir(), "compare-tls.txt")
		out, err := run(t, 120*time.Second, []string{"SEGORIGIN_BIN=" + server}, "bash", "loadtest/compare_tls.sh",
			"-d", "1", "-rounds", "1", "-workloads", "W3,W4", "-dir", data, "-o", outFile)
		if err != nil {
			t.Fatalf("compare_tls.sh: %v\n%s", err, out)
		}
		table, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		w3, w4, ok := strings.Cut(string(table), "\nW4\n")
		if !strings.Contains(w3, "\nW3\n") || !ok {
			t.Fatalf("compare_tls.sh wrote no W3 and W4 tables:\n%s", table)
		}
		checkRows(t, "compare_tls.sh", []string{w3, w4}, "segorigin", "nginx")
	})

	t.Run("players.sh", func(t *testing.T) {
		outFile := filepath.Join(t.TempDir(), "players.txt")
		out, err := run(t, 120*time.Second, []string{"SEGORIGIN_BIN=" + server}, "bash", "loadtest/players.sh",
			"-sessions", "8", "-bitrate", "4Mbit", "-d", "2", "-rounds", "1", "-dir", data, "-o", outFile)
		if err != nil {
			t.Fatalf("players.sh: %v\n%s", err, out)
		}
		table, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		for _, srv := range []string{"segorigin", "segorigin-fasthttp", "nginx"} {
			// server, MiB/s, GiB, cpu s, cpu s/GiB, ttfb p50, ttfb p99, fetch p99, client cpu s, errors, ratios
			row := regexp.MustCompile(`(?m)^` + srv + ` +([0-9.]+) +(?:[0-9.]+ +){7}([0-9]+) +[0-9.-]+ +[0-9.-]+$`).FindStringSubmatch(string(table))
			if row == nil {
				t.Fatalf("players.sh: no row for %s in:\n%s", srv, table)
			}
			// 8 players at 4 Mbit/s: 3.8 MiB/s in all once every one has begun.
			if mibps, _ := strconv.ParseFloat(row[1], 64); mibps <= 0 || mibps > 4 || row[2] != "0" {
				t.Errorf("players.sh: %s row %q: want 0 < MiB/s <= 4 (the cap) and 0 errors", srv, row[0])
			}
		}
	})

	t.Run("syscalls.sh", func(t *testing.T) {
		needTools(t, "strace")
		if out, err := run(t, 10*time.Second, nil, "strace", "-f", "-o", "/dev/null", "true"); err != nil {
			t.Skipf("strace cannot trace here (ptrace not permitted?): %v\n%s", err, out)
		}
		outFile := filepath.Join(t.TempDir(), "syscalls.txt")
		out, err := run(t, 120*time.Second, []string{"SEGORIGIN_BIN=" + server}, "bash", "loadtest/syscalls.sh",
			"-n", "20", "-workloads", "W3", "-servers", "segorigin,nginx", "-dir", data, "-o", outFile)
		if err != nil {
			t.Fatalf("syscalls.sh: %v\n%s", err, out)
		}
		report, err := os.ReadFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		// The segorigin row: server, all, read, write, writev, sendmsg, sendfile, ...
		row := regexp.MustCompile(`(?m)^segorigin +([0-9.]+ .*)$`).FindStringSubmatch(string(report))
		if row == nil {
			t.Fatalf("syscalls.sh: no segorigin row in:\n%s", report)
		}
		f := strings.Fields(row[1])
		if len(f) < 6 {
			t.Fatalf("syscalls.sh: short segorigin row %q", row[0])
		}
		if sendfile, _ := strconv.ParseFloat(f[5], 64); sendfile < 1 {
			t.Errorf("syscalls.sh: segorigin makes %s sendfile calls per W3 request, want at least 1\n%s", f[5], report)
		}
		if !strings.Contains(string(report), "sendfile(") {
			t.Errorf("syscalls.sh: no sendfile( in the syscall sequences:\n%s", report)
		}
	})
	t.Run("syscalls_load.sh", func(t *testing.T) {
		needTools(t, "perf")
		if out, err := run(t, 10*time.Second, nil, "perf", "stat", "-e", "raw_syscalls:sys_enter", "true"); err != nil {
			t.Skipf("perf cannot count syscalls here (tracepoints not readable?): %v\n%s", err, out)
		}
		out, err := run(t, 120*time.Second, []string{"SEGORIGIN_BIN=" + server}, "bash", "loadtest/syscalls_load.sh",
			"-d", "1", "-rounds", "1", "-workloads", "W4", "-servers", "segorigin")
		if err != nil {
			t.Fatalf("syscalls_load.sh: %v\n%s", err, out)
		}
		// Each row: server, W, all, read, sendmsg, ...: every W4 answer
		// is one sendmsg at least. (segorigin-uring is left out: a
		// container may refuse io_uring.)
		for _, srv := range []string{"segorigin"} {
			row := regexp.MustCompile(`(?m)^` + srv + ` +W4 +([0-9.]+) +([0-9.]+) +([0-9.]+)`).FindStringSubmatch(out)
			if row == nil {
				t.Fatalf("syscalls_load.sh: no %s W4 row in:\n%s", srv, out)
			}
			if sendmsg, _ := strconv.ParseFloat(row[3], 64); sendmsg < 0.9 {
				t.Errorf("syscalls_load.sh: %s makes %s sendmsg calls per W4 request, want about 1\n%s", srv, row[3], out)
			}
		}
	})
}

// checkRows: each table section has a row for each server whose first
// column (req/s) is above 0 and whose last (unexpected answers: on W6,
// anything but a 304) is 0.
func checkRows(t *testing.T, script string, sections []string, servers ...string) {
	t.Helper()
	for _, section := range sections {
		for _, srv := range servers {
			row := regexp.MustCompile(`(?m)^` + srv + ` +([0-9]+) .* ([0-9]+)$`).FindStringSubmatch(section)
			if row == nil {
				t.Fatalf("%s: no row for %s in:\n%s", script, srv, section)
			}
			if row[1] == "0" || row[2] != "0" {
				t.Errorf("%s: %s row %q: want req/s > 0 and 0 unexpected", script, srv, row[0])
			}
		}
	}
}
