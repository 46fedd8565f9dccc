package deploy_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

// rootfsDir is where the Debian tree the container boots is kept between
// runs (made by debootstrap on first use, about a minute, then reused:
// every boot is an --ephemeral copy of it, so no run changes it).
// SEGORIGIN_TEST_ROOTFS names another place.
const rootfsDir = "/var/cache/segorigin-test/bookworm"

// rootfsPackages are what the tree holds beyond debootstrap's minbase: a
// booting systemd, procps (kill, for ExecReload=), curl for the requests,
// logrotate for its file.
const rootfsPackages = "systemd,systemd-sysv,dbus,procps,curl,logrotate"

// TestPackageUnderSystemd installs the .deb `make deb` builds in a Debian
// 12 container booted by systemd-nspawn (systemd 252 as PID 1, a network
// of its own) and runs it as an operator would on a first afternoon, each
// step over TCP from inside the container:
//   - the package makes the user, /etc/segorigin (0750 root:segorigin) and
//     /var/log/segorigin (2750 segorigin:adm);
//   - without /srv/media the start fails and the journal says why (no
//     226/NAMESPACE, no credential error);
//   - with it, the shipped /etc/default/segorigin (HTTP only, no TLS or
//     key file) starts, serves the exact bytes and logs the URL to play;
//     the access log is 0640 segorigin:adm, and stays so after the
//     shipped logrotate file rotates it;
//   - a line added to /etc/default/segorigin (SEGORIGIN_ACCESS=deny all)
//     takes effect on `systemctl reload`, on a connection opened before
//     it too, without a restart;
//   - the secure_link example starts as documented; ffmpeg plays a title
//     from a link `segorigin sign` made, decoding exactly the frames the
//     files on disk hold; a link signed with a new secret is refused
//     until `systemctl reload`, accepted (and played) after it, and the
//     old secret's link refused from then on, the service never restarted;
//   - the title's release swapped by symlink (ln -sfn, mv -T) is served
//     from the new release, and ffmpeg plays that release;
//   - Prometheus, scraping the service as a static job and as the pod of
//     deploy/kubernetes found by annotation discovery, loads the shipped
//     alert rules (each healthy), and every query of the shipped
//     dashboard returns data for either job;
//   - installing the package over itself (an upgrade) restarts the
//     running service.
func TestPackageUnderSystemd(t *testing.T) {
	testreq.Slow(t, "builds the package and boots systemd in a container (first run: debootstrap, about a minute)")
	testreq.Root(t, "systemd-nspawn boots a container")
	nspawn := testreq.Tool(t, "systemd-nspawn", "the Debian package systemd-container, which .ci/deps installs")
	debootstrap := testreq.Tool(t, "debootstrap", "the Debian package debootstrap, which .ci/deps installs")
	unshare := testreq.Tool(t, "unshare", "the Debian package util-linux")
	nsenter := testreq.Tool(t, "nsenter", "the Debian package util-linux")
	testreq.Tool(t, "ffmpeg", "the Debian package ffmpeg, which .ci/deps installs")
	testreq.Tool(t, "prometheus", "the Debian package prometheus, which .ci/deps installs")

	tree := debianTree(t, debootstrap)
	pkgDir := t.TempDir()
	deb := makeDeb(t, "v1.2.3-test", "0123456789abcdef0123456789abcdef01234567", "1.2.3+test")
	if err := os.Link(deb, filepath.Join(pkgDir, "segorigin.deb")); err != nil {
		t.Fatal(err)
	}
	releases(t, filepath.Join(pkgDir, "media"))
	c := boot(t, unshare, nspawn, nsenter, tree, pkgDir)

	c.sh(t, "dpkg -i /pkg/segorigin.deb")
	t.Run("install", func(t *testing.T) {
		for path, want := range map[string]string{
			"/etc/segorigin":     "750 root segorigin",
			"/var/log/segorigin": "2750 segorigin adm",
		} {
			if got := c.sh(t, "stat -c '%a %U %G' "+path); got != want+"\n" {
				t.Errorf("%s: %q, want %q", path, got, want)
			}
		}
		if c.ok("systemctl is-active segorigin") {
			t.Errorf("the package started the service: it should only install it")
		}
	})
	t.Run("no media root", func(t *testing.T) {
		if c.ok("systemctl start segorigin") {
			t.Fatal("segorigin started without /srv/media")
		}
		journal := c.sh(t, "journalctl -u segorigin --no-pager -o cat")
		if !strings.Contains(journal, "root: stat /srv/media: no such file or directory") {
			t.Errorf("the journal does not say the root is missing:\n%s", journal)
		}
		for _, bad := range []string{"226/NAMESPACE", "243/CREDENTIALS"} {
			if strings.Contains(journal, bad) {
				t.Errorf("the journal has %s:\n%s", bad, journal)
			}
		}
		c.sh(t, "systemctl reset-failed segorigin")
	})

	const playlist = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:4\n#EXTINF:4.0,\nseg0.ts\n#EXT-X-ENDLIST\n"
	c.sh(t, "install -d -m 755 /srv/media/hls && printf '%s' '"+playlist+"' > /srv/media/hls/master.m3u8")
	c.sh(t, "cp -r /pkg/media/releases /srv/media/ && ln -s releases/a /srv/media/vod")
	t.Run("http only", func(t *testing.T) {
		c.sh(t, "systemctl start segorigin")
		// A file changed less than -settle (2 s) ago is answered 503 +
		// Retry-After; curl --retry waits for it (10 tries at most).
		if got := c.sh(t, "curl -sS --fail --retry 10 --retry-delay 1 http://127.0.0.1/hls/master.m3u8"); got != playlist {
			t.Errorf("GET /hls/master.m3u8 = %q, want %q\n%s", got, playlist, c.sh(t, "curl -si http://127.0.0.1/hls/master.m3u8; journalctl -u segorigin --no-pager -o cat | tail"))
		}
		if j := c.sh(t, "journalctl -u segorigin --no-pager -o cat"); !strings.Contains(j, `"url":"http://`) {
			t.Errorf("the start-up log gives no URL to play:\n%s", j)
		}
		checkLogMode(t, c, "/var/log/segorigin/access.log")
		c.sh(t, "logrotate -f /etc/logrotate.d/segorigin")
		c.sh(t, "curl -sS --fail -o /dev/null http://127.0.0.1/hls/master.m3u8")
		checkLogMode(t, c, "/var/log/segorigin/access.log")
		checkLogMode(t, c, "/var/log/segorigin/access.log.1")
		if got := c.sh(t, "cat /var/log/segorigin/access.log"); strings.Count(got, "GET /hls/master.m3u8") != 1 {
			t.Errorf("after logrotate, access.log holds %q, want the one request made since", got)
		}
	})
	t.Run("poller auto: io_uring under the shipped unit, epoll where a drop-in forbids it", func(t *testing.T) {
		// The shipped unit's @system-service filter allows io_uring
		// (its @aio): -poller auto gives the loops io_uring. A drop-in
		// that filters io_uring_setup out, as a container's seccomp
		// profile does, leaves them on epoll: the server starts, says
		// so once, and serves.
		get := func(when string) {
			if got := c.sh(t, "curl -sS --fail --retry 10 --retry-delay 1 http://127.0.0.1/hls/master.m3u8"); got != playlist {
				t.Errorf("%s: GET /hls/master.m3u8 = %q, want %q", when, got, playlist)
			}
		}
		c.sh(t, "cp /etc/default/segorigin /etc/default/segorigin.poller && echo SEGORIGIN_POLLER=auto >> /etc/default/segorigin && systemctl restart segorigin")
		get("-poller auto under the shipped unit")
		if j := invocationLog(t, c); strings.Contains(j, "io_uring refused") || !strings.Contains(j, `"poller":"uring"`) {
			t.Errorf("-poller auto under the shipped unit: the journal does not say the loops use io_uring:\n%s", j)
		}
		c.sh(t, "install -d /etc/systemd/system/segorigin.service.d && printf '[Service]\\nSystemCallFilter=~io_uring_setup\\n' > /etc/systemd/system/segorigin.service.d/no-io_uring.conf && systemctl daemon-reload && systemctl restart segorigin")
		get("-poller auto with io_uring_setup filtered out")
		if j := invocationLog(t, c); strings.Count(j, "io_uring refused") != 1 || !strings.Contains(j, `"poller":"epoll"`) {
			t.Errorf("-poller auto with io_uring_setup filtered out: the journal does not say once that the loops use epoll:\n%s", j)
		}
		c.sh(t, "rm -r /etc/systemd/system/segorigin.service.d && mv /etc/default/segorigin.poller /etc/default/segorigin && systemctl daemon-reload && systemctl restart segorigin")
		get("back to the shipped settings")
	})
	t.Run("a paused writer is not published", func(t *testing.T) {
		// A segment written in place by another user (root here), its
		// writer pausing longer than -settle (2 s) with the file open:
		// the unit's CAP_LEASE lets the server ask the kernel whether a
		// writer holds it, so it is answered 503 no-store, never 200
		// immutable with half its bytes.
		got := c.sh(t, `sh -c 'exec 7>/srv/media/hls/seg1.ts; head -c 100000 /dev/zero >&7; sleep 3;`+
			` curl -s -o /dev/null -w "%{http_code} " http://127.0.0.1/hls/seg1.ts;`+
			` curl -sI http://127.0.0.1/hls/seg1.ts | tr -d "\r" | grep -i "^cache-control:"; exec 7>&-'`)
		if !strings.HasPrefix(got, "503 ") || !strings.Contains(strings.ToLower(got), "cache-control: no-store") {
			t.Errorf("a segment whose writer paused with it open: %q, want 503 with no-store\n%s", got,
				c.sh(t, "journalctl -u segorigin --no-pager -o cat | tail -5"))
		}
		if got, err := c.exec("curl -sS --retry 10 --retry-delay 1 -o /dev/null -w '%{http_code}' http://127.0.0.1/hls/seg1.ts"); err != nil || string(got) != "200" {
			t.Errorf("the segment once its writer closed it: %s, %v; want 200\n%s", got, err,
				c.sh(t, "journalctl -u segorigin --no-pager -o cat | tail -20"))
		}
	})
	t.Run("settings reload", func(t *testing.T) {
		// A line added to /etc/default/segorigin takes effect on
		// `systemctl reload`: the next request is refused, on a
		// connection opened before the reload too (bash's /dev/tcp: one
		// connection, both answers on it), and the process is the same.
		pid := c.sh(t, "systemctl show -p MainPID --value segorigin")
		const get = `printf "GET /hls/master.m3u8 HTTP/1.1\r\nHost: t\r\n\r\n" >&3`
		out := c.sh(t, `bash -c 'exec 3<>/dev/tcp/127.0.0.1/80; `+get+`; sleep 0.5;`+
			` cp /etc/default/segorigin /etc/default/segorigin.orig; echo "SEGORIGIN_ACCESS=deny all" >> /etc/default/segorigin;`+
			` systemctl reload segorigin;`+
			` for i in $(seq 50); do [ "$(curl -s -o /dev/null -w %{http_code} http://127.0.0.1/hls/master.m3u8)" = 403 ] && break; sleep 0.2; done;`+
			` `+get+`; timeout 2 cat <&3; true'`)
		first, second := strings.Index(out, "HTTP/1.1 200 OK\r\n"), strings.Index(out, "HTTP/1.1 403 Forbidden\r\n")
		if first < 0 || second < first {
			t.Errorf("one connection across the reload: %q, want 200 then 403\n%s", out, c.sh(t, "journalctl -u segorigin --no-pager -o cat | tail -5"))
		}
		if got := c.sh(t, "curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1/hls/master.m3u8"); got != "403" {
			t.Errorf("a new connection after the reload to deny all: %s, want 403", got)
		}
		if j := c.sh(t, "journalctl -u segorigin --no-pager -o cat"); !strings.Contains(j, `"msg":"SIGHUP: settings reloaded","changed":"-access"`) {
			t.Errorf("the journal does not say -access was reloaded:\n%s", j)
		}
		if got := c.sh(t, "systemctl show -p MainPID --value segorigin"); got != pid {
			t.Errorf("reload restarted the service: MainPID %s, then %s", strings.TrimSpace(pid), strings.TrimSpace(got))
		}
		c.sh(t, "mv /etc/default/segorigin.orig /etc/default/segorigin && systemctl reload segorigin")
	})
	adminAddr := strings.TrimSpace(c.sh(t, "sed -n 's/^SEGORIGIN_ADMIN_LISTEN=//p' /etc/default/segorigin"))
	installed := fmt.Sprintf("/proc/%d/root/usr/share/segorigin/", c.pid1)
	startPrometheus(t, c, adminAddr, installed+"prometheus/alerts.yml")
	var link string
	t.Run("secure_link and reload", func(t *testing.T) {
		c.sh(t, "printf %s old-secret | install -m 640 -g segorigin /dev/stdin /etc/segorigin/securelink-secret")
		c.sh(t, "cp /usr/share/doc/segorigin/examples/secure-link.env /etc/default/segorigin && systemctl restart segorigin")
		sign := func() string {
			return strings.TrimSpace(c.sh(t, "segorigin sign -securelink-secret-file /etc/segorigin/securelink-secret"+
				" -scope "+vodTitle+" -remote-addr 127.0.0.1 -ttl 1h"))
		}
		status := func(path string) string {
			return c.sh(t, "curl -s -o /dev/null -w '%{http_code}' 'http://127.0.0.1"+path+"'")
		}
		oldLink := sign()
		if got := status(vodTitle); got != "403" {
			t.Errorf("GET without a link = %s, want 403", got)
		}
		playSigned(t, c, oldLink, filepath.Join(pkgDir, "media/releases/a/hls/master.m3u8"))
		c.sh(t, "printf %s new-secret | install -m 640 -g segorigin /dev/stdin /etc/segorigin/securelink-secret")
		newLink := sign()
		if got := status(newLink); got != "403" {
			t.Errorf("new secret's link before reload = %s, want 403 (the old secret still in service)", got)
		}
		pid := c.sh(t, "systemctl show -p MainPID --value segorigin")
		c.sh(t, "systemctl reload segorigin")
		if got := status(newLink); got != "200" {
			t.Errorf("new secret's link after reload = %s, want 200\n%s", got, c.sh(t, "journalctl -u segorigin --no-pager -o cat | tail -5"))
		}
		if got := status(oldLink); got != "403" {
			t.Errorf("old secret's link after reload = %s, want 403", got)
		}
		playSigned(t, c, newLink, filepath.Join(pkgDir, "media/releases/a/hls/master.m3u8"))
		if got := c.sh(t, "systemctl show -p MainPID --value segorigin"); got != pid {
			t.Errorf("reload restarted the service: MainPID %s, then %s", strings.TrimSpace(pid), strings.TrimSpace(got))
		}
		link = newLink
	})
	t.Run("release swap", func(t *testing.T) {
		if link == "" {
			t.Skip("no link: secure_link and reload failed")
		}
		took := swapRelease(t, c, link)
		t.Logf("release b served %v after the swap", took.Round(time.Millisecond))
		playSigned(t, c, link, filepath.Join(pkgDir, "media/releases/b/hls/master.m3u8"))
		gone := strings.TrimSpace(c.sh(t, "segorigin sign -securelink-secret-file /etc/segorigin/securelink-secret"+
			" -scope /vod/hls/270p/index.m3u8 -remote-addr 127.0.0.1 -ttl 1h"))
		if got := c.sh(t, "curl -s -o /dev/null -w '%{http_code}' 'http://127.0.0.1"+gone+"'"); got != "404" {
			t.Errorf("release a's 270p playlist after the swap = %s, want 404 (release b has none)", got)
		}
		if got := c.sh(t, "curl -s -o /dev/null -w '%{http_code}' http://"+adminAddr+"/readyz"); got != "200" {
			t.Errorf("/readyz after the swap = %s, want 200", got)
		}
	})
	t.Run("dashboard", func(t *testing.T) {
		// The pod stands in for deploy/kubernetes's at IP 127.0.0.1: its
		// admin listener the packaged service's, on the same port
		// (TestKubernetesManifests checks the annotation names the port
		// -admin-listen binds).
		_, annotations := podMetadata(t, readFile(t, "kubernetes/deployment.yaml"))
		if _, port, _ := strings.Cut(adminAddr, ":"); port != annotations["prometheus.io/port"] {
			t.Fatalf("the package's admin listener %s is not on the pod's annotated port %s", adminAddr, annotations["prometheus.io/port"])
		}
		awaitScrapes(t, c, "segorigin", "kubernetes-pods")
		checkAnnotationTarget(t, c, "http://127.0.0.1:"+annotations["prometheus.io/port"]+annotations["prometheus.io/path"])
		checkRules(t, c, installed+"prometheus/alerts.yml")
		for _, job := range []string{"segorigin", "kubernetes-pods"} {
			checkDashboard(t, c, installed+"grafana/segorigin.json", job)
		}
	})
	t.Run("upgrade restarts", func(t *testing.T) {
		pid := c.sh(t, "systemctl show -p MainPID --value segorigin")
		c.sh(t, "dpkg -i /pkg/segorigin.deb")
		if !c.ok("systemctl is-active segorigin") {
			t.Fatalf("segorigin not active after the upgrade:\n%s", c.sh(t, "journalctl -u segorigin --no-pager -o cat | tail"))
		}
		if got := c.sh(t, "systemctl show -p MainPID --value segorigin"); got == pid {
			t.Errorf("MainPID %s before and after the upgrade: not restarted", strings.TrimSpace(pid))
		}
	})
}

// checkLogMode: path is 0640, owned by segorigin, group adm.
// invocationLog is the journal of the service's current run.
func invocationLog(t *testing.T, c *container) string {
	t.Helper()
	return c.sh(t, "journalctl -u segorigin --no-pager -o cat _SYSTEMD_INVOCATION_ID=$(systemctl show -p InvocationID --value segorigin)")
}

func checkLogMode(t *testing.T, c *container, path string) {
	t.Helper()
	if got, want := c.sh(t, "stat -c '%a %U %G' "+path), "640 segorigin adm\n"; got != want {
		t.Errorf("%s: %q, want %q", path, got, want)
	}
}

// debianTree returns the cached Debian 12 tree, making it with
// debootstrap the first time (into a temporary name, renamed when
// complete, so an interrupted run leaves no half tree in use).
func debianTree(t *testing.T, debootstrap string) string {
	t.Helper()
	dir := rootfsDir
	if d := os.Getenv("SEGORIGIN_TEST_ROOTFS"); d != "" {
		dir = d
	}
	stamp := filepath.Join(dir, ".segorigin-test-packages")
	if b, err := os.ReadFile(stamp); err == nil && string(b) == rootfsPackages {
		return dir
	}
	tmp := dir + ".tmp"
	for _, d := range []string{tmp, dir} {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := exec.CommandContext(ctx, debootstrap, "--variant=minbase", "--include="+rootfsPackages,
		"bookworm", tmp, "http://deb.debian.org/debian").CombinedOutput()
	if err != nil {
		testreq.Unmet(t, fmt.Sprintf("debootstrap bookworm %s: %v (needs deb.debian.org)\n%s", tmp, err, lastBytes(out)))
	}
	if err := os.WriteFile(filepath.Join(tmp, ".segorigin-test-packages"), []byte(rootfsPackages), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		t.Fatal(err)
	}
	t.Logf("debootstrap made %s in %v; later runs reuse it", dir, time.Since(start).Round(time.Second))
	return dir
}

// container is a booted systemd-nspawn container; pid1 is its systemd.
type container struct {
	nsenter string
	pid1    int
}

// boot starts systemd in an ephemeral copy of tree, with its own network
// (loopback only) and dir bound read-only at /pkg, and waits until
// systemd has finished booting. Cleanup powers it off (and kills the
// nspawn process, which the test started, if it does not end).
//
// systemd-nspawn runs in a mount namespace of its own with a tmpfs on
// /run/systemd/nspawn: nspawn refuses to remove its propagation directory
// when /run is not a tmpfs (as on hosts where /run is on the root disk),
// and the tmpfs also keeps what it puts there off the host. --register=no
// and --keep-unit: no machined or systemd on the host is needed.
func boot(t *testing.T, unshare, nspawn, nsenter, tree, dir string) *container {
	t.Helper()
	script := `mount -t tmpfs tmpfs /run/systemd/nspawn && exec "$0" "$@"`
	if err := os.MkdirAll("/run/systemd/nspawn", 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(unshare, "--mount", "--propagation", "private", "sh", "-c", script, nspawn,
		"--quiet", "--directory", tree, "--ephemeral", "--private-network", "--register=no", "--keep-unit",
		"--console=pipe", "--bind-ro="+dir+":/pkg", "--boot")
	var console bytes.Buffer
	cmd.Stdout, cmd.Stderr = &console, &console
	cmd.Stdin = nil
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by boot's cleanup, which waits for it
	c := &container{nsenter: nsenter}
	t.Cleanup(func() {
		if c.pid1 != 0 {
			c.exec("systemctl poweroff")
		}
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	deadline := time.Now().Add(2 * time.Minute)
	for c.pid1 == 0 {
		if time.Now().After(deadline) {
			t.Fatalf("systemd-nspawn started no init in 2 minutes:\n%s", console.String())
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("systemd-nspawn ended: %v\n%s", err, console.String())
		case <-time.After(100 * time.Millisecond):
		}
		c.pid1 = childOf(cmd.Process.Pid)
	}
	for {
		out, _ := c.exec("systemctl is-system-running --wait")
		state := strings.TrimSpace(string(out))
		if state == "running" {
			break
		}
		if state == "degraded" {
			t.Fatalf("the container booted degraded:\n%s", c.sh(t, "systemctl --failed --no-pager"))
		}
		if time.Now().After(deadline) {
			t.Fatalf("the container did not boot in 2 minutes (%q):\n%s", state, console.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
	return c
}

// childOf is the first child of pid that is its own process (systemd,
// once nspawn has forked it), or 0.
func childOf(pid int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	for _, task := range tasks {
		b, _ := os.ReadFile(task)
		for _, f := range strings.Fields(string(b)) {
			if child, err := strconv.Atoi(f); err == nil {
				if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", child)); strings.TrimSpace(string(comm)) == "systemd" {
					return child
				}
			}
		}
	}
	return 0
}

// exec runs a shell command inside the container (every namespace of its
// PID 1, its root, a clean environment) and returns its output.
func (c *container) exec(command string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.nsenter, "--target", strconv.Itoa(c.pid1), "--all", "--root", "--wd",
		"env", "-i", "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LANG=C.UTF-8", "sh", "-c", command)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		err = fmt.Errorf("%w: %s", err, stderr.Bytes())
	}
	return out, err
}

// sh runs command in the container; a failure fails the test.
func (c *container) sh(t testing.TB, command string) string {
	t.Helper()
	out, err := c.exec(command)
	if err != nil {
		t.Fatalf("in the container: %s: %v\n%s", command, err, out)
	}
	return string(out)
}

// ok runs command in the container and says whether it succeeded.
func (c *container) ok(command string) bool {
	_, err := c.exec(command)
	return err == nil
}

// lastBytes is the last 2000 bytes of b.
func lastBytes(b []byte) []byte {
	if len(b) > 2000 {
		return b[len(b)-2000:]
	}
	return b
}
