package main

import (
	"bytes"
	"fmt"
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
	"segorigin/origin/token"
)

// linkSecret is the secure_link secret of linkForms: in a file for
// segorigin, written into the expression for nginx.
const linkSecret = "s3cr3t"

// linkForm is one way operators configure nginx's secure_link, with the
// segorigin flags and `segorigin sign` flags that do the same.
type linkForm struct {
	name     string
	args     string   // secure_link's argument list, as nginx writes it; also -auth-securelink-args
	expr     string   // secure_link_md5 with $secret for the secret; also -auth-securelink-expression
	location string   // the location's regular expression; also -auth-securelink-location
	sign     []string // `segorigin sign` flags besides the secret, the expression, the arguments and the location
	headers  []string // the player's request headers ("Name: value")
	// wrong are requests the link must not open: the link's target with
	// a replacement applied to it (old → new), or other headers.
	wrong []linkWrong
	// also is another path the link opens (a capture's directory).
	also string
}

type linkWrong struct {
	name, old, new string
	headers        []string
}

// linkURI is the path every form's link is signed for.
const linkURI = "/vod/t1/seg1.ts"

var linkForms = []linkForm{
	{name: "documented", args: "$arg_md5,$arg_expires", expr: "$secure_link_expires$uri$remote_addr $secret",
		sign:  []string{"-remote-addr", "127.0.0.1"},
		wrong: []linkWrong{{name: "other file", old: "seg1", new: "seg2"}}},
	{name: "capture", args: "$arg_md5,$arg_expires", expr: "$secure_link_expires$1 $secret", location: "^/vod/([^/]+)/",
		also:  "/vod/t1/seg2.ts",
		wrong: []linkWrong{{name: "other title", old: "/t1/", new: "/t2/"}}},
	{name: "user agent", args: "$arg_md5,$arg_expires", expr: "$secure_link_expires$uri$http_user_agent $secret",
		sign: []string{"-user-agent", "VLC/3.0.18"}, headers: []string{"User-Agent: VLC/3.0.18"},
		wrong: []linkWrong{{name: "other player", headers: []string{"User-Agent: curl/8.0"}}}},
	{name: "other header", args: "$arg_md5,$arg_expires", expr: "$secure_link_expires$uri$http_x_viewer_id $secret",
		sign: []string{"-header", "X-Viewer-Id: 42"}, headers: []string{"X-Viewer-Id: 42"},
		wrong: []linkWrong{{name: "other viewer", headers: []string{"X-Viewer-Id: 43"}}}},
	{name: "argument", args: "$arg_md5,$arg_expires", expr: "$secure_link_expires$uri$arg_user $secret",
		sign:  []string{"-arg", "user=alice"},
		wrong: []linkWrong{{name: "other user", old: "user=alice", new: "user=bob"}}},
	{name: "no expiry", args: "$arg_md5", expr: "$uri $secret",
		wrong: []linkWrong{{name: "other file", old: "seg1", new: "seg2"}}},
	{name: "argument names", args: "$arg_st,$arg_e", expr: "$arg_e$uri$remote_addr $secret",
		sign:  []string{"-remote-addr", "127.0.0.1"},
		wrong: []linkWrong{{name: "default names", old: "st=", new: "md5="}}},
}

// linkCase is one request and the status nginx's secure_link gives it
// (with `if ($secure_link = "") { return 403; }` and `if ($secure_link =
// "0") { return 410; }`, as in its documentation).
type linkCase struct {
	name, target string
	headers      []string
	want         int
}

// linkCases mints f's link with `segorigin sign` (the binary bin) and
// returns the requests to try: the link (200), another path it opens,
// the wrong ones and no hash (403), and the link past its expiry (410).
func linkCases(t *testing.T, bin, secretFile string, f linkForm) []linkCase {
	t.Helper()
	argv := append([]string{"sign", "-securelink-secret-file", secretFile, "-securelink-args", f.args,
		"-securelink-expression", f.expr, "-securelink-location", f.location, "-scope", linkURI}, f.sign...)
	out, err := exec.Command(bin, argv...).CombinedOutput()
	if err != nil {
		t.Fatalf("segorigin %q: %v\n%s", argv, err, out)
	}
	link := strings.TrimSpace(string(out))
	if !strings.HasPrefix(link, linkURI+"?") {
		t.Fatalf("segorigin sign printed %q, want %s?...", link, linkURI)
	}
	cases := []linkCase{
		{"link", link, f.headers, 200},
		{"no hash", linkURI, f.headers, 403},
	}
	if f.also != "" {
		cases = append(cases, linkCase{"another file it opens", strings.Replace(link, linkURI, f.also, 1), f.headers, 200})
	}
	for _, w := range f.wrong {
		c := linkCase{w.name, link, f.headers, 403}
		if w.old != "" {
			c.target = strings.Replace(link, w.old, w.new, 1)
		}
		if w.headers != nil {
			c.headers = w.headers
		}
		cases = append(cases, c)
	}
	if hashArg, expiresArg, _ := token.ParseSecureLinkArgs(f.args); expiresArg != "" {
		// sign mints no expired link (-ttl must be positive): the
		// package it calls does, with the same request fields.
		s, err := token.NewSecureLink(token.SecureLinkConfig{Secret: linkSecret, Expression: f.expr,
			HashArg: hashArg, ExpiresArg: expiresArg, Location: f.location})
		if err != nil {
			t.Fatal(err)
		}
		r := token.LinkRequest{URI: linkURI, RemoteAddr: "127.0.0.1"}
		for i, h := range s.Headers() {
			r.Headers[i] = []byte(headerValue(f.headers, h))
		}
		for i := range s.Args() {
			r.Args[i] = []byte("alice")
		}
		hash, exp, err := s.Sign(r, time.Now().Add(-time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		query := strings.Split(link[len(linkURI)+1:], "&")
		query = append(query[:len(query)-2], hashArg+"="+hash, expiresArg+"="+exp)
		cases = append(cases, linkCase{"expired", linkURI + "?" + strings.Join(query, "&"), f.headers, 410})
	}
	return cases
}

func headerValue(headers []string, name string) string {
	for _, h := range headers {
		if n, v, _ := strings.Cut(h, ": "); strings.EqualFold(n, name) {
			return v
		}
	}
	return ""
}

// linkRoot writes the files the links name.
func linkRoot(t *testing.T) string {
	root := t.TempDir()
	for _, p := range []string{"vod/t1/seg1.ts", "vod/t1/seg2.ts", "vod/t2/seg1.ts"} {
		os.MkdirAll(filepath.Join(root, filepath.Dir(p)), 0o755)
		if err := os.WriteFile(filepath.Join(root, p), []byte(p), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// checkLinkCases sends each case to base and compares the status.
func checkLinkCases(t *testing.T, server, base string, cases []linkCase) {
	t.Helper()
	for _, c := range cases {
		req, err := http.NewRequest("GET", base+c.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, h := range c.headers {
			n, v, _ := strings.Cut(h, ": ")
			req.Header.Set(n, v)
		}
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s: GET %s %q: status %d, want %d", server, c.target, c.headers, resp.StatusCode, c.want)
		}
	}
}

// TestSecureLinkForms: every form of nginx's secure_link in the table,
// minted by `segorigin sign`, is accepted by a server given the same
// settings; a wrong link is refused (403), and an expired one gets the
// status the operator chose (410 here).
func TestSecureLinkForms(t *testing.T) {
	bin := testproc.Build(t, "./cmd/segorigin")
	root := linkRoot(t)
	secretFile := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secretFile, []byte(linkSecret+"\n"), 0o600)
	for _, f := range linkForms {
		t.Run(f.name, func(t *testing.T) {
			p := start(t, bin, "-listen", "127.0.0.1:0", "-root", root, "-settle", "0",
				"-auth-securelink-secret-file", secretFile, "-auth-securelink-args", f.args,
				"-auth-securelink-expression", f.expr, "-auth-securelink-location", f.location,
				"-auth-missing-status", "403", "-auth-securelink-expired-status", "410")
			checkLinkCases(t, "segorigin", "http://"+p.Addr("http"), linkCases(t, bin, secretFile, f))
		})
	}
}

// TestSecureLinkFormsNginx: nginx, configured with each form's
// directives, answers the same requests as TestSecureLinkForms the same
// way: the table's claims are nginx's behaviour, not only segorigin's.
func TestSecureLinkFormsNginx(t *testing.T) {
	nginx := testreq.Tool(t, "nginx", "the Debian package nginx, which .ci/deps installs")
	bin := testproc.Build(t, "./cmd/segorigin")
	root := linkRoot(t)
	secretFile := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secretFile, []byte(linkSecret+"\n"), 0o600)
	dir := t.TempDir()
	var servers strings.Builder
	ports := make([]int, len(linkForms))
	for i, f := range linkForms {
		ports[i] = testproc.FreePort(t)
		loc := f.location
		if loc == "" {
			loc = "^/"
		}
		fmt.Fprintf(&servers, `server {
    listen 127.0.0.1:%d;
    root %s;
    location ~ %s {
        secure_link %s;
        secure_link_md5 "%s";
        if ($secure_link = "") { return 403; }
        if ($secure_link = "0") { return 410; }
    }
}
`, ports[i], root, loc, f.args, strings.ReplaceAll(f.expr, "$secret", linkSecret))
	}
	user := "" // not root: the workers run as this user, who owns the files
	if os.Geteuid() == 0 {
		user = "user root;" // the test's temporary directories are root's alone
	}
	conf := fmt.Sprintf(`%[3]s
worker_processes 1;
pid %[1]s/nginx.pid;
error_log %[1]s/error.log;
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %[1]s/body; proxy_temp_path %[1]s/proxy; fastcgi_temp_path %[1]s/fastcgi;
    uwsgi_temp_path %[1]s/uwsgi; scgi_temp_path %[1]s/scgi;
%[2]s}
`, dir, servers.String(), user)
	confPath := filepath.Join(dir, "nginx.conf")
	os.WriteFile(confPath, []byte(conf), 0o644)
	stopNginx := runNginx(t, nginx, confPath, dir, ports)
	defer stopNginx()
	for i, f := range linkForms {
		t.Run(f.name, func(t *testing.T) {
			checkLinkCases(t, "nginx", fmt.Sprintf("http://127.0.0.1:%d", ports[i]), linkCases(t, bin, secretFile, f))
		})
	}
}

// runNginx starts nginx in the foreground in its own process group and
// waits (5 s at most) until every port accepts; the returned function
// stops it (SIGTERM, then SIGKILL to the group after 5 s) and waits for
// it. The goroutine that waits for the process ends when it exits.
func runNginx(t *testing.T, nginx, conf, dir string, ports []int) func() {
	t.Helper()
	if out, err := exec.Command(nginx, "-t", "-c", conf, "-p", dir).CombinedOutput(); err != nil {
		t.Fatalf("nginx -t: %v\n%s", err, out)
	}
	cmd := exec.Command(nginx, "-c", conf, "-p", dir, "-g", "daemon off;")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, port := range ports {
		for {
			c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				stop()
				t.Fatalf("nginx not accepting on port %d after 5s: %v\n%s", port, err, out.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	return stop
}
