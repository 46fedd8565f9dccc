package ktlsvm

import (
	"bytes"
	"context"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Guest paths the initramfs holds; /init runs the client, which finds
// the server at ServerPath.
const (
	ServerPath = "/segorigin"
	ClientPath = "/vmclient"
	// OriginTestDir holds origin's test binary (origin.test) and its
	// testdata, and OriginTestRun the -test.run patterns of the
	// conformance plan, one a line.
	OriginTestDir = "/origin"
	OriginTestRun = "/origin-test-run"
)

// initScript is the guest's /init: mount the pseudo file systems, load the
// ciphers tls uses (not tls itself: the client loads it as a Debian
// system does, by modprobe from a modules-load.d entry, after checking
// that the server cannot), make busybox the kernel's modprobe (so the
// kernel could load tls on demand for a process allowed to ask), bring
// loopback up (::1 comes with it), run the client, power off. A module
// that fails to load is reported as a failure; a client that dies is
// reported by its exit status and the missing verdict.
const initScript = `#!/bin/busybox sh
B=/bin/busybox
$B mount -t proc proc /proc
$B mount -t sysfs sysfs /sys
$B mount -t devtmpfs devtmpfs /dev
$B mount -t tmpfs tmpfs /tmp
for m in $($B cat /modules.order); do
	$B insmod /modules/$m || echo "KTLSVM FAIL insmod/$m: insmod failed"
done
$B mkdir -p /sbin
$B ln -s /bin/busybox /sbin/modprobe
$B ip link set lo up
` + ClientPath + `
echo "KTLSVM INFO client exit status $?"
$B poweroff -f
`

// InitramfsFile is one file of the initramfs: copied from Src, or Data.
type InitramfsFile struct {
	Path string // in the guest, absolute
	Src  string
	Data []byte
	Mode os.FileMode
}

// BuildInitramfs writes an uncompressed newc cpio archive (the kernel
// unpacks it as it is; compressing would only cost the emulated CPU time)
// holding busybox as /bin/busybox, the /init above, the modules of k in
// /modules with their load order but for tls, which goes where modprobe
// finds it (/lib/modules/<release>/kernel/net/tls/tls.ko, with a
// modules.dep), and files. busybox's own cpio applet writes it, from a
// staging directory.
func BuildInitramfs(ctx context.Context, out string, k *Kernel, files []InitramfsFile) error {
	busybox, err := exec.LookPath("busybox")
	if err != nil {
		return fmt.Errorf("busybox (package busybox-static, installed by .ci/deps): %w", err)
	}
	if err := checkStatic(busybox); err != nil {
		return fmt.Errorf("%w: the initramfs has no libc (install busybox-static)", err)
	}
	all, err := initramfsFiles(busybox, k)
	if err != nil {
		return err
	}
	all = append(all, files...)

	stage, err := os.MkdirTemp(filepath.Dir(out), ".initramfs-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage)
	names := []string{"proc", "sys", "dev", "tmp"}
	for _, d := range names {
		if err := os.Mkdir(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}
	if names, err = stageFiles(stage, all, names); err != nil {
		return err
	}
	sort.Strings(names) // a directory before what it holds

	o, err := os.Create(out)
	if err != nil {
		return err
	}
	defer o.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, busybox, "cpio", "-o", "-H", "newc")
	cmd.Dir, cmd.Stdin, cmd.Stdout, cmd.Stderr = stage, strings.NewReader(strings.Join(names, "\n")+"\n"), o, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("busybox cpio: %v: %s", err, stderr.Bytes())
	}
	return o.Close()
}

// initramfsFiles: busybox, /init, k's modules but tls in /modules with
// their load order, and tls where modprobe finds it, with a modules.dep.
func initramfsFiles(busybox string, k *Kernel) ([]InitramfsFile, error) {
	all := []InitramfsFile{
		{Path: "/bin/busybox", Src: busybox, Mode: 0o755},
		{Path: "/init", Data: []byte(initScript), Mode: 0o755},
	}
	var order []string
	tls := ""
	for _, m := range k.Modules {
		if modName(m) == "tls" {
			tls = m
			continue
		}
		all = append(all, InitramfsFile{Path: "/modules/" + filepath.Base(m), Src: m, Mode: 0o644})
		order = append(order, filepath.Base(m))
	}
	if tls == "" {
		return nil, fmt.Errorf("kernel %s: no tls module among %v", k.Package, k.Modules)
	}
	release, err := moduleRelease(tls)
	if err != nil {
		return nil, err
	}
	// tls's own dependencies, if any, precede it in the load order and
	// are loaded by /init: modules.dep need not name them.
	lib := "/lib/modules/" + release + "/"
	all = append(all,
		InitramfsFile{Path: "/modules.order", Data: []byte(strings.Join(order, "\n") + "\n"), Mode: 0o644},
		InitramfsFile{Path: lib + "kernel/net/tls/tls.ko", Src: tls, Mode: 0o644},
		InitramfsFile{Path: lib + "modules.dep", Data: []byte("kernel/net/tls/tls.ko:\n"), Mode: 0o644})
	return all, nil
}

// stageFiles writes all under stage and returns names with each file's
// path and each directory above it, relative to stage.
func stageFiles(stage string, all []InitramfsFile, names []string) ([]string, error) {
	dirs := map[string]bool{}
	for _, f := range all {
		rel := strings.TrimPrefix(filepath.Clean(f.Path), "/")
		for d := filepath.Dir(rel); d != "."; d = filepath.Dir(d) {
			dirs[d] = true
		}
		dst := filepath.Join(stage, rel)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		data := f.Data
		if f.Src != "" {
			var err error
			if data, err = os.ReadFile(f.Src); err != nil {
				return nil, err
			}
		}
		if err := os.WriteFile(dst, data, f.Mode); err != nil {
			return nil, err
		}
		if err := os.Chmod(dst, f.Mode); err != nil { // the umask may have narrowed it
			return nil, err
		}
		names = append(names, rel)
	}
	for d := range dirs {
		names = append(names, d)
	}
	return names, nil
}

// checkStatic: the executable at p asks for no dynamic loader.
func checkStatic(p string) error {
	f, err := elf.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	for _, prog := range f.Progs {
		if prog.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked", p)
		}
	}
	return nil
}

// Accel is how qemu runs the guest: "kvm" or "tcg" (emulation).
type Accel string

// KVMCandidate says whether KVM might boot a stock kernel here: /dev/kvm
// opens for reading and writing and the CPU advertises hardware
// virtualisation (vmx or svm in /proc/cpuinfo). A /dev/kvm without either
// is a paravirtual one (a microVM's), on which qemu's guest hangs after
// the BIOS; why says which.
func KVMCandidate() (ok bool, why string) {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false, fmt.Sprintf("/dev/kvm: %v", err)
	}
	f.Close()
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return false, err.Error()
	}
	for _, line := range strings.Split(string(b), "\n") {
		if name, flags, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "flags" {
			for _, f := range strings.Fields(flags) {
				if f == "vmx" || f == "svm" {
					return true, "/dev/kvm and " + f
				}
			}
			break
		}
	}
	return false, "/dev/kvm is present but /proc/cpuinfo has neither vmx nor svm (a paravirtual KVM that does not boot a stock kernel)"
}

// guestMargin is how long before Boot's timeout the client's watchdog
// reports a hang (the boot before the client, and the power-off, fit in it).
const guestMargin = 40 * time.Second

// PlanProbe only boots: the client reports its verdict at once.
const PlanProbe = "probe"

// ChooseAccel picks KVM when KVMCandidate says it might work and a probe
// boot of k with initrd reaches the client within 60 s; emulation (tcg)
// otherwise. logf says which, and why.
func ChooseAccel(ctx context.Context, k *Kernel, initrd string, logf func(string, ...any)) Accel {
	ok, why := KVMCandidate()
	if !ok {
		logf("accel tcg (emulation): %s", why)
		return "tcg"
	}
	console, err := Boot(ctx, BootConfig{Kernel: k, Initrd: initrd, Accel: "kvm", CPUs: 1, Memory: "1024",
		Plan: PlanProbe, Timeout: 60 * time.Second})
	if err == nil && Parse(console).Done == "PASS" {
		logf("accel kvm (%s; a probe boot reached the client)", why)
		return "kvm"
	}
	logf("accel tcg (emulation): %s, but a probe boot with KVM did not reach the client: %v", why, err)
	return "tcg"
}

// BootConfig is one boot of the guest.
type BootConfig struct {
	Kernel  *Kernel
	Initrd  string
	Accel   Accel
	CPUs    int
	Memory  string        // qemu -m, e.g. "1024"
	Plan    string        // PlanFull, PlanSMP or "probe"
	Timeout time.Duration // the whole boot, power-off included; the client's watchdog fires guestMargin before
	Log     io.Writer     // the console as it comes, besides the result (may be nil)
}

// Boot runs qemu until the guest powers off or Timeout passes, and
// returns the console output (the serial port, and qemu's own messages).
// An error says the guest did not power off by itself in time, or qemu
// failed; the console is returned either way.
func Boot(ctx context.Context, cfg BootConfig) (string, error) {
	cpu := "max"
	if cfg.Accel == "kvm" {
		cpu = "host"
	}
	args := []string{
		"-accel", string(cfg.Accel), "-cpu", cpu, "-smp", fmt.Sprint(cfg.CPUs), "-m", cfg.Memory,
		"-kernel", cfg.Kernel.Image, "-initrd", cfg.Initrd,
		// loglevel=5: kernel warnings (WARN_ON, BUG) reach the console,
		// notices do not; panic=-1 with -no-reboot ends qemu on a panic.
		"-append", fmt.Sprintf("console=ttyS0 loglevel=5 panic=-1 random.trust_cpu=on ktlsvm.plan=%s ktlsvm.watchdog=%v",
			cfg.Plan, max(cfg.Timeout-guestMargin, cfg.Timeout/2)),
		"-display", "none", "-serial", "stdio", "-monitor", "none", "-nic", "none", "-no-reboot",
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "qemu-system-x86_64", args...)
	// One writer for both: os/exec then calls it from one goroutine at a
	// time, and out is read only after Run.
	var out bytes.Buffer
	w := io.Writer(&out)
	if cfg.Log != nil {
		w = io.MultiWriter(&out, cfg.Log)
	}
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	switch {
	case ctx.Err() != nil:
		return out.String(), fmt.Errorf("qemu %s: the guest did not power off within %v", strings.Join(args, " "), cfg.Timeout)
	case err != nil:
		return out.String(), fmt.Errorf("qemu %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// kernelTrouble matches what the kernel prints when something in it went
// wrong: a WARN_ON, a BUG, an oops, a panic, a lockdep or KASAN report.
var kernelTrouble = regexp.MustCompile(`(?m)(WARNING: CPU|BUG:|Oops|Kernel panic|Call Trace:|possible circular locking|KASAN:)`)

// KernelTrouble returns the console's kernel trouble lines, if any.
func KernelTrouble(console string) []string {
	var out []string
	for _, line := range strings.Split(console, "\n") {
		if kernelTrouble.MatchString(line) && !strings.Contains(line, Prefix) {
			out = append(out, strings.TrimRight(line, "\r"))
		}
	}
	return out
}
