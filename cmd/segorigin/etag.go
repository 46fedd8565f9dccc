package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"segorigin/origin/etag"
)

// etagCounts is what `segorigin etag` did.
type etagCounts struct {
	hashed, stored, changed, failed int
}

// runETag is `segorigin etag DIR`: it stores the content validator of
// every regular file under DIR in its extended attribute, as a server
// with -etag content would on a file's first request, so a packaging
// pipeline can pay for the hashes before the files are served.
func runETag(args []string, stdout io.Writer) error {
	fset := flag.NewFlagSet("segorigin etag", flag.ContinueOnError)
	fset.SetOutput(io.Discard)
	fset.Usage = func() {}
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, `Usage:
  segorigin etag DIR

Hashes every regular file under DIR and stores its content validator in
the file's user.segorigin.etag extended attribute, where a server run with
-etag content finds it instead of hashing the file on its first request.
A file whose attribute already holds its validator is skipped. Symbolic
links are not followed. Exits 2 when a file could not be hashed or its
attribute not written.
`)
		}
		return err
	}
	if fset.NArg() != 1 {
		return errors.New("want one directory: segorigin etag DIR")
	}
	var n etagCounts
	var errs []error
	buf := make([]byte, 1<<20)
	root := fset.Arg(0)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			n.failed++
			errs = append(errs, err)
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		if err := storeETag(p, buf, &n); err != nil {
			n.failed++
			errs = append(errs, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "%s: %d hashed, %d already stored, %d changed while hashed (not stored), %d failed\n",
		root, n.hashed, n.stored, n.changed, n.failed)
	for _, e := range errs[:min(len(errs), 20)] {
		fmt.Fprintln(stdout, "  ", e)
	}
	if len(errs) > 0 {
		return fmt.Errorf("%d files failed", len(errs))
	}
	return nil
}

// storeETag hashes the file at p unless its attribute holds its tag, and
// stores the tag.
func storeETag(p string, buf []byte, n *etagCounts) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	v := etag.VersionOf(fi)
	fd := int(f.Fd())
	if _, ok, err := etag.Load(fd, v); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	} else if ok {
		n.stored++
		return nil
	}
	tag, err := etag.Sum(f, v.Size, buf)
	if err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	if fi, err = f.Stat(); err != nil {
		return err
	}
	if etag.VersionOf(fi) != v {
		n.changed++
		return nil
	}
	if err := etag.Store(fd, v, etag.Tag{ETag: tag, Changed: v.Ctime}, func() int64 { return time.Now().UnixNano() }); err != nil {
		return fmt.Errorf("%s: %w", p, err)
	}
	n.hashed++
	return nil
}
