package testproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// buildTimeout bounds one go build.
const buildTimeout = 5 * time.Minute

// built is one package's build, done once per test binary: the binary is
// kept open and its directory removed at once, so nothing is left behind
// when the test binary exits; each Build copies it out.
type built struct {
	once sync.Once
	bin  *os.File
	size int64
	err  error
}

var (
	buildsMu sync.Mutex // protects builds
	builds   = map[string]*built{}
)

// Build compiles the main package pkg of this module ("./cmd/segorigin",
// relative to the module root, or an import path such as
// "segorigin/cmd/segorigin") and returns the path of an executable copy in
// t.TempDir(), named after the package's last element. The go build runs
// once per pkg per test binary, however many tests call Build. GOFLAGS from
// the environment apply to it; flags given to go test (-race, -cover) do
// not, so the command runs as it is deployed.
func Build(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, nil)
}

// BuildStatic is Build with CGO_ENABLED=0 and without the symbol tables
// (-ldflags=-s -w; stack traces keep their names): an executable linked
// against no shared library, for a machine without this one's libc (an
// initramfs in a virtual machine, which unpacks every byte).
func BuildStatic(t testing.TB, pkg string) string {
	t.Helper()
	return build(t, pkg, []string{"CGO_ENABLED=0"}, "-ldflags=-s -w")
}

func build(t testing.TB, pkg string, env []string, flags ...string) string {
	t.Helper()
	key := pkg + "\x00" + strings.Join(env, "\x00") + "\x00" + strings.Join(flags, "\x00")
	buildsMu.Lock()
	b := builds[key]
	if b == nil {
		b = &built{}
		builds[key] = b
	}
	buildsMu.Unlock()
	b.once.Do(func() { b.bin, b.size, b.err = goBuild(pkg, env, flags) })
	if b.err != nil {
		t.Fatal(b.err)
	}
	out := filepath.Join(t.TempDir(), path.Base(pkg))
	f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	_, err = io.Copy(f, io.NewSectionReader(b.bin, 0, b.size))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatalf("copy the %s binary: %v", pkg, err)
	}
	return out
}

// goBuild builds pkg with go build flags, and env added to this
// process's environment, into a temporary directory, opens the binary and
// removes the directory.
func goBuild(pkg string, env, flags []string) (*os.File, int64, error) {
	root, err := moduleRoot()
	if err != nil {
		return nil, 0, err
	}
	dir, err := os.MkdirTemp("", "testproc-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, path.Base(pkg))
	ctx, cancel := context.WithTimeout(context.Background(), buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", append(append([]string{"build", "-o", bin}, flags...), pkg)...)
	cmd.Dir = root
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, 0, fmt.Errorf("go build %s: %v\n%s", pkg, err, out)
	}
	f, err := os.Open(bin)
	if err != nil {
		return nil, 0, err
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}

// moduleRoot is the directory of the go.mod above the working directory
// (go test runs each test binary in its package's directory).
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		} else if !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("testproc: no go.mod above the working directory")
		}
		dir = parent
	}
}
