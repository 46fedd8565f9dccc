package main

import (
	"bufio"
	"compress/gzip"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// TestSIGHUPReloadsConfigFile: as nginx -s reload re-reads its whole
// configuration, SIGHUP re-reads the -config file and puts its request
// policy in force on the next request of a keep-alive connection opened
// before (Cache-Control, an operator header, gzip, the access rules);
// a file with an invalid value keeps every setting in force and says so;
// a changed setting that needs a restart is named and the rest applied.
func TestSIGHUPReloadsConfigFile(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	playlist := "#EXTM3U\n" + strings.Repeat("#EXTINF:4.0,\nsegment.ts\n", 100)
	os.WriteFile(filepath.Join(root, "a.m3u8"), []byte(playlist), 0o644)
	conf := filepath.Join(t.TempDir(), "segorigin")
	write := func(s string) {
		t.Helper()
		if err := os.WriteFile(conf, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("# as /etc/default/segorigin\nSEGORIGIN_CACHE_CONTROL_PLAYLIST=public, max-age=10\nSEGORIGIN_GZIP=off\n")
	p := start(t, bin, "-config", conf, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0", "-root", root, "-settle", "0")
	get := keepAliveClient(t, p.Addr("http"), "GET /a.m3u8 HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n")
	hup := func(logLine string) {
		t.Helper()
		from := len(p.Logs())
		syscall.Kill(p.PID(), syscall.SIGHUP)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.Logs()[from:], logLine) {
			if time.Now().After(deadline) {
				t.Fatalf("no %q 10s after SIGHUP:\n%s", logLine, p.Logs())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	r, body := get()
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=10" || r.Header.Get("Content-Encoding") != "" || body != playlist {
		t.Fatalf("at start: %d, Cache-Control %q, Content-Encoding %q; want 200, public, max-age=10, identity", r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("Content-Encoding"))
	}

	write("SEGORIGIN_CACHE_CONTROL_PLAYLIST=max-age=2\nSEGORIGIN_HEADER=\"playlist:X-Edition: two\nall:X-Origin: eu-1\"\nSEGORIGIN_GZIP=on\n")
	hup("changed=\"-cache-control-playlist -header -gzip\"")
	r, body = get()
	if r.StatusCode != 200 || r.Header.Get("Cache-Control") != "max-age=2" || r.Header.Get("X-Edition") != "two" ||
		r.Header.Get("X-Origin") != "eu-1" || r.Header.Get("Content-Encoding") != "gzip" || gunzip(t, body) != playlist {
		t.Fatalf("after the reload: %d, Cache-Control %q, X-Edition %q, X-Origin %q, Content-Encoding %q; want 200, max-age=2, two, eu-1, gzip of the playlist",
			r.StatusCode, r.Header.Get("Cache-Control"), r.Header.Get("X-Edition"), r.Header.Get("X-Origin"), r.Header.Get("Content-Encoding"))
	}

	write("SEGORIGIN_ACCESS=allow 10.0.0.0/8; deny all\n")
	hup("SIGHUP: settings reloaded")
	if r, _ = get(); r.StatusCode != 403 || r.Header.Get("X-Edition") != "" {
		t.Fatalf("after a reload to deny all: %d, X-Edition %q; want 403 and the header gone", r.StatusCode, r.Header.Get("X-Edition"))
	}

	write("SEGORIGIN_ACCESS=\nSEGORIGIN_GZIP=maybe\n")
	hup("SIGHUP: settings not reloaded: the previous ones stay in force")
	if r, _ = get(); r.StatusCode != 403 {
		t.Fatalf("after a reload of an invalid file: %d, want 403 (every setting kept)", r.StatusCode)
	}
	if !strings.Contains(p.Logs(), `gzip: \"maybe\", want on, static or off`) {
		t.Errorf("the refused reload does not say why:\n%s", p.Logs())
	}

	// -listen is on the command line, which wins: no change.
	write("SEGORIGIN_CACHE_FILES=10\nSEGORIGIN_SHUTDOWN_DELAY=1s\nSEGORIGIN_LISTEN=127.0.0.1:1\n")
	hup(`needs_restart="-shutdown-delay -cache-files"`)
	if r, _ = get(); r.StatusCode != 200 || r.Header.Get("Cache-Control") != "public, max-age=10" {
		t.Fatalf("after a reload back to the defaults: %d, Cache-Control %q; want 200, public, max-age=10", r.StatusCode, r.Header.Get("Cache-Control"))
	}
	_, metrics := httpGet(t, "http://"+p.Addr("admin")+"/metrics")
	for _, want := range []string{`segorigin_config_reloads_total{outcome="applied"} 3`, `segorigin_config_reloads_total{outcome="refused"} 1`, "segorigin_config_restart_pending 2"} {
		if !strings.Contains(metrics, want+"\n") {
			t.Errorf("/metrics has no %q", want)
		}
	}
	p.Stop(t)
}

// keepAliveClient sends request on one connection each time it is
// called, returning the response and its body.
func keepAliveClient(t *testing.T, addr, request string) func() (*http.Response, string) {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(60 * time.Second))
	br := bufio.NewReader(c)
	return func() (*http.Response, string) {
		t.Helper()
		fmt.Fprint(c, request)
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("the connection opened before the reload: %v", err)
		}
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return resp, string(b)
	}
}

func gunzip(t *testing.T, s string) string {
	t.Helper()
	zr, err := gzip.NewReader(strings.NewReader(s))
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	b, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	return string(b)
}
