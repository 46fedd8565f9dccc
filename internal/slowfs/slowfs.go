package slowfs

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"

	"segorigin/internal/testreq"
)

// Method names how the rig slows storage, for test output.
const Method = "fuse (go-fuse loopback; per-read delay and a gate the test holds)"

// Config describes a mount.
type Config struct {
	// Backing is the directory whose files appear under Mountpoint.
	Backing string
	// Mountpoint is an empty directory to mount on.
	Mountpoint string
	// Delay is added to every read that reaches the file system (a page
	// cache miss). 0: none.
	Delay time.Duration
}

// FS is a mounted slow file system.
type FS struct {
	cfg    Config
	server *fuse.Server

	readGate gate         // reads wait here while held (Hold)
	openGate gate         // opens wait here while held (HoldOpens)
	reads    atomic.Int64 // reads that reached the file system
	bytes    atomic.Int64 // bytes those reads returned
}

// gate holds callers while it is closed.
type gate struct {
	mu      sync.Mutex    // protects held, release
	held    bool          // callers wait for release
	release chan struct{} // closed when the gate opens
	waiting atomic.Int64  // callers waiting now
}

func (g *gate) hold() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.held {
		g.held, g.release = true, make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.held {
		g.held = false
		close(g.release)
	}
}

// pass returns once the gate is open, or EINTR when ctx ends first (the
// kernel interrupted the request).
func (g *gate) pass(ctx context.Context) syscall.Errno {
	g.mu.Lock()
	held, release := g.held, g.release
	g.mu.Unlock()
	if !held {
		return 0
	}
	g.waiting.Add(1)
	defer g.waiting.Add(-1)
	select {
	case <-release:
		return 0
	case <-ctx.Done():
		return syscall.EINTR
	}
}

// Mount mounts cfg.Backing on cfg.Mountpoint. The caller must Close it.
func Mount(cfg Config) (*FS, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(cfg.Backing, &st); err != nil {
		return nil, fmt.Errorf("slowfs: backing: %w", err)
	}
	f := &FS{cfg: cfg}
	root := &fs.LoopbackRoot{Path: cfg.Backing, Dev: uint64(st.Dev)}
	root.NewNode = func(r *fs.LoopbackRoot, _ *fs.Inode, _ string, _ *syscall.Stat_t) fs.InodeEmbedder {
		return &node{LoopbackNode: fs.LoopbackNode{RootData: r}, fs: f}
	}
	root.RootNode = root.NewNode(root, nil, "", &st)
	sec := time.Hour // nothing changes under the tests' feet unseen
	srv, err := fs.Mount(cfg.Mountpoint, root.RootNode, &fs.Options{
		EntryTimeout: &sec,
		AttrTimeout:  &sec,
		MountOptions: fuse.MountOptions{
			FsName:      "slowfs",
			Name:        "slowfs",
			DirectMount: true,
			// Reads arrive one FUSE request per 128 KiB at most;
			// several may be outstanding.
			MaxReadAhead: 128 << 10,
		},
	})
	if err != nil {
		return nil, fmt.Errorf("slowfs: mount %s: %w", cfg.Mountpoint, err)
	}
	f.server = srv
	return f, nil
}

// MountT mounts backing on a fresh directory for the test and unmounts it
// at cleanup; it skips the test when this machine cannot mount FUSE. It
// logs the method used.
func MountT(t testing.TB, backing string, delay time.Duration) *FS {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		testreq.Unmet(t, fmt.Sprintf("slowfs: no /dev/fuse (%v): cannot make storage slow here", err))
	}
	mnt := t.TempDir()
	f, err := Mount(Config{Backing: backing, Mountpoint: mnt, Delay: delay})
	if err != nil {
		testreq.Unmet(t, fmt.Sprintf("slowfs: cannot mount FUSE here (as root, or with fusermount3 from the Debian package fuse3): %v", err))
	}
	t.Cleanup(func() {
		if err := f.Close(); err != nil {
			t.Errorf("slowfs: %v", err)
		}
	})
	t.Logf("slow storage: method=%s delay=%v mount=%s", Method, delay, mnt)
	return f
}

// Dir is the mount point: serve files from here.
func (f *FS) Dir() string { return f.cfg.Mountpoint }

// Hold makes every read from now on wait until Open.
func (f *FS) Hold() { f.readGate.hold() }

// Open lets held reads, and every later one, through.
func (f *FS) Open() { f.readGate.open() }

// HoldOpens makes every open from now on wait until ReleaseOpens: storage
// whose opens hang (an NFS server gone away). Reads are not affected.
func (f *FS) HoldOpens() { f.openGate.hold() }

// ReleaseOpens lets held opens, and every later one, through.
func (f *FS) ReleaseOpens() { f.openGate.open() }

// OpensWaiting is how many opens wait at the open gate now.
func (f *FS) OpensWaiting() int64 { return f.openGate.waiting.Load() }

// Reads is how many reads reached the file system (page-cache misses).
func (f *FS) Reads() int64 { return f.reads.Load() }

// Waiting is how many reads wait at the gate now.
func (f *FS) Waiting() int64 { return f.readGate.waiting.Load() }

// AwaitWaiting returns once at least n reads wait at the gate, or an
// error after timeout.
func (f *FS) AwaitWaiting(n int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for f.Waiting() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("slowfs: %d reads waiting after %v, want %d", f.Waiting(), timeout, n)
		}
		time.Sleep(time.Millisecond)
	}
	return nil
}

// Bytes is how many bytes reads returned.
func (f *FS) Bytes() int64 { return f.bytes.Load() }

// Close opens both gates and unmounts.
func (f *FS) Close() error {
	f.Open()
	f.ReleaseOpens()
	if err := f.server.Unmount(); err != nil {
		return fmt.Errorf("unmount %s: %w", f.cfg.Mountpoint, err)
	}
	return nil
}

// gate delays a read and holds it while the read gate is closed.
func (f *FS) gate(ctx context.Context) syscall.Errno {
	f.reads.Add(1)
	if f.cfg.Delay > 0 {
		t := time.NewTimer(f.cfg.Delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return syscall.EINTR
		}
	}
	return f.readGate.pass(ctx)
}

// node is a loopback node whose open files read through the gate.
type node struct {
	fs.LoopbackNode
	fs *FS
}

var _ fs.NodeOpener = (*node)(nil)

func (n *node) Open(ctx context.Context, flags uint32) (fs.FileHandle, uint32, syscall.Errno) {
	if errno := n.fs.openGate.pass(ctx); errno != 0 {
		return nil, 0, errno
	}
	fh, _, errno := n.LoopbackNode.Open(ctx, flags)
	if errno != 0 {
		return nil, 0, errno
	}
	lf, ok := fh.(*fs.LoopbackFile)
	if !ok {
		return nil, 0, syscall.EIO
	}
	// FOPEN_KEEP_CACHE: a new open must not drop the pages earlier opens
	// read, or every cache-less request would be cold.
	return &file{LoopbackFile: lf, fs: n.fs}, fuse.FOPEN_KEEP_CACHE, 0
}

// file is a loopback file whose reads pass the gate.
type file struct {
	*fs.LoopbackFile
	fs *FS
}

var (
	_ fs.FileReader          = (*file)(nil)
	_ fs.FilePassthroughFder = (*file)(nil)
)

// PassthroughFd refuses FUSE passthrough, which LoopbackFile offers: with
// it the kernel would read the backing file itself and no read would reach
// the gate.
func (f *file) PassthroughFd() (int, bool) { return -1, false }

func (f *file) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	if errno := f.fs.gate(ctx); errno != 0 {
		return nil, errno
	}
	r, errno := f.LoopbackFile.Read(ctx, dest, off)
	if errno == 0 {
		f.fs.bytes.Add(int64(r.Size()))
	}
	return r, errno
}

// Evict drops path's pages from the page cache (posix_fadvise DONTNEED),
// so its next read reaches the file system again.
func Evict(path string) error {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("slowfs: evict: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.Fadvise(fd, 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("slowfs: evict %s: %w", path, err)
	}
	return nil
}
