package origin

import (
	"fmt"
	"time"

	"segorigin/cache"
	"segorigin/origin/clientaddr"
	"segorigin/origin/conn"
	"segorigin/watcher"
)

// The parts New assembles that take only settings and hooks: each built
// from what it needs, none from the Server.

// newGate makes the connection limits every listener shares.
func newGate(cfg Config, trusted *clientaddr.Trusted, onFDPressure func(error), st *counters) (*conn.Gate, error) {
	g, err := conn.NewGate(conn.GateConfig{
		MaxConns:     cfg.MaxConns,
		Trusted:      trusted,
		Proxy:        conn.ProxyMode(cfg.ProxyProtocol),
		OnFDPressure: onFDPressure,
		Logger:       cfg.Logger,
		Stats:        &st.ListenerCounters,
		Now:          cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("origin: listener: %w", err)
	}
	return g, nil
}

// newTLS loads the certificate; nil when HTTPS is not configured.
func newTLS(cfg Config, st *counters) (*conn.TLS, error) {
	if !cfg.TLS.Enabled() {
		return nil, nil
	}
	t, err := conn.NewTLS(conn.TLSParams{
		Config:           cfg.TLS,
		HandshakeTimeout: cfg.ReadTimeout,
		Logger:           cfg.Logger,
		Stats:            &st.TLS,
		Now:              cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("origin: tls: %w", err)
	}
	return t, nil
}

// newFileCache makes the file cache over root.
func newFileCache(cfg Config, root *mediaRoot) (*cache.Cache, error) {
	revalidate := time.Duration(0)
	if !cfg.Watch {
		revalidate = cfg.RevalidateEvery
	}
	negTTL := cfg.NegativeTTL
	if negTTL == 0 || cfg.NegativeCacheBytes == 0 {
		negTTL = -1 // the cache's "no negative entries"
	}
	c, err := cache.New(cache.Config{
		MaxFiles:      cfg.CacheFiles,
		NegativeTTL:   negTTL,
		NegativeBytes: cfg.NegativeCacheBytes,
		Revalidate:    revalidate,
		InlineMax:     cfg.InlineMax,
		InlineBudget:  cfg.InlineBudget,
		WaitTimeout:   max(cfg.ColdDeadline, 0),
		Open:          root.open,
		Stat:          root.stat,
		Now:           cfg.Now,
	})
	if err != nil {
		return nil, fmt.Errorf("origin: cache: %w", err)
	}
	return c, nil
}

// newWatcher makes the watcher that invalidates target, unless -watch is
// off (nil). While it cannot see every change (degraded), c revalidates
// by stat every -revalidate-every, and stops when it can again.
func newWatcher(cfg Config, target watcher.Invalidator, c *cache.Cache, onWrite func(string)) (*watcher.Watcher, error) {
	if !cfg.Watch {
		return nil, nil
	}
	w, err := watcher.New(watcher.Config{
		Root:   cfg.Root,
		Target: target,
		Logger: cfg.Logger,
		OnDegraded: func(degraded bool) {
			if degraded {
				c.SetRevalidate(cfg.RevalidateEvery)
				return
			}
			c.SetRevalidate(0)
		},
		OnWrite: onWrite,
	})
	if err != nil {
		return nil, fmt.Errorf("origin: watcher: %w", err)
	}
	return w, nil
}
