package origin

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"segorigin/internal/schema"
	"segorigin/origin/access"
)

// ReloadCounters count the reloads of the settings (Server.Reload).
type ReloadCounters[C any] struct {
	Applied C // reloads that put the settings read in force
	Refused C // reloads refused: settings unreadable or invalid, the previous ones kept
	// RestartPending is a level: the settings changed since start that
	// take effect only at a restart (the last reload's count).
	RestartPending C
}

// reloadMetrics declares the reloads' metrics.
func reloadMetrics(t *table, st *ReloadCounters[int64]) {
	m := t.counter("config_reloads_total", "Reloads of the settings (SIGHUP): applied, or refused (unreadable or invalid: the previous settings stay in force).", "outcome")
	t.add(m, st.Applied, "applied")
	t.add(m, st.Refused, "refused")
	t.add(t.gauge("config_restart_pending", "Settings changed since start that take effect only at a restart (the last reload logged their names)."), st.RestartPending)
}

// Reloaded is what a reload changed, by flag ("-access").
type Reloaded struct {
	Applied []string // settings now in force with their new values
	Restart []string // settings whose values differ from those at start but take effect only at a restart

	AccessRules int  // allow/deny rules now in force
	Auth        bool // whether requests now need tokens
}

// Reload puts in force the settings of the configuration load reads (the
// command line, the environment and the settings file, read again), as
// nginx's reload does its configuration. The whole configuration is
// checked by the rules New holds one to; if load fails or a rule refuses
// it, nothing changes and the error says why. Otherwise the settings the
// schema marks Reload (Sections: headers, CORS, compression, access
// rules, rate limits, signed URLs) are made into a new policy put in force
// with one atomic store: a request that began before it keeps the old
// settings to its end, one that begins after it has the new ones, and no
// connection is dropped. A setting that takes effect only at a restart
// (the root, the listeners, the cache...) keeps its value from start and
// is named in Restart; so are restart, the caller's own such settings
// that differ (load returns them). Counted in ReloadCounters.
func (s *Server) Reload(load func() (cfg Config, restart []string, err error)) (Reloaded, error) {
	r, err := s.reload(load)
	if err != nil {
		s.stats.Reload.Refused.Add(1)
		return Reloaded{}, err
	}
	s.stats.Reload.Applied.Add(1)
	s.stats.Reload.RestartPending.Store(int64(len(r.Restart)))
	return r, nil
}

func (s *Server) reload(load func() (Config, []string, error)) (Reloaded, error) {
	cfg, restart, err := load()
	if err != nil {
		return Reloaded{}, err
	}
	// What is no setting stays as the server was made.
	cfg.Logger, cfg.Now, cfg.AccessLog, cfg.AccessLogFormat, cfg.Build = s.cfg.Logger, s.cfg.Now, s.cfg.AccessLog, s.cfg.AccessLogFormat, s.cfg.Build
	if err := cfg.validate(); err != nil {
		return Reloaded{}, fmt.Errorf("invalid configuration: %w", err)
	}
	if cfg.Root, err = filepath.Abs(cfg.Root); err != nil {
		return Reloaded{}, fmt.Errorf("root: %w", err)
	}
	s.pol.mu.Lock()
	defer s.pol.mu.Unlock()
	p, err := makePolicy(cfg, &s.stats)
	if err != nil {
		return Reloaded{}, err
	}
	start := s.cfg
	_, fromStart := schema.Diff(start.Sections(), cfg.Sections())
	old := s.pol.cur.Load().src
	applied, _ := schema.Diff(old.Sections(), cfg.Sections())
	s.pol.swapLocked(p)
	r := Reloaded{Applied: applied, Restart: append(restart, fromStart...), Auth: p.auth != nil}
	if p.access != nil {
		r.AccessRules = p.access.Addresses.Len()
	}
	return r, nil
}

// makePolicy is newPolicy with the access rules, their warnings logged.
func makePolicy(cfg Config, st *counters) (*policy, error) {
	p, err := newPolicy(cfg, st)
	if err != nil {
		return nil, err
	}
	if p.access, err = accessPolicy(cfg.Access, cfg.Logger); err != nil {
		return nil, fmt.Errorf("-access: %w", err)
	}
	return p, nil
}

// accessPolicy parses src (nginx statements, as Config.Access), logging
// its warnings; nil when it sets no rule.
func accessPolicy(src string, log *slog.Logger) (*access.Policy, error) {
	p, err := access.Parse(src)
	if err != nil {
		return nil, err
	}
	for _, w := range p.Warnings {
		log.Warn("access rules: "+w, "rules", p.Addresses.Len())
	}
	if p.Empty() {
		return nil, nil
	}
	return p, nil
}
