package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
	"segorigin/internal/testwait"
)

// releaseFiles are the names every release holds: a playlist small enough
// to be kept in memory by the cache and a segment sent by sendfile.
var releaseFiles = []string{"x.m3u8", "seg.ts"}

// releaseBytes is what release n's file name holds.
func releaseBytes(n int, name string) []byte {
	if name == "x.m3u8" {
		return []byte("#EXTM3U\n#EXT-X-VERSION:3\n# release " + strconv.Itoa(n) + "\n")
	}
	b := make([]byte, 300<<10)
	synth.Fill("release"+strconv.Itoa(n), 0, b)
	return b
}

// swapSymlink points link at target as deploy tools swap a release: a new
// link renamed over the old one (ln -sfn target link.tmp && mv -T
// link.tmp link), so the name never misses.
func swapSymlink(t *testing.T, target, link string) {
	t.Helper()
	tmp := link + ".tmp"
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
}

// TestReleaseSwapBySymlink: a release swapped by symlink, a directory link
// inside the root (root/vod -> releases/N) or the root itself (-root
// current, current -> releases/N), while clients download every file:
// each response is exactly one release's file, once a client has seen a
// file from the new release no request started later gets it from an
// older one, every swap is seen (polled, bounded), and /readyz answers
// 200 throughout. nginx bounds the same staleness with
// open_file_cache_valid; docs/operations.md says how segorigin does.
func TestReleaseSwapBySymlink(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	for _, tt := range []struct {
		name   string
		link   string // the link swapped, relative to the test dir
		root   string // -root, relative to the test dir
		prefix string // the URL path of a release's files
		flags  []string
	}{
		{name: "directory link in the root", link: "media/vod", root: "media", prefix: "/vod/"},
		{name: "directory link, follow-symlinks", link: "media/vod", root: "media", prefix: "/vod/", flags: []string{"-follow-symlinks"}},
		{name: "root link", link: "current", root: "current", prefix: "/"},
		{name: "root link, no watcher", link: "current", root: "current", prefix: "/", flags: []string{"-watch=false"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const releases = 5
			dir := t.TempDir()
			if err := os.MkdirAll(filepath.Join(dir, "media"), 0o755); err != nil {
				t.Fatal(err)
			}
			// Releases of a link inside the root live inside it (os.Root
			// refuses a link out of the root without -follow-symlinks).
			base := filepath.Join(dir, "releases")
			target := func(n int) string { return filepath.Join(base, strconv.Itoa(n)) }
			if tt.root == "media" {
				base = filepath.Join(dir, "media", "releases")
				target = func(n int) string { return "releases/" + strconv.Itoa(n) }
			}
			for n := 1; n <= releases; n++ {
				for _, name := range releaseFiles {
					p := filepath.Join(base, strconv.Itoa(n), name)
					if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(p, releaseBytes(n, name), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			link := filepath.Join(dir, tt.link)
			swapSymlink(t, target(1), link)
			argv := append([]string{bin, "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0",
				"-root", filepath.Join(dir, tt.root), "-settle", "0"}, tt.flags...)
			p := start(t, argv...)
			base0 := "http://" + p.Addr("http") + tt.prefix
			sw := newSwapWatch(t, base0, "http://"+p.Addr("admin")+"/readyz", releases)
			sw.run(4)
			for n := 1; n <= releases; n++ {
				if n > 1 {
					swapSymlink(t, target(n), link)
				}
				for _, name := range releaseFiles {
					testwait.For(t, 10*time.Second, fmt.Sprintf("%s from release %d", name, n), func() bool {
						return sw.fetch(name) == n
					})
					sw.seen(name, n)
				}
			}
			sw.stop()
			p.Stop(t)
		})
	}
}

// swapWatch is the clients of TestReleaseSwapBySymlink and what they saw.
type swapWatch struct {
	t       *testing.T
	base    string
	readyz  string
	client  *http.Client
	want    map[string][][]byte      // by name: each release's bytes, release n at n-1
	floor   map[string]*atomic.Int64 // by name: the newest release a response has been seen from
	done    chan struct{}            // closed by stop
	stopped sync.Once
	wg      sync.WaitGroup // the clients
	got     atomic.Int64   // responses checked
}

func newSwapWatch(t *testing.T, base, readyz string, releases int) *swapWatch {
	sw := &swapWatch{t: t, base: base, readyz: readyz,
		client: &http.Client{Timeout: 10 * time.Second}, want: map[string][][]byte{}, floor: map[string]*atomic.Int64{},
		done: make(chan struct{})}
	for _, name := range releaseFiles {
		sw.floor[name] = new(atomic.Int64)
		for n := 1; n <= releases; n++ {
			sw.want[name] = append(sw.want[name], releaseBytes(n, name))
		}
	}
	return sw
}

// run starts n clients fetching every file, and one probing /readyz; the
// goroutines are sw's, ended by stop (also registered as a cleanup).
func (sw *swapWatch) run(n int) {
	t := sw.t
	t.Cleanup(sw.stop)
	for i := range n {
		sw.wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-sw.done:
					return
				default:
				}
				name := releaseFiles[(i+j)%len(releaseFiles)]
				floor := sw.floor[name].Load()
				if got := sw.fetch(name); got < int(floor) {
					t.Errorf("GET %s started after release %d was seen answered from release %d", name, floor, got)
					return
				}
			}
		})
	}
	sw.wg.Go(func() {
		for {
			select {
			case <-sw.done:
				return
			case <-time.After(5 * time.Millisecond):
			}
			resp, err := sw.client.Get(sw.readyz)
			if err != nil {
				t.Errorf("/readyz: %v", err)
				return
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("/readyz during release swaps: %d, want 200", resp.StatusCode)
				return
			}
		}
	})
}

// stop ends the clients and waits for them; once.
func (sw *swapWatch) stop() {
	sw.stopped.Do(func() {
		close(sw.done)
		sw.wg.Wait()
		if sw.got.Load() == 0 {
			sw.t.Error("no response checked")
		}
	})
}

// seen records that a response from release n was seen for name.
func (sw *swapWatch) seen(name string, n int) { sw.floor[name].Store(int64(n)) }

// fetch GETs name and returns the release its body is wholly from; a
// body from no single release fails the test (and returns 0).
func (sw *swapWatch) fetch(name string) int {
	resp, err := sw.client.Get(sw.base + name)
	if err != nil {
		sw.t.Errorf("GET %s: %v", name, err)
		return 0
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		sw.t.Errorf("GET %s: %d, %v", name, resp.StatusCode, err)
		return 0
	}
	sw.got.Add(1)
	for i, want := range sw.want[name] {
		if bytes.Equal(body, want) {
			return i + 1
		}
	}
	sw.t.Errorf("GET %s: %d bytes from no single release", name, len(body))
	return 0
}
