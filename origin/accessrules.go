package origin

import (
	"fmt"
	"io/fs"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/origin/access"
)

// errAccessRefused is a refusal by Config.Access: 403, the reason
// counted and logged by admitted.
var errAccessRefused = fmt.Errorf("origin: refused by the access rules: %w", fs.ErrPermission)

// admission decides whether a request may be answered before any file is
// looked at, as nginx's access phase does: the allow/deny rules and valid
// referers in force (Config.Access, swapped by reloadAccess), the token
// check (swapped by reloadAuth), who the request is from (the trusted
// proxies) and the per-client limit. It owns those settings, their
// refusals' answers and log limiters (which outlive a reload); it takes
// the responder for the answers and the counters it counts into.
type admission struct {
	policy atomic.Pointer[access.Policy]      // nil: nothing refused, nothing read
	logs   [access.NumVerdicts]rateLimitedLog // refusals, by verdict

	auth      atomic.Pointer[authorizer] // nil when authorization is off
	client    clientIdentity             // who a request is from (trusted proxies)
	perClient *clientLimit               // -max-conns-per-ip; nil: no limit

	resp     *responder
	stats    *counters
	log      *slog.Logger
	loggable func(string) string
	now      func() time.Time
}

// newAdmission makes the admission of cfg with nothing in force yet:
// New's steps put the access rules (putAccess) and the authorizer in.
func newAdmission(cfg Config, st *counters, resp *responder, loggable func(string) string) (*admission, error) {
	client, err := newClientIdentity(cfg)
	if err != nil {
		return nil, err
	}
	ad := &admission{client: client, perClient: newClientLimit(cfg, &st.ClientLimited),
		resp: resp, stats: st, log: cfg.Logger, loggable: loggable, now: cfg.Now}
	for i := range ad.logs {
		ad.logs[i].Every, ad.logs[i].Now = 10*time.Second, cfg.Now
	}
	return ad, nil
}

// AccessCounters count requests refused by Config.Access, indexed by
// access.Verdict (Allowed is never counted).
type AccessCounters[C any] struct {
	Refused [access.NumVerdicts]C
}

// accessMetrics declares the refusals' metric.
func accessMetrics(t *table, st *AccessCounters[int64]) {
	m := t.counter("access_refused_total", "Requests answered 403 by -access: a deny rule (address) or an invalid Referer (referer_*), by reason.", "reason")
	for v := access.Verdict(1); v < access.NumVerdicts; v++ {
		t.add(m, st.Refused[v], v.String())
	}
}

// putInForce puts cfg's access rules (checked by validate) and, when a
// token carrier is configured, its authorizer in force: a step of New.
func (ad *admission) putInForce(cfg Config) error {
	if err := ad.reloadAccess(cfg.Access); err != nil {
		return fmt.Errorf("origin: access: %w", err)
	}
	if !cfg.Auth.enabled() {
		return nil
	}
	a, err := newAuthorizer(cfg.Auth, &ad.stats.Auth, ad.now)
	if err != nil {
		return fmt.Errorf("origin: auth: %w", err)
	}
	ad.auth.Store(a)
	return nil
}

// ReloadAccess replaces the allow/deny rules and valid referers with
// those of src (nginx statements, as Config.Access); an empty src turns
// the check off. Requests already checked are unaffected. A src that
// does not parse leaves the rules in force.
func (s *Server) ReloadAccess(src string) error { return s.admit.reloadAccess(src) }

func (ad *admission) reloadAccess(src string) error {
	p, err := access.Parse(src)
	if err != nil {
		return err
	}
	for _, w := range p.Warnings {
		ad.log.Warn("access rules: "+w, "rules", p.Addresses.Len())
	}
	if p.Empty() {
		p = nil
	}
	ad.policy.Store(p)
	return nil
}

// AccessRules is how many allow/deny rules are in force.
func (s *Server) AccessRules() int {
	if p := s.admit.policy.Load(); p != nil {
		return p.Addresses.Len()
	}
	return 0
}

// admitted answers 403 and reports false when the rules in force refuse
// the request (its client address, or its Referer); with none in force
// it costs one atomic load.
func (ad *admission) admitted(ctx *fasthttp.RequestCtx) bool {
	p := ad.policy.Load()
	if p == nil {
		return true
	}
	h := &ctx.Request.Header
	referer := h.Peek(fasthttp.HeaderReferer)
	present := len(referer) > 0 || len(h.PeekAll(fasthttp.HeaderReferer)) > 0
	v := p.Check(ad.client.addr(ctx), referer, present, ctx.Host())
	if v == access.Allowed {
		return true
	}
	ad.stats.Access.Refused[v].Add(1)
	if l := &ad.logs[v]; l.Allow() {
		ad.log.Info("request refused", "status", fasthttp.StatusForbidden, "reason", v.String(),
			"path", ad.loggable(string(ctx.Path())), "client", ad.client.ip(ctx),
			"referer", ad.loggable(string(referer)), "suppressed", l.Suppressed())
	}
	ad.resp.fail(ctx, errAccessRefused)
	return false
}

// accessLogDropped is the refusals' log lines held back.
func (ad *admission) accessLogDropped() int64 {
	var n int64
	for i := range ad.logs {
		n += ad.logs[i].Dropped()
	}
	return n
}

// checkAccess parses -access, so a mistake is refused at start with the
// flag's name.
func (c *Config) checkAccess() error {
	if _, err := access.Parse(c.Access); err != nil {
		return fmt.Errorf("-access: %w", err)
	}
	return nil
}
