package ktlsvm

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// TestKTLSRealKernel boots the distribution's kernel, which has kTLS
// (tls.ko), under qemu with the real segorigin and the client of
// ./vmclient, and judges what the client prints: every case of
// Expected(PlanFull) on one vCPU, then Expected(PlanSMP) on two, then
// origin's conformance and parity tests (PlanConformance) on two. It
// never skips, except under -short: a missing tool, a kernel that cannot
// be fetched or a guest that does not boot fails it, with the console.
func TestKTLSRealKernel(t *testing.T) {
	testreq.Slow(t, "boots a kernel under qemu's emulation twice (minutes of CPU)")
	k, initrd, accel := prepareGuest(t, "", originTestFiles(t))
	for _, b := range []struct {
		plan    string
		cpus    int
		timeout time.Duration
	}{
		{PlanFull, 1, 300 * time.Second},
		{PlanSMP, 2, 200 * time.Second},
		{PlanConformance, 2, 400 * time.Second},
	} {
		t.Run(b.plan, func(t *testing.T) { bootPlan(t, k, initrd, accel, b.plan, b.cpus, b.timeout) })
	}
}

// TestKTLSKernels boots the kernels of the other suites: Debian 13's
// (6.12: kTLS both ways; a KeyUpdate ends the connection cleanly), with
// PlanKTLS on one vCPU and origin's conformance and parity tests on two,
// and Debian 13's backports kernel (6.14 or later: the kernel takes the
// new keys and the connection goes on, with and without
// update_requested), with PlanKTLS. The client judges the KeyUpdate cases
// by the release it boots on. (The -ktls off run of PlanFull does not
// depend on the kernel: TestKTLSRealKernel makes it.)
func TestKTLSKernels(t *testing.T) {
	testreq.Slow(t, "boots two more kernels under qemu's emulation (minutes of CPU)")
	for _, k := range []struct {
		suite string
		plans []string
	}{
		{SuiteTrixie, []string{PlanKTLS, PlanConformance}},
		{SuiteTrixieBackports, []string{PlanKTLS}},
	} {
		t.Run(k.suite, func(t *testing.T) {
			var extra []InitramfsFile
			if slices.Contains(k.plans, PlanConformance) {
				extra = originTestFiles(t)
			}
			kernel, initrd, accel := prepareGuest(t, k.suite, extra)
			for _, plan := range k.plans {
				t.Run(plan, func(t *testing.T) {
					cpus, timeout := 1, 240*time.Second
					if plan == PlanConformance {
						cpus, timeout = 2, 400*time.Second
					}
					bootPlan(t, kernel, initrd, accel, plan, cpus, timeout)
				})
			}
		})
	}
}

// bootPlan boots plan on the kernel and fails t with every problem the
// console shows.
func bootPlan(t *testing.T, k *Kernel, initrd string, accel Accel, plan string, cpus int, timeout time.Duration) {
	start := time.Now()
	console, err := Boot(context.Background(), BootConfig{Kernel: k, Initrd: initrd, Accel: accel, CPUs: cpus, Memory: "1024",
		Plan: plan, Timeout: timeout})
	rep := Parse(console)
	problems := rep.Problems(plan)
	for _, l := range KernelTrouble(console) {
		problems = append(problems, "kernel: "+l)
	}
	if err != nil {
		problems = append([]string{err.Error()}, problems...)
	}
	if len(problems) > 0 {
		t.Fatalf("plan %s (%s %s, %s, %d vCPU): %d problems:\n%s\n\n--- console ---\n%s",
			plan, k.Package, k.Version, accel, cpus, len(problems), strings.Join(problems, "\n"), console)
	}
	t.Logf("plan %s: %d results passed (%s %s, %s, %d vCPU, %.1f s)", plan, len(rep.Passed), k.Package, k.Version, accel, cpus, time.Since(start).Seconds())
	for _, l := range strings.Split(console, "\n") {
		if strings.Contains(l, Prefix+"INFO ") {
			t.Log(strings.TrimSpace(l))
		}
	}
}

// prepareGuest fetches suite's kernel ("": the machine's) and builds the initramfs with the real
// segorigin, the client and extra files, and chooses the accelerator.
func prepareGuest(tb testing.TB, suite string, extra []InitramfsFile) (*Kernel, string, Accel) {
	ctx := context.Background()
	for _, tool := range []string{"qemu-system-x86_64", "busybox", "apt-cache", "apt-get", "dpkg-deb", "xz"} {
		testreq.Tool(tb, tool, ".ci/deps installs it: make deps")
	}
	k, err := FetchKernel(ctx, cacheDir(tb), suite, tb.Logf)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Logf("kernel %s %s: image %s, modules %s", k.Package, k.Version, filepath.Base(k.Image), moduleNames(k))
	initrd := filepath.Join(tb.TempDir(), "initrd.cpio")
	files := []InitramfsFile{
		{Path: ServerPath, Src: testproc.BuildStatic(tb, "./cmd/segorigin"), Mode: 0o755},
		{Path: ClientPath, Src: testproc.BuildStatic(tb, "./internal/ktlsvm/vmclient"), Mode: 0o755},
		// The Debian package's modules-load.d entry, where the package
		// installs it; the client loads what it names.
		{Path: "/usr/lib/modules-load.d/segorigin.conf", Src: "../../deploy/debian/modules-load.conf", Mode: 0o644},
	}
	if err := BuildInitramfs(ctx, initrd, k, append(files, extra...)); err != nil {
		tb.Fatal(err)
	}
	return k, initrd, ChooseAccel(ctx, k, initrd, tb.Logf)
}

// cacheDir keeps the unpacked kernels between runs: $XDG_CACHE_HOME or
// ~/.cache, under segorigin/ktlsvm.
func cacheDir(tb testing.TB) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		tb.Logf("no user cache directory (%v): the kernel is fetched into the test's temporary directory", err)
		return tb.TempDir()
	}
	return filepath.Join(dir, "segorigin", "ktlsvm")
}

func moduleNames(k *Kernel) string {
	var names []string
	for _, m := range k.Modules {
		names = append(names, filepath.Base(m))
	}
	return strings.Join(names, " ")
}
