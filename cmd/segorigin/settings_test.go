package main

import (
	"context"
	"encoding/hex"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/origin/token"
)

// TestSettingsRefusedAtStart: a value that cannot mean what it says stops
// the binary at start, with a message naming the flag and what it wants,
// instead of standing for some default.
func TestSettingsRefusedAtStart(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	keys := writeKeyFile(t)
	badAccess := filepath.Join(t.TempDir(), "access.conf")
	if err := os.WriteFile(badAccess, []byte("allow 10.0.0.0/8;\ndeny 10.0.0.0/33;\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"-watch=false", "-revalidate-every", "0"}, "revalidate-every: 0s, want > 0"},
		{[]string{"-revalidate-every", "0"}, "revalidate-every: 0s, want > 0"},
		{[]string{"-access-log-sample", "0"}, "access-log-sample: 0, want >= 1"},
		{[]string{"-auth-public", "/public/"}, "-auth-public needs -auth-key-file or -auth-securelink-secret-file"},
		{[]string{"-auth-key-file", keys, "-auth-skew", "-1s"}, "auth-skew: -1s, want >= 0"},
		{[]string{"-auth-key-file", keys, "-auth-missing-status", "0"}, "auth missing status: 0, want 401 or 403"},
		{[]string{"-auth-key-file", keys, "-auth-query-rewrite-hosts", "https://cdn.example"}, `auth query rewrite hosts: "https://cdn.example", want host or host:port`},
		{[]string{"-auth-key-file", keys, "-auth-query-rewrite-hosts", "cdn.example:"}, `auth query rewrite hosts: "cdn.example:", want host or host:port`},
		{[]string{"-cold-readers", "0", "-readahead-readers", "2"}, "readahead-readers: 2 with cold-readers 0"},
		{[]string{"-cold-readers", "4", "-readahead-readers", "4"}, "readahead-readers: 4, want < cold-readers (4)"},
		{[]string{"-mime", "cmfv=video/mp4"}, "the extension must start with '.'"},
		{[]string{"-mime", ".x=video/mp4:forever"}, `kind "forever", want playlist, segment or other`},
		{[]string{"-access", "allow 10.0.0.0/8; deny nonsense"}, `-access: access: invalid configuration: line 1: deny: invalid parameter "nonsense"`},
		{[]string{"-access", "valid_referers none"}, `-access: access: invalid configuration: valid_referers: the "none" or "blocked" referers are specified without any valid referer`},
		{[]string{"-access-file", badAccess}, "-access-file " + badAccess + `: access: invalid configuration: line 2: deny: invalid parameter "10.0.0.0/33"`},
		{[]string{"-access-file", badAccess + ".missing"}, "-access-file: open " + badAccess + ".missing"},
		{[]string{"-access-file", badAccess, "-access", "deny all"}, "-access and -access-file exclude each other"},
	} {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, append([]string{"-listen", "127.0.0.1:0", "-root", root}, tt.args...)...)
			cmd.Env = testproc.EnvWithout("SEGORIGIN_")
			out, err := cmd.CombinedOutput()
			if err == nil || !strings.Contains(string(out), tt.want) {
				t.Errorf("segorigin %s: err %v, output %q; want a failed start saying %q", strings.Join(tt.args, " "), err, out, tt.want)
			}
		})
	}
}

// TestZeroMeansWhatItSays: on the binary, 0 is no skew, no negative
// cache; -cold-readers alone never conflicts with -readahead-readers, and
// -cold-readers 0 says what it turns off.
func TestZeroMeansWhatItSays(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "seg.ts"), []byte("segment"), 0o644); err != nil {
		t.Fatal(err)
	}
	keys := writeKeyFile(t)

	t.Run("auth-skew 0", func(t *testing.T) {
		// Expired 3 s ago: inside the default 30 s skew, outside none.
		tok, err := token.Sign(testKey, token.Claims{Expiry: time.Now().Add(-3 * time.Second), ACL: []string{"/*"}})
		if err != nil {
			t.Fatal(err)
		}
		target := "/t/" + token.PathSegment(tok) + "/seg.ts"
		for _, tc := range []struct {
			skew string
			want int
		}{{"0", 403}, {"30s", 200}} {
			p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-auth-key-file", keys, "-auth-skew", tc.skew)
			if code, _ := httpGet(t, "http://"+p.Addr("http")+target); code != tc.want {
				t.Errorf("-auth-skew %s, token expired 3s ago: %d, want %d", tc.skew, code, tc.want)
			}
			p.Stop(t)
		}
	})

	t.Run("negative-ttl 0", func(t *testing.T) {
		p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-watch=false", "-negative-ttl", "0")
		defer p.Stop(t)
		url := "http://" + p.Addr("http") + "/late.ts"
		if code, _ := httpGet(t, url); code != 404 {
			t.Fatalf("GET /late.ts before it exists: %d, want 404", code)
		}
		if err := os.WriteFile(filepath.Join(root, "late.ts"), []byte("late"), 0o644); err != nil {
			t.Fatal(err)
		}
		// No watcher, no negative entry: the next request looks again.
		if code, body := httpGet(t, url); code != 200 || body != "late" {
			t.Errorf("GET /late.ts once written, -negative-ttl 0: %d %q, want 200 %q", code, body, "late")
		}
	})

	t.Run("cold-readers 4", func(t *testing.T) {
		p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-cold-readers", "4")
		defer p.Stop(t)
		if code, body := httpGet(t, "http://"+p.Addr("http")+"/seg.ts"); code != 200 || body != "segment" {
			t.Errorf("-cold-readers 4: GET /seg.ts = %d %q, want 200 %q", code, body, "segment")
		}
	})

	t.Run("cold-readers 0", func(t *testing.T) {
		p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-cold-readers", "0")
		if code, _ := httpGet(t, "http://"+p.Addr("http")+"/seg.ts"); code != http.StatusOK {
			t.Errorf("-cold-readers 0: GET /seg.ts = %d, want 200", code)
		}
		p.Stop(t)
		if logs := p.Logs(); !strings.Contains(logs, "cold readers off (cold-readers 0)") || !strings.Contains(logs, "nothing is read ahead") {
			t.Errorf("-cold-readers 0 logged no line saying what it turns off:\n%s", logs)
		}
	})
}

// TestMimeFlag: -mime (repeatable, and SEGORIGIN_MIME one rule a line)
// sets the Content-Type and the Cache-Control class of an extension.
func TestMimeFlag(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := t.TempDir()
	for _, n := range []string{"a.abc", "a.vtt", "a.sub"} {
		if err := os.WriteFile(filepath.Join(root, n), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c := &http.Client{Timeout: 5 * time.Second}
	for _, run := range []struct {
		args, env []string
		want      []struct{ path, ctype, cc string }
	}{
		{
			args: []string{"-mime", ".abc=application/x-abc:playlist", "-mime", ".vtt=text/vtt:other"},
			want: []struct{ path, ctype, cc string }{
				{"/a.abc", "application/x-abc", "public, max-age=10"},
				{"/a.vtt", "text/vtt", "public, max-age=300"},
			},
		},
		{
			env: []string{"SEGORIGIN_MIME=.sub=text/plain; charset=utf-8:segment\n.vtt=text/vtt:playlist"},
			want: []struct{ path, ctype, cc string }{
				{"/a.sub", "text/plain; charset=utf-8", "public, max-age=31536000, immutable"},
				{"/a.vtt", "text/vtt", "public, max-age=10"},
			},
		},
	} {
		cmd := exec.Command(bin, append([]string{"-listen", "127.0.0.1:0", "-root", root}, run.args...)...)
		cmd.Env = append(testproc.EnvWithout("SEGORIGIN_"), run.env...)
		p := testproc.Start(t, cmd)
		for _, tt := range run.want {
			resp, err := c.Get("http://" + p.Addr("http") + tt.path)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if ct, cc := resp.Header.Get("Content-Type"), resp.Header.Get("Cache-Control"); resp.StatusCode != 200 || ct != tt.ctype || cc != tt.cc {
				t.Errorf("%v %v: GET %s: %d, Content-Type %q, Cache-Control %q; want 200, %q, %q",
					run.args, run.env, tt.path, resp.StatusCode, ct, cc, tt.ctype, tt.cc)
			}
		}
		p.Stop(t)
	}
}

var testKey = token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}

// writeKeyFile writes testKey as an -auth-key-file.
func writeKeyFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "keys.txt")
	if err := os.WriteFile(p, []byte(testKey.ID+" "+hex.EncodeToString(testKey.Secret)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
