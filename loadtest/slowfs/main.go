// Command slowfs mounts a directory through the internal/slowfs FUSE rig
// with a fixed delay on every read that misses the page cache, for
// loadtest/cold.sh: slow storage that nginx and segorigin read alike. It
// unmounts on SIGINT or SIGTERM.
//
//	go run ./loadtest/slowfs -backing /tmp/lib -mount /tmp/slow -delay 5ms
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"segorigin/internal/slowfs"
)

func main() {
	backing := flag.String("backing", "", "directory whose files appear under -mount")
	mount := flag.String("mount", "", "empty directory to mount on")
	delay := flag.Duration("delay", 0, "added to every read that reaches the file system (a page-cache miss)")
	flag.Parse()
	if *backing == "" || *mount == "" {
		fmt.Fprintln(os.Stderr, "usage: slowfs -backing DIR -mount DIR [-delay D]")
		os.Exit(2)
	}
	f, err := slowfs.Mount(slowfs.Config{Backing: *backing, Mountpoint: *mount, Delay: *delay})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("slowfs: mounted %s on %s: method=%s delay=%v\n", *backing, *mount, slowfs.Method, *delay)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGINT, syscall.SIGTERM)
	<-sig
	fmt.Printf("slowfs: %d reads reached the file system (%d bytes)\n", f.Reads(), f.Bytes())
	if err := f.Close(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
