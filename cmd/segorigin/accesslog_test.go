package main

import (
	"bufio"
	"encoding/json"
	"fmt"
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
	"segorigin/internal/testreq"
	"segorigin/internal/testwait"
)

// TestAccessLogRotateAndGoAccess: the binary's combined access log, with
// every kind of answer and a signed path, is read by GoAccess
// (--log-format=COMBINED) with no failed line; the token never reaches the
// file; after logrotate's move, SIGUSR1 (and SIGHUP) send new lines to a
// new file of the original name.
func TestAccessLogRotateAndGoAccess(t *testing.T) {
	testreq.Tool(t, "goaccess", "the Debian package goaccess, which .ci/deps installs")
	bin := testproc.Build(t, "./cmd/segorigin")
	root, dir := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(root, "vod/t1"), 0o755)
	os.WriteFile(filepath.Join(root, "vod/t1/seg1.ts"), []byte("0123456789abcdef"), 0o644)
	keys := filepath.Join(dir, "keys.txt")
	os.WriteFile(keys, []byte("k1 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n"), 0o600)
	out, err := exec.Command(bin, "sign", "-key-file", keys, "-key-id", "k1", "-scope", "/vod/t1/", "-ttl", "10m").Output()
	if err != nil {
		t.Fatalf("sign: %v", err)
	}
	signed := strings.TrimSpace(string(out)) // /t/<segment>/vod/t1/
	seg := strings.Split(signed, "/")[2]
	log := filepath.Join(dir, "access.log")
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-auth-key-file", keys,
		"-auth-public", "/vod/t1/", "-access-log", log, "-access-log-format", "combined")

	c, err := net.Dial("tcp", p.Addr("http"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	exchange := func(method, target string, headers ...string) int {
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: t\r\n%s\r\n", method, target, strings.Join(append(headers, ""), "\r\n"))
		resp, err := http.ReadResponse(br, &http.Request{Method: method})
		if err != nil {
			t.Fatalf("%s %s: %v", method, target, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	batch := func() int {
		for _, r := range []struct {
			method, target string
			headers        []string
			want           int
		}{
			{"GET", "/vod/t1/seg1.ts", nil, 200},
			{"GET", "/vod/t1/seg1.ts?CMCD=br%3D3200%2Cot%3Dv", []string{"Range: bytes=0-3", `User-Agent: Mozilla/5.0 "quoted" \ (X11)`}, 206},
			{"HEAD", "/vod/t1/seg1.ts", []string{"Referer: https://player.example/page?a=1"}, 200},
			{"GET", signed + "seg1.ts", nil, 200},
			{"GET", "/vod/t1/missing.ts", nil, 404},
			{"GET", "/vod/%zz", nil, 400},
			{"DELETE", "/vod/t1/seg1.ts", nil, 405},
			{"GET", "/vod/t1/seg1.ts", []string{"Range: bytes=99-"}, 416},
			{"GET", "/vod/t1/naïve.ts", nil, 404},
		} {
			if got := exchange(r.method, r.target, r.headers...); got != r.want {
				t.Fatalf("%s %s: %d, want %d", r.method, r.target, got, r.want)
			}
		}
		return 9
	}
	lines := func(name string) int {
		b, _ := os.ReadFile(name)
		return strings.Count(string(b), "\n")
	}
	waitLines := func(name string, n int) {
		t.Helper()
		testwait.For(t, 5*time.Second, fmt.Sprintf("%s to hold %d lines", filepath.Base(name), n), func() bool { return lines(name) == n })
	}
	rotate := func(to string, sig syscall.Signal, reopened int) {
		t.Helper()
		if err := os.Rename(log, to); err != nil {
			t.Fatal(err)
		}
		p.Signal(sig)
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(p.Logs(), "access log reopened") < reopened {
			if time.Now().After(deadline) {
				t.Fatalf("no reopen 5s after %v:\n%s", sig, p.Logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	n1 := batch()
	waitLines(log, n1)
	rotate(log+".1", syscall.SIGUSR1, 1)
	n2 := batch()
	waitLines(log, n2)
	rotate(log+".2", syscall.SIGHUP, 2)
	n3 := batch()
	waitLines(log, n3)
	if got := lines(log + ".1"); got != n1 {
		t.Errorf("access.log.1 holds %d lines after the reopen, want %d (nothing written to the moved file)", got, n1)
	}
	p.Stop(t)

	all := ""
	for _, name := range []string{log + ".1", log + ".2", log} {
		b, _ := os.ReadFile(name)
		all += string(b)
	}
	if strings.Contains(all, seg) {
		t.Errorf("the access log holds the token segment %.20s...:\n%s", seg, all)
	}
	if !strings.Contains(all, `"GET /t/…/vod/t1/seg1.ts HTTP/1.1" 200 16`) {
		t.Errorf("no redacted signed-path line in:\n%s", all)
	}

	report := filepath.Join(dir, "report.json")
	cmd := exec.Command("goaccess", log+".1", log+".2", log, "--log-format=COMBINED", "--no-global-config", "-o", report)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("goaccess: %v\n%s", err, out)
	}
	b, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		General struct {
			Total  int `json:"total_requests"`
			Valid  int `json:"valid_requests"`
			Failed int `json:"failed_requests"`
		} `json:"general"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("goaccess report: %v", err)
	}
	if want := n1 + n2 + n3; r.General.Total != want || r.General.Valid != want || r.General.Failed != 0 {
		t.Errorf("goaccess: total %d, valid %d, failed %d; want %d, %d, 0. Log:\n%s",
			r.General.Total, r.General.Valid, r.General.Failed, want, want, all)
	}
}

// TestAccessLogBuffered: with -access-log-buffer and no -access-log-flush,
// the binary's lines wait in memory: none is in the file while the
// buffer has room; SIGUSR1 writes them to the file logrotate moved
// before it reopens; exit writes the rest. With -access-log-flush, a
// line reaches the file by itself.
func TestAccessLogBuffered(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root, dir := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(root, "seg1.ts"), []byte("0123456789abcdef"), 0o644)
	lines := func(name string) int {
		b, _ := os.ReadFile(name)
		return strings.Count(string(b), "\n")
	}
	// get makes n requests, each on a connection of its own with
	// "Connection: close", read until the server closes it: the server
	// logs a response before it closes its connection, so each line is
	// in the log (its buffer) when get returns.
	get := func(p *testproc.Proc, n int) {
		t.Helper()
		for range n {
			c, err := net.Dial("tcp", p.Addr("http"))
			if err != nil {
				t.Fatal(err)
			}
			c.SetDeadline(time.Now().Add(10 * time.Second))
			fmt.Fprint(c, "GET /seg1.ts HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
			got, err := io.ReadAll(c)
			c.Close()
			if err != nil || !strings.HasPrefix(string(got), "HTTP/1.1 200 ") {
				t.Fatalf("GET /seg1.ts: %q, %v", got, err)
			}
		}
	}

	log := filepath.Join(dir, "access.log")
	p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-access-log", log,
		"-access-log-buffer", "1048576", "-access-log-flush", "0")
	get(p, 5)
	if got := lines(log); got != 0 {
		t.Fatalf("5 lines in a buffer of 1 MiB with no flush time: %d in the file, want 0 until a signal or exit", got)
	}
	if err := os.Rename(log, log+".1"); err != nil {
		t.Fatal(err)
	}
	p.Signal(syscall.SIGUSR1)
	testwait.For(t, 5*time.Second, "the 5 buffered lines in the moved file after SIGUSR1", func() bool { return lines(log+".1") == 5 })
	get(p, 3)
	p.Stop(t)
	if got, gotOld := lines(log), lines(log+".1"); got != 3 || gotOld != 5 {
		t.Fatalf("after exit: access.log holds %d lines (want 3), access.log.1 %d (want 5)", got, gotOld)
	}

	flushed := filepath.Join(dir, "flushed.log")
	p = start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0", "-access-log", flushed,
		"-access-log-buffer", "1048576", "-access-log-flush", "20ms")
	get(p, 2)
	testwait.For(t, 5*time.Second, "2 lines written by -access-log-flush", func() bool { return lines(flushed) == 2 })
	p.Stop(t)
}
