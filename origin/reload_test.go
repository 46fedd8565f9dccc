package origin_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"segorigin/fixtures/llpack"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// reloadTo is a Reload loader that hands cfg over.
func reloadTo(cfg origin.Config) func() (origin.Config, []string, error) {
	return func() (origin.Config, []string, error) { return cfg, nil, nil }
}

// TestReloadInFlight: a reload changes what the next request gets, on the
// same connection, and never what a request already begun gets: a
// blocking playlist reload parked across it is answered with the old
// settings, all of them (its Cache-Control, no operator header), as
// nginx's old workers finish their requests with the old configuration.
func TestReloadInFlight(t *testing.T) {
	everyMode(t, func(t *testing.T, mode serverMode) {
		root := t.TempDir()
		var cfg origin.Config
		ts := mode.start(t, root, func(c *origin.Config) { cfg = *c })
		p := startPackager(t, root, llpack.Config{TargetDuration: 2, Parts: 4}, 5)
		c := ts.dial()
		c.write("GET", blockingTarget(p))
		testwait.For(t, 5*time.Second, "the request parked", func() bool { return origin.LiveWaiters(ts.srv) == 1 })

		next := cfg
		next.CacheControlBlockingReload = "public, max-age=7"
		next.Headers = []origin.HeaderRule{{Kind: "all", Name: "X-Edition", Value: "two"}}
		done, err := ts.srv.Reload(reloadTo(next))
		if err != nil || !slices.Equal(done.Applied, []string{"-cache-control-blocking-reload", "-header"}) || len(done.Restart) != 0 {
			t.Fatalf("Reload = %+v, %v; want -cache-control-blocking-reload and -header applied, nothing to restart", done, err)
		}
		if err := p.Publish(); err != nil {
			t.Fatal(err)
		}
		r := c.read("GET")
		mustStatus(t, r, 200, "the request parked across the reload")
		mustHeader(t, r, "Cache-Control", "public, max-age=1", "the request parked across the reload")
		mustHeader(t, r, "X-Edition", "", "the request parked across the reload")
		r = c.do("GET", blockingTarget(p)[:strings.Index(blockingTarget(p), "?")]+"?_HLS_msn=0")
		mustStatus(t, r, 200, "a request after the reload")
		mustHeader(t, r, "Cache-Control", "public, max-age=7", "a request after the reload")
		mustHeader(t, r, "X-Edition", "two", "a request after the reload")
	})
}

// TestReloadRefused: a configuration a rule refuses changes nothing and
// is counted; a setting that needs a restart is named, keeps its value,
// and the rest applies.
func TestReloadRefused(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "a.m3u8", "#EXTM3U\n")
	var cfg origin.Config
	ts := startServer(t, root, func(c *origin.Config) { cfg = *c })
	c := ts.dial()

	bad := cfg
	bad.Access, bad.CacheControlPlaylist = "deny all", "max-age=1"
	bad.Gzip = "maybe"
	if _, err := ts.srv.Reload(reloadTo(bad)); err == nil || !strings.Contains(err.Error(), `gzip: "maybe"`) {
		t.Fatalf("Reload(-gzip maybe) = %v, want an error naming gzip", err)
	}
	r := c.do("GET", "/a.m3u8")
	mustStatus(t, r, 200, "after a refused reload")
	mustHeader(t, r, "Cache-Control", "public, max-age=10", "after a refused reload")

	restart := cfg
	restart.CacheFiles, restart.MaxHeaderBytes, restart.Access = 7, 4096, "deny all"
	done, err := ts.srv.Reload(func() (origin.Config, []string, error) { return restart, []string{"-listen"}, nil })
	if want := []string{"-listen", "-cache-files", "-max-header-bytes"}; err != nil || !slices.Equal(done.Restart, want) {
		t.Fatalf("Reload = %+v, %v; want %q to restart", done, err, want)
	}
	mustStatus(t, c.do("GET", "/a.m3u8"), 403, "after a reload to deny all")
	st := ts.srv.Stats().Reload
	if st.Applied != 1 || st.Refused != 1 || st.RestartPending != 3 {
		t.Errorf("Stats().Reload = %+v, want 1 applied, 1 refused, 3 pending a restart", st)
	}
}
