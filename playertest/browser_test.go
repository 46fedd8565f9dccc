package playertest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

const (
	chromiumPath  = "/usr/bin/chromium" // Debian's package; never a downloaded browser
	targetSeconds = 4                   // playback must pass this (fixtures are 8 s)
	playbackRate  = 2                   // media seconds per second: halves the wait
	caseTimeout   = 30 * time.Second    // per player, to reach targetSeconds
	screenshotDir = "out"               // gitignored; one PNG per player and stream
)

// playerLabel names page/player.js's players in test names.
var playerLabel = map[string]string{"hls": "hlsjs", "dash": "dashjs", "shaka": "shaka"}

// playerCase is one player on one stream, as driver.mjs reads it.
type playerCase struct {
	Name       string `json:"name"`
	Player     string `json:"player"` // hls, dash or shaka (page/player.js)
	Src        string `json:"src"`
	ExpectFail bool   `json:"expectFail,omitempty"`
	CMCD       string `json:"cmcd,omitempty"` // "header": the player sends CMCD in request headers
	// Seek: once playback passes 1 s the page seeks here (seconds), and
	// the case passes when playback passes Seek+1 after the seek.
	Seek float64 `json:"seek,omitempty"`

	stream stream
	token  string // the query token Src carries ("" for none): every media URL must carry it
	root   string // the tree the server serves ("" for mediaRoot), to judge bodies against
	signed bool   // Src's credential is for the manifest alone: the origin signs each URI in it
}

// driverOutput is what driver.mjs prints.
type driverOutput struct {
	BrowserVersion string         `json:"browserVersion"`
	PageOrigin     string         `json:"pageOrigin"`
	Results        []playerResult `json:"results"`
}

type playerResult struct {
	Name        string         `json:"name"`
	Passed      bool           `json:"passed"`
	Seeked      bool           `json:"seeked"`
	Version     string         `json:"version"`
	CurrentTime float64        `json:"currentTime"`
	Fatal       []string       `json:"fatal"`
	Warnings    []string       `json:"warnings"`
	Timeout     string         `json:"timeout"`
	Error       string         `json:"error"`
	Console     []string       `json:"console"`
	Screenshot  string         `json:"screenshot"`
	VideoWidth  int            `json:"videoWidth"`
	VideoHeight int            `json:"videoHeight"`
	ElapsedMs   int            `json:"elapsedMs"`
	Requests    []mediaRequest `json:"requests"`
}

// mediaRequest is one request the page made to the media origin.
type mediaRequest struct {
	At     int64 `json:"at"` // ms since 1970 when the answer (or failure) came
	Timing struct {
		StartTime float64 `json:"startTime"` // ms since 1970 when the request was sent
	} `json:"timing"`
	Sent          float64 `json:"sent"` // ms since 1970 when it was sent
	TTFB          float64 `json:"ttfb"` // ms from sent to the answer's first byte
	URL           string  `json:"url"`
	Method        string  `json:"method"`
	Range         string  `json:"range"`
	IfRange       string  `json:"ifRange"`
	Status        int     `json:"status"`
	ContentRange  string  `json:"contentRange"`
	ContentLength string  `json:"contentLength"`
	// ContentEncoding: gzip for a playlist or manifest the server
	// compressed (the body above is what the browser decoded).
	ContentEncoding string   `json:"contentEncoding"`
	AllowOrigin     string   `json:"allowOrigin"`
	CMCD            []string `json:"cmcd"` // the request's CMCD-* headers, "name: value"
	BodyLength      int64    `json:"bodyLength"`
	SHA256          string   `json:"sha256"`
	BodyError       string   `json:"bodyError"`
	Text            string   `json:"text"` // the body of a playlist or manifest
	Failure         string   `json:"failure"`
}

// querySeek is where the query-token cases seek to (seconds).
const querySeek = 4

// TestBrowserPlayers plays every HLS stream with hls.js and every DASH stream
// with dash.js and Shaka Player in headless Chromium, from a page on another
// origin, plainly, through a path token and through a query token (seeking
// too; the playlists rewritten to carry it); and checks that a player
// without a token is refused with a 401 it can read; and plays the titles
// signed for the manifest alone (signedPlayerCases: AES-128 HLS, DASH
// SegmentTemplate and SegmentBase under secure_link and a query token).
// Every request the page made to segorigin is checked against the file on
// disk.
func TestBrowserPlayers(t *testing.T) {
	testreq.Slow(t, "plays every stream in Chromium with hls.js, dash.js and Shaka")
	requireBrowser(t)
	variants, auth := startVariants(t)

	var cases []playerCase
	for _, v := range variants {
		if v.tls && v.token {
			continue // TLS and tokens are independent; TestFFmpeg runs the pair, this saves 25 s
		}
		for _, s := range streamsFor(v) {
			src, tok := v.src(t, s.manifest)
			players := []string{"hls"}
			if s.dash {
				players = []string{"dash", "shaka"}
			}
			for _, p := range players {
				c := playerCase{Name: v.name + "-" + playerLabel[p] + "-" + s.name, Player: p, Src: src, stream: s, token: tok}
				if v.query {
					c.Seek = querySeek
				}
				cases = append(cases, c)
			}
		}
	}
	// CMCD in header mode, cross-origin: the preflight must allow the four
	// CMCD headers or no media request gets through.
	for _, pc := range []struct{ player, stream string }{{"hls", "hls-fmp4"}, {"dash", "dash-template"}} {
		s := streamNamed(t, pc.stream)
		src, _ := variants[0].src(t, s.manifest)
		cases = append(cases, playerCase{Name: "cmcd-header-" + playerLabel[pc.player] + "-" + s.name,
			Player: pc.player, Src: src, CMCD: "header", stream: s})
	}
	// Without a token: the player must stop on the 401 (hls.js on a playlist,
	// dash.js on an MPD).
	for _, pc := range []struct{ player, stream string }{{"hls", "hls-ts"}, {"dash", "dash-ondemand"}} {
		s := streamNamed(t, pc.stream)
		cases = append(cases, playerCase{Name: "notoken-" + playerLabel[pc.player] + "-" + s.name,
			Player: pc.player, Src: auth.url(auth.base, s.manifest), ExpectFail: true, stream: s})
	}

	// Signed for the manifest alone (secure_link, a query token): the
	// origin signs every URI in it, templates and keys included.
	cases = append(cases, signedPlayerCases(t)...)

	out := runDriver(t, cases)
	t.Logf("Chromium %s; page origin %s", out.BrowserVersion, out.PageOrigin)
	if len(out.Results) != len(cases) {
		t.Fatalf("driver returned %d results for %d cases", len(out.Results), len(cases))
	}
	var summary []string
	for i, c := range cases {
		r := out.Results[i]
		t.Run(c.Name, func(t *testing.T) {
			if r.Name != c.Name {
				t.Fatalf("result %d is for %q, want %q", i, r.Name, c.Name)
			}
			if c.ExpectFail {
				checkRefused(t, c, r)
				return
			}
			checkPlayed(t, c, r)
			ranged := checkRequests(t, c, r, out.PageOrigin)
			if c.CMCD != "" {
				checkCMCD(t, c, r)
			}
			line := fmt.Sprintf("%-30s %-5s %-7s t=%.2fs %dx%d requests=%d ranged=%d preflights=%d (%d ms)",
				c.Name, c.Player, r.Version, r.CurrentTime, r.VideoWidth, r.VideoHeight, len(r.Requests), ranged, countMethod(r.Requests, "OPTIONS"), r.ElapsedMs)
			summary = append(summary, line)
			t.Log(line)
		})
	}
	t.Logf("summary of the cases that played (ranged: requests with a Range header):\n%s", strings.Join(summary, "\n"))
}

func streamNamed(t *testing.T, name string) stream {
	t.Helper()
	for _, s := range streams {
		if s.name == name {
			return s
		}
	}
	t.Fatalf("no stream named %q", name)
	return stream{}
}

func countMethod(reqs []mediaRequest, method string) int {
	n := 0
	for _, q := range reqs {
		if q.Method == method {
			n++
		}
	}
	return n
}

// checkPlayed: playback passed the target time with no fatal player error.
func checkPlayed(t *testing.T, c playerCase, r playerResult) {
	t.Helper()
	target := float64(targetSeconds)
	if c.Seek > 0 {
		target = c.Seek + 1
		if !r.Seeked {
			t.Errorf("%s %s on %s: never seeked to %gs", c.Player, r.Version, c.Src, c.Seek)
		}
	}
	if !r.Passed || len(r.Fatal) > 0 || r.Error != "" || r.CurrentTime < target {
		t.Errorf("%s %s on %s: currentTime %.2fs (want ≥ %gs), fatal %q, error %q, %s; console %q",
			c.Player, r.Version, c.Src, r.CurrentTime, target, r.Fatal, r.Error, r.Timeout, r.Console)
	}
	if len(r.Warnings) > 0 {
		t.Logf("%s recovered from: %q", c.Player, r.Warnings)
	}
	if r.VideoWidth == 0 {
		t.Errorf("%s on %s: video has no decoded size (videoWidth 0)", c.Player, c.Src)
	}
	if st, err := os.Stat(r.Screenshot); err != nil || st.Size() == 0 {
		t.Errorf("screenshot %q: %v", r.Screenshot, err)
	}
}

// checkCMCD: the player sent CMCD headers on media requests that
// succeeded, which a browser allows only after a preflight that listed
// them.
func checkCMCD(t *testing.T, c playerCase, r playerResult) {
	t.Helper()
	with := 0
	var example []string
	for _, q := range r.Requests {
		if q.Method == "GET" && q.Status >= 200 && q.Status < 300 && len(q.CMCD) > 0 {
			with++
			example = q.CMCD
		}
	}
	if with == 0 {
		t.Errorf("%s on %s with CMCD in headers: no successful GET carried CMCD-* headers (requests %+v)", c.Player, c.Src, r.Requests)
		return
	}
	t.Logf("%d successful GETs carried CMCD headers, e.g. %q", with, example)
}

// checkRefused: without a token the player stops with a fatal error, and the
// 401 reached it with CORS headers (else it would see a network error).
func checkRefused(t *testing.T, c playerCase, r playerResult) {
	t.Helper()
	if len(r.Fatal) == 0 {
		t.Errorf("%s on %s without a token: no fatal error (currentTime %.2fs)", c.Player, c.Src, r.CurrentTime)
	}
	got := 0
	for _, q := range r.Requests {
		if q.Status == 401 && q.AllowOrigin != "" {
			got++
		}
	}
	if got == 0 {
		t.Errorf("%s on %s without a token: no 401 with Access-Control-Allow-Origin among %+v", c.Player, c.Src, r.Requests)
	}
	t.Logf("refused as expected: %q", r.Fatal)
}

// runDriver runs driver.mjs over the cases, one browser for all of them.
func runDriver(t *testing.T, cases []playerCase) driverOutput {
	t.Helper()
	// The folder shows this run only: drop the screenshots of earlier ones.
	stale, _ := filepath.Glob(filepath.Join(screenshotDir, "*.png"))
	for _, f := range stale {
		os.Remove(f)
	}
	var out driverOutput
	runDriverConfig(t, map[string]any{"targetSeconds": targetSeconds, "timeoutMs": caseTimeout.Milliseconds(),
		"rate": playbackRate, "cases": cases}, time.Duration(len(cases))*(caseTimeout+10*time.Second), &out)
	return out
}

// runDriverConfig runs driver.mjs with cfg (outDir added), for at most a
// minute more than limit, and decodes what it prints into out.
func runDriverConfig(t *testing.T, cfg map[string]any, limit time.Duration, out any) {
	t.Helper()
	outDir, err := filepath.Abs(screenshotDir)
	if err != nil {
		t.Fatal(err)
	}
	cfg["outDir"] = outDir
	b, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfgFile := filepath.Join(t.TempDir(), "cases.json")
	if err := os.WriteFile(cfgFile, b, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute+limit)
	defer cancel()
	cmd := exec.CommandContext(ctx, "node", "driver.mjs", cfgFile)
	// On timeout, SIGTERM lets playwright close Chromium before node exits.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err = cmd.Run()
	t.Logf("driver.mjs (%s):\n%s", time.Since(start).Round(time.Millisecond), strings.TrimSpace(stderr.String()))
	if err != nil {
		t.Fatalf("node driver.mjs: %v", err)
	}
	if err := json.Unmarshal(stdout.Bytes(), out); err != nil {
		t.Fatalf("driver.mjs output: %v\n%.2000s", err, stdout.String())
	}
}

// requireBrowser fails (never skips, except under -short) when Chromium,
// node or the npm packages are missing: a skipped player test would hide
// a broken install.
func requireBrowser(t *testing.T) {
	t.Helper()
	const fix = "run `make test` (or `bash .ci/deps`, which installs Debian's chromium and runs `npm ci --prefix playertest`)"
	testreq.File(t, chromiumPath, "Debian's Chromium: "+fix)
	testreq.Tool(t, "node", fix)
	for _, pkg := range []string{"playwright-core", "hls.js", "dashjs", "shaka-player"} {
		testreq.File(t, filepath.Join("node_modules", pkg, "package.json"), "npm package "+pkg+": "+fix)
	}
}
