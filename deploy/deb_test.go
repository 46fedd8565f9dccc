package deploy_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

// TestDebPackage builds the package as `make deb` does (with a given
// VERSION and COMMIT) and inspects it with dpkg-deb: its files, their
// owners and modes, the conffile, the control fields; then unpacks it
// and runs the packaged binary's -version, compares the unit, the
// environment file and the modules-load.d entry with their sources,
// checks that the manual page lists every flag the binary's -h does, and
// runs lintian, which must report no error and no warning (the package's
// overrides say why for each they silence).
func TestDebPackage(t *testing.T) {
	testreq.Slow(t, "builds the release binary (-trimpath, a build of its own) and the package; lintian takes 10-30 s")
	if runtime.GOOS != "linux" {
		t.Skipf("packages the linux/%s binary; this is %s", runtime.GOARCH, runtime.GOOS)
	}
	dpkgDeb := testreq.Tool(t, "dpkg-deb", "the Debian package dpkg")
	lintian := testreq.Tool(t, "lintian", "the Debian package lintian, which .ci/deps installs")

	const version, commit = "v1.2.3-test", "0123456789abcdef0123456789abcdef01234567"
	const debVersion = "1.2.3+test"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	deb := makeDeb(t, version, commit, debVersion)

	t.Run("contents", func(t *testing.T) { checkDebContents(t, run(t, dpkgDeb, "-c", deb)) })
	t.Run("control", func(t *testing.T) {
		fields := map[string]string{
			"Package": "segorigin", "Version": debVersion, "Architecture": runtime.GOARCH,
			"Section": "httpd", "Priority": "optional",
		}
		for name, want := range fields {
			if got := strings.TrimSpace(run(t, dpkgDeb, "-f", deb, name)); got != want {
				t.Errorf("control %s = %q, want %q", name, got, want)
			}
		}
		for _, name := range []string{"Maintainer", "Installed-Size", "Description"} {
			if strings.TrimSpace(run(t, dpkgDeb, "-f", deb, name)) == "" {
				t.Errorf("control has no %s", name)
			}
		}
		// The static binary needs nothing; its maintainer scripts need
		// systemd-sysusers and systemd-tmpfiles, the unit's reload kill.
		if got, want := strings.TrimSpace(run(t, dpkgDeb, "-f", deb, "Depends")), "systemd, procps"; got != want {
			t.Errorf("Depends %q, want %q", got, want)
		}
		if got, want := run(t, dpkgDeb, "-I", deb, "conffiles"), "/etc/default/segorigin\n/etc/logrotate.d/segorigin\n"; got != want {
			t.Errorf("conffiles = %q, want %q", got, want)
		}
	})

	root := t.TempDir()
	run(t, dpkgDeb, "-x", deb, root)
	t.Run("binary", func(t *testing.T) {
		got := run(t, filepath.Join(root, "usr/bin/segorigin"), "-version")
		want := "segorigin " + version + " (" + runtime.Version() + ", commit " + commit + ")\n"
		if got != want {
			t.Errorf("packaged segorigin -version = %q, want %q", got, want)
		}
	})
	t.Run("files", func(t *testing.T) { checkDebFiles(t, root) })
	t.Run("manpage", func(t *testing.T) {
		usage := run(t, filepath.Join(root, "usr/bin/segorigin"), "-h")
		checkManPage(t, gunzip(t, filepath.Join(root, "usr/share/man/man1/segorigin.1.gz")), usage)
	})
	t.Run("lintian", func(t *testing.T) {
		cmd := exec.CommandContext(ctx, lintian, "--fail-on", "error,warning", "--display-info", deb)
		out, err := cmd.CombinedOutput()
		// lintian prints nothing but its note about running as root when
		// the package is clean; any tag is a line "X: segorigin: tag ...".
		if err != nil || regexp.MustCompile(`(?m)^[EWIXPO]: `).Match(out) {
			t.Errorf("lintian %s: %v\n%s", filepath.Base(deb), err, out)
		}
	})
}

// makeDeb builds the package as `make deb` does, with the given VERSION and
// COMMIT, in a temporary directory, and returns its path.
func makeDeb(t *testing.T, version, commit, debVersion string) string {
	t.Helper()
	mk := testreq.Tool(t, "make", "the Debian package make")
	dist := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, mk, "-C", "..", "DIST="+dist, "VERSION="+version, "COMMIT="+commit, "deb").CombinedOutput()
	if err != nil {
		t.Fatalf("make deb: %v\n%s", err, out)
	}
	deb := filepath.Join(dist, "segorigin_"+debVersion+"_"+runtime.GOARCH+".deb")
	if _, err := os.Stat(deb); err != nil {
		t.Fatalf("make deb did not write %s: %v\n%s", deb, err, out)
	}
	return deb
}

// debEntry is one line of `dpkg-deb -c`: mode, owner and path.
type debEntry struct{ mode, owner string }

// checkDebContents: every file the package must hold, owned by root with
// its mode, and nothing outside the directories it owns.
func checkDebContents(t *testing.T, listing string) {
	entries := map[string]debEntry{}
	for _, line := range strings.Split(strings.TrimSpace(listing), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 {
			t.Fatalf("dpkg-deb -c line %q", line)
		}
		entries[strings.TrimPrefix(f[5], ".")] = debEntry{mode: f[0], owner: f[1]}
	}
	want := map[string]string{
		"/usr/bin/segorigin":                                "-rwxr-xr-x",
		"/usr/lib/systemd/system/segorigin.service":         "-rw-r--r--",
		"/etc/default/segorigin":                            "-rw-r--r--",
		"/usr/lib/modules-load.d/segorigin.conf":            "-rw-r--r--",
		"/usr/share/man/man1/segorigin.1.gz":                "-rw-r--r--",
		"/usr/share/doc/segorigin/copyright":                "-rw-r--r--",
		"/usr/share/doc/segorigin/changelog.gz":             "-rw-r--r--",
		"/usr/share/doc/segorigin/CHANGELOG.md.gz":          "-rw-r--r--",
		"/usr/share/doc/segorigin/README.md":                "-rw-r--r--",
		"/usr/share/lintian/overrides/segorigin":            "-rw-r--r--",
		"/usr/lib/sysusers.d/segorigin.conf":                "-rw-r--r--",
		"/usr/lib/tmpfiles.d/segorigin.conf":                "-rw-r--r--",
		"/etc/logrotate.d/segorigin":                        "-rw-r--r--",
		"/usr/share/segorigin/prometheus/alerts.yml":        "-rw-r--r--",
		"/usr/share/segorigin/grafana/segorigin.json":       "-rw-r--r--",
		"/usr/share/doc/segorigin/examples/secure-link.env": "-rw-r--r--",
		"/usr/share/doc/segorigin/examples/https.env":       "-rw-r--r--",
		"/": "drwxr-xr-x",
	}
	for path, mode := range want {
		e, ok := entries[path]
		switch {
		case !ok:
			t.Errorf("package lacks %s", path)
		case e.mode != mode || e.owner != "root/root":
			t.Errorf("%s: %s %s, want %s root/root", path, e.mode, e.owner, mode)
		}
	}
	// The directories the package makes (only the last of each path is
	// its own), and those whose files it may add.
	dirs := "/ /etc/ /etc/default/ /usr/ /usr/bin/ /usr/lib/ /usr/lib/systemd/ /usr/lib/systemd/system/ " +
		"/usr/lib/modules-load.d/ /usr/share/ /usr/share/man/ /usr/share/man/man1/ /usr/share/doc/ " +
		"/usr/share/doc/segorigin/ /usr/share/doc/segorigin/docs/ /usr/share/doc/segorigin/examples/ " +
		"/usr/share/lintian/ /usr/share/lintian/overrides/ /usr/lib/sysusers.d/ /usr/lib/tmpfiles.d/ " +
		"/etc/logrotate.d/ /usr/share/segorigin/ /usr/share/segorigin/prometheus/ /usr/share/segorigin/grafana/"
	allowed := func(path string) bool {
		if strings.HasSuffix(path, "/") {
			return slices.Contains(strings.Fields(dirs), path)
		}
		return slices.Contains(strings.Fields(dirs), filepath.Dir(path)+"/")
	}
	for path, e := range entries {
		if !allowed(path) {
			t.Errorf("unexpected %s in the package", path)
		}
		if e.owner != "root/root" {
			t.Errorf("%s owned by %s, want root/root", path, e.owner)
		}
		if strings.HasPrefix(e.mode, "d") && e.mode != "drwxr-xr-x" {
			t.Errorf("directory %s: %s, want drwxr-xr-x", path, e.mode)
		}
	}
}

// checkDebFiles compares the unpacked files with their sources: the unit
// is deploy/segorigin.service running /usr/bin/segorigin, the conffile is
// deploy/segorigin.env, the modules-load.d entry names tls.
func checkDebFiles(t *testing.T, root string) {
	unit := readFile(t, filepath.Join(root, "usr/lib/systemd/system/segorigin.service"))
	src := readFile(t, "segorigin.service")
	if !strings.Contains(unit, "\nExecStart=/usr/bin/segorigin ") || strings.Contains(unit, "/usr/local/bin") {
		t.Errorf("packaged unit does not run /usr/bin/segorigin:\n%s", unit)
	}
	norm := regexp.MustCompile(`(?m)^Documentation=.*$`)
	if a, b := norm.ReplaceAllString(strings.ReplaceAll(src, "/usr/local/bin/", "/usr/bin/"), ""), norm.ReplaceAllString(unit, ""); a != b {
		t.Errorf("packaged unit differs from deploy/segorigin.service beyond the binary's path and Documentation=:\n%s", unit)
	}
	if !strings.Contains(unit, "\nDocumentation=man:segorigin(1) ") {
		t.Errorf("packaged unit's Documentation= does not name the manual page")
	}
	if got, want := readFile(t, filepath.Join(root, "etc/default/segorigin")), readFile(t, "segorigin.env"); got != want {
		t.Errorf("/etc/default/segorigin differs from deploy/segorigin.env")
	}
	for installed, source := range map[string]string{
		"etc/logrotate.d/segorigin":                        "debian/logrotate",
		"usr/share/segorigin/prometheus/alerts.yml":        "prometheus/alerts.yml",
		"usr/share/segorigin/grafana/segorigin.json":       "grafana/segorigin.json",
		"usr/share/doc/segorigin/examples/secure-link.env": "examples/secure-link.env",
	} {
		if readFile(t, filepath.Join(root, installed)) != readFile(t, source) {
			t.Errorf("/%s differs from deploy/%s", installed, source)
		}
	}
	checkDocLinks(t, filepath.Join(root, "usr/share/doc/segorigin"))
	var modules []string
	for _, line := range strings.Split(readFile(t, filepath.Join(root, "usr/lib/modules-load.d/segorigin.conf")), "\n") {
		if l := strings.TrimSpace(line); l != "" && !strings.HasPrefix(l, "#") && !strings.HasPrefix(l, ";") {
			modules = append(modules, l)
		}
	}
	if len(modules) != 1 || modules[0] != "tls" {
		t.Errorf("modules-load.d/segorigin.conf loads %q, want [tls]", modules)
	}
}

// checkDocLinks: every relative link of the installed README and docs
// names a file the package holds (the source tree's other files are not
// installed: build-deb.sh turns links to them into text).
func checkDocLinks(t *testing.T, doc string) {
	pages, _ := filepath.Glob(filepath.Join(doc, "docs/*.md"))
	pages = append(pages, filepath.Join(doc, "README.md"))
	linkRE := regexp.MustCompile(`\]\(([^)#:]+)(#[^)]*)?\)`)
	links := 0
	for _, page := range pages {
		for _, m := range linkRE.FindAllStringSubmatch(readFile(t, page), -1) {
			links++
			if _, err := os.Stat(filepath.Join(filepath.Dir(page), m[1])); err != nil {
				t.Errorf("installed %s links to %s, which the package does not hold", strings.TrimPrefix(page, doc+"/"), m[1])
			}
		}
	}
	if links < 20 {
		t.Errorf("found %d relative links in the installed docs, want the 20 and more they have", links)
	}
}

// checkManPage: the page has every flag -h lists, as a tagged paragraph.
func checkManPage(t *testing.T, page, usage string) {
	if !strings.HasPrefix(page, `.TH "SEGORIGIN" "1" `) {
		t.Errorf("manual page does not start with its .TH line:\n%.200s", page)
	}
	flags := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`).FindAllStringSubmatch(usage, -1)
	if len(flags) < 40 {
		t.Fatalf("segorigin -h lists %d flags: parsed wrong?", len(flags))
	}
	for _, m := range flags {
		name := strings.ReplaceAll(m[1], "-", `\-`)
		if !strings.Contains(page, ".BI \\-"+name+" \"") && !strings.Contains(page, ".B \\-"+name+"\n") {
			t.Errorf("manual page lacks -%s", m[1])
		}
	}
}

// run runs name args and returns its standard output; a failure fails t.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String()
}

func gunzip(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := io.ReadAll(z)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return string(b)
}
