package main

import (
	"context"
	"debug/elf"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// TestReleaseBuild: the Makefile's release rule (the one `make dist` runs
// for each architecture) makes a static binary whose -version and
// segorigin_build_info name the VERSION and COMMIT it was given, though
// it is built with -buildvcs=false. Only linux/amd64 is built here (the
// rule is the same for arm64). It fails without make.
func TestReleaseBuild(t *testing.T) {
	testreq.Slow(t, "a -trimpath build of the binary and all it imports, shared with no other build (minutes on a cold cache)")
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skipf("runs the linux/amd64 release binary; this is %s/%s", runtime.GOOS, runtime.GOARCH)
	}
	mk := testreq.Tool(t, "make", "the Debian package make; it is what runs the release build")
	const version, commit = "v1.2.3-test", "0123456789abcdef0123456789abcdef01234567"
	dist := t.TempDir()
	bin := filepath.Join(dist, "segorigin-"+version+"-linux-amd64")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, mk, "-C", "../..", "DIST="+dist, "VERSION="+version, "COMMIT="+commit, bin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", bin, err, out)
	}

	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has a program interpreter: linked dynamically, want static", filepath.Base(bin))
		}
	}
	f.Close()

	out, errOut, code := runBin(t, bin, nil, "-version")
	want := "segorigin " + version + " (" + runtime.Version() + ", commit " + commit + ")\n"
	if code != 0 || out != want {
		t.Errorf("release -version: exit %d, stdout %q, stderr %q; want 0 and %q", code, out, errOut, want)
	}
	p := testproc.Start(t, exec.Command(bin, "-root", t.TempDir(), "-listen", "127.0.0.1:0", "-admin-listen", "127.0.0.1:0"))
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + p.Addr("admin") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	info := `segorigin_build_info{commit="` + commit + `",goversion="` + runtime.Version() + `",version="` + version + `"} 1`
	if !strings.Contains(string(body), info+"\n") {
		t.Errorf("/metrics of the release binary lacks %s", info)
	}
}
