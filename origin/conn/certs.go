package conn

import (
	"context"
	"crypto/tls"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// certStore holds the certificate in service and reloads it from disk.
type certStore struct {
	certFile, keyFile string
	log               *slog.Logger
	stats             *TLSStats
	cur               atomic.Pointer[tls.Certificate]

	mu        sync.Mutex     // serialises reloads; protects seen, failed and failedMsg
	seen      [2]fs.FileInfo // the files as last loaded
	failed    [2]fs.FileInfo // the files as last failed to load
	failedMsg string         // and the error then (each failure is logged once)
}

func (cs *certStore) get(*tls.ClientHelloInfo) (*tls.Certificate, error) { return cs.cur.Load(), nil }

// reload loads the pair if force is set or either file changed (by
// size, mtime or identity: a rename or symlink swap counts). It reports
// whether a new pair went into service.
func (cs *certStore) reload(force bool) (bool, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var now [2]fs.FileInfo
	var err error
	for i, name := range []string{cs.certFile, cs.keyFile} {
		if now[i], err = os.Stat(name); err != nil {
			return false, cs.failedLocked(now, fmt.Errorf("tls certificate: %w", err), force)
		}
	}
	if !force && sameFiles(now, cs.seen) {
		return false, nil
	}
	if !force && cs.failedMsg != "" && sameFiles(now, cs.failed) {
		return false, nil // already reported; wait for the next change
	}
	c, err := tls.LoadX509KeyPair(cs.certFile, cs.keyFile)
	if err != nil {
		return false, cs.failedLocked(now, fmt.Errorf("tls certificate %s, key %s: %w", cs.certFile, cs.keyFile, err), force)
	}
	first := cs.cur.Load() == nil
	cs.cur.Store(&c)
	cs.seen, cs.failed, cs.failedMsg = now, [2]fs.FileInfo{}, ""
	if !first {
		cs.stats.CertReloads.Add(1)
	}
	cs.log.Info("TLS certificate loaded", "cert", cs.certFile, "subject", c.Leaf.Subject.String(),
		"dns", c.Leaf.DNSNames, "not_after", c.Leaf.NotAfter.Format(time.RFC3339), "reload", !first)
	return true, nil
}

func (cs *certStore) failedLocked(now [2]fs.FileInfo, err error, force bool) error {
	if cs.cur.Load() == nil {
		return err // at start: New fails
	}
	cs.stats.CertReloadFails.Add(1)
	if force || err.Error() != cs.failedMsg || !sameFiles(now, cs.failed) {
		cs.log.Error("TLS certificate reload failed: the previous certificate stays in service", "err", err)
	}
	cs.failed, cs.failedMsg = now, err.Error()
	return err
}

// sameFiles: the same files (identity, size, mtime); nil (not there)
// equals only nil.
func sameFiles(a, b [2]fs.FileInfo) bool {
	for i := range a {
		switch {
		case a[i] == nil || b[i] == nil:
			if a[i] != b[i] {
				return false
			}
		case !os.SameFile(a[i], b[i]) || a[i].Size() != b[i].Size() || !a[i].ModTime().Equal(b[i].ModTime()):
			return false
		}
	}
	return true
}

// poll reloads the pair when the files change, until ctx is done. Run owns
// the goroutine.
func (cs *certStore) poll(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			cs.reload(false) // failures are logged and counted inside
		}
	}
}
