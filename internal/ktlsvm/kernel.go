package ktlsvm

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// MetaPackage is the Debian package that names the distribution's current
// kernel; its Depends is the versioned image package, which has tls.ko.
const MetaPackage = "linux-image-amd64"

// wantModules are the modules loaded into the guest: tls, and the
// crypto API templates its AEADs are built from when they are modules
// (gcm(aes) and rfc7539(chacha20,poly1305)). Their depends= closure is
// added. The generic C implementations keep the guest independent of
// the CPU flags the emulator offers; the record layer the test exercises
// is the same whichever implementation seals.
var wantModules = []string{"tls", "gcm", "ctr", "chacha20poly1305"}

// lookedUpModules are the algorithms those templates look up at run time,
// which no depends= line names, each loaded where the kernel has it as a
// module: up to 6.14 ghash_generic, chacha_generic and poly1305_generic;
// later kernels have GHASH and Poly1305 as libraries that depends= does
// name, and chacha20 in the module chacha.
var lookedUpModules = []string{"ghash_generic", "chacha_generic", "chacha", "poly1305_generic"}

// Kernel is an unpacked kernel in the cache.
type Kernel struct {
	Package string   // e.g. linux-image-6.1.0-57-amd64
	Version string   // the package's version
	Image   string   // the file for qemu -kernel: vmlinux (decompressed, PVH entry) or vmlinuz
	Modules []string // .ko files in load order (dependencies first)
}

// Suites the suite boots besides the machine's own kernel (Debian 12's
// 6.1, Suite ""): Debian 13's kernel (6.12: kTLS in both directions, no
// rekeying) and Debian 13's backports kernel (Linux 6.14 or later: the
// kernel takes new keys after a TLS 1.3 KeyUpdate).
const (
	SuiteTrixie          = "trixie"
	SuiteTrixieBackports = "trixie-backports"
)

// Mirror is where a named suite's package lists and kernels come from.
const Mirror = "http://deb.debian.org/debian"

// FetchKernel returns suite's kernel, unpacked under cacheDir: resolved
// with apt-cache, fetched with apt-get download and unpacked with
// dpkg-deb (never installed), once per package version. Suite "" is the
// machine's own apt sources; a Debian suite name is read from Mirror with
// package lists of its own under cacheDir (the machine's apt is never
// touched), kept in cacheDir/<suite>. When apt cannot resolve the package
// (no package lists, no network), the newest kernel already cached
// serves. logf says what it did.
func FetchKernel(ctx context.Context, cacheDir, suite string, logf func(string, ...any)) (*Kernel, error) {
	a := aptFor(ctx, cacheDir, suite, logf)
	cacheDir = a.cacheDir
	pkgs, version, rerr := resolveKernel(ctx, a)
	if rerr != nil {
		k, err := newestCached(cacheDir)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w (and no kernel in %s: %v)", a.meta(), rerr, cacheDir, err)
		}
		logf("apt cannot resolve %s (%v): using the cached %s %s", a.meta(), rerr, k.Package, k.Version)
		return k, nil
	}
	dir := filepath.Join(cacheDir, pkgs[0]+"_"+version)
	if k, err := loadCached(dir); err == nil {
		logf("kernel %s %s from the cache %s", pkgs[0], version, dir)
		return k, nil
	}
	if err := os.MkdirAll(cacheDir, 0o755); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(cacheDir, ".fetch-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	var args []string
	for _, p := range pkgs {
		args = append(args, p+"="+version)
	}
	if err := command(ctx, tmp, "apt-get", a.args("download", append([]string{"-q"}, args...)...)...); err != nil {
		k, cerr := newestCached(cacheDir)
		if cerr != nil {
			return nil, err
		}
		logf("%v\nusing the cached %s %s instead", err, k.Package, k.Version)
		return k, nil
	}
	debs, _ := filepath.Glob(filepath.Join(tmp, "*.deb"))
	if len(debs) != len(pkgs) {
		return nil, fmt.Errorf("apt-get download %s: %d .deb files, want %d", strings.Join(args, " "), len(debs), len(pkgs))
	}
	out := filepath.Join(tmp, "kernel")
	if err := unpackKernel(ctx, debs, out); err != nil {
		return nil, fmt.Errorf("unpack %s: %w", strings.Join(debs, " "), err)
	}
	if err := os.WriteFile(filepath.Join(out, "package"), []byte(pkgs[0]+"\n"+version+"\n"), 0o644); err != nil {
		return nil, err
	}
	// Rename is atomic: a concurrent fetch of the same version either
	// finds the directory complete or loses the rename and uses the other.
	if err := os.Rename(out, dir); err != nil {
		if _, lerr := loadCached(dir); lerr != nil {
			return nil, err
		}
	}
	logf("kernel %s %s fetched into %s", pkgs[0], version, dir)
	pruneCache(cacheDir, filepath.Base(dir), logf)
	return loadCached(dir)
}

// apt is how apt-get and apt-cache are run for one suite: the machine's
// configuration (suite ""), or Mirror's suite with lists, caches and an
// empty dpkg status of its own under cacheDir.
type apt struct {
	suite    string
	cacheDir string   // where this suite's kernels are kept
	opts     []string // -o options before the command's own arguments
}

// aptListsMaxAge: a suite's package lists older than this are fetched
// again (a kernel security update replaces the package within days).
const aptListsMaxAge = 24 * time.Hour

// aptFor sets up suite's apt state (apt-get update when its lists are
// missing or stale; a failed update leaves the old lists, if any, to
// serve, and says so).
func aptFor(ctx context.Context, cacheDir, suite string, logf func(string, ...any)) apt {
	if suite == "" {
		return apt{cacheDir: cacheDir}
	}
	root := filepath.Join(cacheDir, suite)
	state := filepath.Join(root, ".apt")
	a := apt{suite: suite, cacheDir: root, opts: []string{
		"-o", "Dir::Etc::SourceList=" + filepath.Join(state, "sources.list"),
		"-o", "Dir::Etc::SourceParts=" + filepath.Join(state, "sources.list.d"),
		"-o", "Dir::State::Lists=" + filepath.Join(state, "lists"),
		"-o", "Dir::Cache=" + filepath.Join(state, "cache"),
		"-o", "Dir::State::status=" + filepath.Join(state, "status"),
	}}
	stamp := filepath.Join(state, "updated")
	if st, err := os.Stat(stamp); err == nil && time.Since(st.ModTime()) < aptListsMaxAge {
		return a
	}
	err := a.update(ctx, state, stamp)
	if err != nil {
		logf("apt-get update of %s %s: %v", Mirror, suite, err)
	}
	return a
}

// update writes the suite's sources.list and fetches its lists.
func (a apt) update(ctx context.Context, state, stamp string) error {
	for _, d := range []string{"sources.list.d", "lists/partial", "cache/archives/partial"} {
		if err := os.MkdirAll(filepath.Join(state, d), 0o755); err != nil {
			return err
		}
	}
	src := fmt.Sprintf("deb %s %s main\n", Mirror, a.suite)
	if err := os.WriteFile(filepath.Join(state, "sources.list"), []byte(src), 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(state, "status"), nil, 0o644); err != nil {
		return err
	}
	if err := command(ctx, state, "apt-get", a.args("update", "-q")...); err != nil {
		return err
	}
	return os.WriteFile(stamp, nil, 0o644)
}

// args are the command line of an apt tool: the suite's options, then cmd
// and its arguments.
func (a apt) args(cmd string, args ...string) []string {
	return append(append(slices.Clone(a.opts), cmd), args...)
}

// meta names the metapackage resolved, with its suite.
func (a apt) meta() string {
	if a.suite == "" {
		return MetaPackage
	}
	return MetaPackage + " (" + a.suite + ")"
}

// pruneCache removes the kernels cached before keep (each is ~75 MB):
// once a newer version is fetched, apt will not resolve to them again.
func pruneCache(cacheDir, keep string, logf func(string, ...any)) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if e.IsDir() && e.Name() != keep && !strings.HasPrefix(e.Name(), ".") && strings.HasPrefix(e.Name(), "linux-image-") {
			if err := os.RemoveAll(filepath.Join(cacheDir, e.Name())); err != nil {
				logf("prune the kernel cache: %v", err)
			}
		}
	}
}

// resolveKernel names the image package MetaPackage depends on, its
// candidate version and, where the image package is split (Debian's
// kernels from 6.17: the image in linux-binary-*, the modules in
// linux-modules-*), the packages of the same version that hold the
// files; the image package is first.
func resolveKernel(ctx context.Context, a apt) (pkgs []string, version string, err error) {
	out, err := output(ctx, "apt-cache", a.args("depends", MetaPackage)...)
	if err != nil {
		return nil, "", err
	}
	var pkg string
	for _, line := range strings.Split(out, "\n") {
		dep, ok := strings.CutPrefix(strings.TrimSpace(line), "Depends: ")
		if ok && strings.HasPrefix(dep, "linux-image-") && !strings.HasPrefix(dep, "<") {
			pkg = dep
			break
		}
	}
	if pkg == "" {
		return nil, "", fmt.Errorf("apt-cache depends %s names no linux-image package:\n%s", a.meta(), out)
	}
	out, err = output(ctx, "apt-cache", a.args("show", "--no-all-versions", pkg)...)
	if err != nil {
		return nil, "", err
	}
	pkgs = []string{pkg}
	for _, line := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(line, "Version: "); ok && version == "" {
			version = strings.TrimSpace(v)
		}
		if deps, ok := strings.CutPrefix(line, "Depends: "); ok {
			pkgs = append(pkgs, splitParts(deps, strings.TrimPrefix(pkg, "linux-image-"))...)
		}
	}
	if version == "" {
		return nil, "", fmt.Errorf("apt-cache show %s: no Version", pkg)
	}
	return pkgs, version, nil
}

// splitParts are the packages a split image package depends on for its
// files, release being its release ("7.3.4+deb13-amd64"):
// linux-binary-<release> (the image), linux-modules-<release> and
// linux-base-<release> (modules.builtin).
func splitParts(depends, release string) []string {
	var out []string
	for _, d := range strings.Split(depends, ",") {
		name, _, _ := strings.Cut(strings.TrimSpace(d), " ")
		if name == "linux-binary-"+release || name == "linux-modules-"+release || name == "linux-base-"+release {
			out = append(out, name)
		}
	}
	return out
}

// unpackKernel writes the image and the wanted modules of the packages
// into dir: dpkg-deb unpacks each package's file system as a tar stream, of
// which only the kernel image, the crypto, lib and net/tls modules and
// modules.builtin are kept (the whole package is ~400 MB of modules).
func unpackKernel(ctx context.Context, debs []string, dir string) error {
	for _, deb := range debs {
		if err := extractDeb(ctx, deb, dir); err != nil {
			return err
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "vmlinuz")); err != nil {
		return errors.New("no boot/vmlinuz-* in the packages")
	}
	return prepareKernel(ctx, dir)
}

// extractDeb extracts what extractKernel keeps from one package.
func extractDeb(ctx context.Context, deb, dir string) error {
	cmd := exec.CommandContext(ctx, "dpkg-deb", "--fsys-tarfile", deb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	terr := extractKernel(tar.NewReader(stdout), dir)
	io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return fmt.Errorf("dpkg-deb --fsys-tarfile %s: %v: %s", filepath.Base(deb), err, stderr.Bytes())
	}
	return terr
}

// extractKernel keeps, from the package's tar stream, boot/vmlinuz-* or
// lib/modules/<release>/vmlinuz (as vmlinuz), the modules under kernel/crypto, kernel/lib and
// kernel/net/tls (as modules/<name>.ko[.xz|.zst]) and modules.builtin.
// /lib and /usr/lib (merged /usr) are both accepted.
func extractKernel(tr *tar.Reader, dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "modules"), 0o755); err != nil {
		return err
	}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
		if h.Typeflag != tar.TypeReg {
			continue
		}
		name := strings.TrimPrefix(path.Clean(h.Name), "usr/")
		var dst string
		switch {
		case strings.HasPrefix(name, "boot/vmlinuz-"),
			strings.HasPrefix(name, "lib/modules/") && path.Base(name) == "vmlinuz": // split packages
			dst = filepath.Join(dir, "vmlinuz")
		case strings.HasPrefix(name, "lib/modules/") && path.Base(name) == "modules.builtin":
			dst = filepath.Join(dir, "modules.builtin")
		case strings.HasPrefix(name, "lib/modules/") && strings.Contains(path.Base(name), ".ko") &&
			(strings.Contains(name, "/kernel/crypto/") || strings.Contains(name, "/kernel/lib/") || strings.Contains(name, "/kernel/net/tls/")):
			dst = filepath.Join(dir, "modules", path.Base(name))
		default:
			continue
		}
		if err := writeFrom(dst, tr); err != nil {
			return err
		}
	}
	return nil
}

func writeFrom(dst string, r io.Reader) error {
	f, err := os.Create(dst)
	if err != nil {
		return err
	}
	_, err = io.Copy(f, r)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// prepareKernel decompresses compressed modules (busybox insmod takes
// plain .ko), resolves the load order of wantModules into modules.order,
// and decompresses the image (see decompressImage).
func prepareKernel(ctx context.Context, dir string) error {
	mods := filepath.Join(dir, "modules")
	entries, err := os.ReadDir(mods)
	if err != nil {
		return err
	}
	// One run of each tool for all its files: xz removes what it
	// decompressed by default, zstd with --rm.
	byTool := map[string][]string{"xz": {"-d", "-q"}, "zstd": {"-d", "-q", "--rm"}}
	n := map[string]int{}
	for _, e := range entries {
		name := e.Name()
		var tool string
		switch {
		case strings.HasSuffix(name, ".ko"):
			continue
		case strings.HasSuffix(name, ".ko.xz"):
			tool = "xz"
		case strings.HasSuffix(name, ".ko.zst"):
			tool = "zstd"
		default:
			return fmt.Errorf("module %s: unknown compression", name)
		}
		byTool[tool] = append(byTool[tool], name)
		n[tool]++
	}
	for _, tool := range []string{"xz", "zstd"} {
		if n[tool] == 0 {
			continue
		}
		if err := command(ctx, mods, tool, byTool[tool]...); err != nil {
			return err
		}
	}
	order, err := loadOrder(dir, wantModules, lookedUpModules)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "modules.order"), []byte(strings.Join(order, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	return decompressImage(ctx, dir)
}

// decompressImage writes vmlinux, the ELF kernel inside vmlinuz, when
// vmlinuz carries it as xz and it has a PVH entry note: qemu then boots it
// directly, skipping the kernel's self-decompression, which takes seconds
// under emulation. Otherwise vmlinuz serves as it is.
func decompressImage(ctx context.Context, dir string) error {
	z, err := os.ReadFile(filepath.Join(dir, "vmlinuz"))
	if err != nil {
		return err
	}
	i := bytes.Index(z, []byte("\xfd7zXZ\x00"))
	if i < 0 {
		return nil
	}
	cmd := exec.CommandContext(ctx, "xz", "-d", "-c", "--single-stream")
	cmd.Stdin = bytes.NewReader(z[i:])
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("xz -d the kernel image: %v: %s", err, stderr.Bytes())
	}
	f, err := elf.NewFile(bytes.NewReader(out.Bytes()))
	if err != nil {
		return nil // not an ELF kernel: boot vmlinuz
	}
	defer f.Close()
	if !hasPVHNote(f) {
		return nil
	}
	return os.WriteFile(filepath.Join(dir, "vmlinux"), out.Bytes(), 0o644)
}

// hasPVHNote: the ELF has the Xen PVH entry note (XEN_ELFNOTE_PHYS32_ENTRY,
// type 18, name "Xen") by which qemu -kernel boots an uncompressed image.
func hasPVHNote(f *elf.File) bool {
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			continue
		}
		for len(b) >= 12 {
			order := f.ByteOrder
			namesz, descsz, typ := order.Uint32(b), order.Uint32(b[4:]), order.Uint32(b[8:])
			b = b[12:]
			end := align4(namesz) + align4(descsz)
			if uint64(len(b)) < end {
				break
			}
			if typ == 18 && strings.TrimRight(string(b[:namesz]), "\x00") == "Xen" {
				return true
			}
			b = b[end:]
		}
	}
	return false
}

func align4(n uint32) uint64 { return (uint64(n) + 3) &^ 3 }

// loadOrder resolves names and their depends= closure (from each
// module's .modinfo section) to .ko file names, dependencies first. A
// name with no .ko must be in modules.builtin; a name of ifPresent with
// no .ko is left out.
func loadOrder(dir string, names, ifPresent []string) ([]string, error) {
	builtin := map[string]bool{}
	if b, err := os.ReadFile(filepath.Join(dir, "modules.builtin")); err == nil {
		for _, line := range strings.Fields(string(b)) {
			builtin[modName(path.Base(line))] = true
		}
	}
	files := map[string]string{} // module name -> .ko file name
	entries, err := os.ReadDir(filepath.Join(dir, "modules"))
	if err != nil {
		return nil, err
	}
	for _, e := range entries {
		files[modName(e.Name())] = e.Name()
	}
	var order []string
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(name string, chain []string) error
	visit = func(name string, chain []string) error {
		name = modName(name)
		switch state[name] {
		case 1:
			return fmt.Errorf("module dependency cycle: %s", strings.Join(append(chain, name), " -> "))
		case 2:
			return nil
		}
		file, ok := files[name]
		if !ok {
			if builtin[name] {
				state[name] = 2
				return nil
			}
			return fmt.Errorf("module %s (needed by %s): neither in the package nor built in", name, strings.Join(chain, " -> "))
		}
		state[name] = 1
		deps, err := moduleDepends(filepath.Join(dir, "modules", file))
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := visit(d, append(chain, name)); err != nil {
				return err
			}
		}
		state[name] = 2
		order = append(order, file)
		return nil
	}
	for _, n := range names {
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	for _, n := range ifPresent {
		if _, ok := files[modName(n)]; !ok {
			continue
		}
		if err := visit(n, nil); err != nil {
			return nil, err
		}
	}
	return order, nil
}

// modName is a module's name as depends= and modules.builtin spell it:
// no directory, no .ko suffix, dashes as underscores.
func modName(file string) string {
	n, _, _ := strings.Cut(path.Base(file), ".ko")
	return strings.ReplaceAll(n, "-", "_")
}

// moduleRelease is the kernel release a module was built for (the first
// word of its vermagic=, as uname -r prints it), which names its
// directory under /lib/modules.
func moduleRelease(file string) (string, error) {
	v, err := modinfo(file, "vermagic")
	if err != nil {
		return "", err
	}
	f := strings.Fields(v)
	if len(f) == 0 {
		return "", fmt.Errorf("%s: no vermagic= in .modinfo", file)
	}
	return f[0], nil
}

// moduleDepends reads depends= from the module's .modinfo section.
func moduleDepends(file string) ([]string, error) {
	v, err := modinfo(file, "depends")
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(strings.Split(v, ","), func(s string) bool { return s == "" }), nil
}

// modinfo reads key= from the module's .modinfo section ("" when absent).
func modinfo(file, key string) (string, error) {
	f, err := elf.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	s := f.Section(".modinfo")
	if s == nil {
		return "", fmt.Errorf("%s: no .modinfo section", file)
	}
	b, err := s.Data()
	if err != nil {
		return "", err
	}
	for _, kv := range bytes.Split(b, []byte{0}) {
		if v, ok := bytes.CutPrefix(kv, []byte(key+"=")); ok {
			return string(v), nil
		}
	}
	return "", nil
}

// loadCached reads a complete cache directory (FetchKernel renames it
// into place only once complete).
func loadCached(dir string) (*Kernel, error) {
	b, err := os.ReadFile(filepath.Join(dir, "package"))
	if err != nil {
		return nil, err
	}
	pkg, version, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	k := &Kernel{Package: pkg, Version: version, Image: filepath.Join(dir, "vmlinux")}
	if _, err := os.Stat(k.Image); err != nil {
		k.Image = filepath.Join(dir, "vmlinuz")
	}
	f, err := os.Open(filepath.Join(dir, "modules.order"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if name := strings.TrimSpace(sc.Text()); name != "" {
			k.Modules = append(k.Modules, filepath.Join(dir, "modules", name))
		}
	}
	if len(k.Modules) == 0 {
		return nil, fmt.Errorf("%s: empty modules.order", dir)
	}
	return k, sc.Err()
}

// newestCached is the most recently fetched kernel in cacheDir.
func newestCached(cacheDir string) (*Kernel, error) {
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		return nil, err
	}
	var best *Kernel
	var bestTime int64
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dir := filepath.Join(cacheDir, e.Name())
		k, err := loadCached(dir)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(filepath.Join(dir, "package")); err == nil && fi.ModTime().UnixNano() > bestTime {
			best, bestTime = k, fi.ModTime().UnixNano()
		}
	}
	if best == nil {
		return nil, errors.New("no complete kernel cached")
	}
	return best, nil
}

// command runs name args in dir; its output goes into the error.
func command(ctx context.Context, dir, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return nil
}

// output runs name args and returns its standard output.
func output(ctx context.Context, name string, args ...string) (string, error) {
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, stderr.Bytes())
	}
	return string(out), nil
}
