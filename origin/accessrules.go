package origin

import (
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/origin/access"
)

// errAccessRefused is a refusal by Config.Access: 403, the reason
// counted and logged by admitted (not a file the server may not read).
var errAccessRefused = errors.New("origin: refused by the access rules")

// admission decides whether a request may be answered before any file is
// looked at, as nginx's access phase does: the allow/deny rules and valid
// referers and the token check of the policy the request pinned (both
// reloaded with it: policy.go), who the request is from (the trusted
// proxies) and the per-client limit. It owns their refusals' answers and
// log limiters (which outlive a reload); it takes the policies, the
// responder for the answers and the counters it counts into.
type admission struct {
	pol  *policies
	logs [access.NumVerdicts]rateLimitedLog // refusals, by verdict

	client    clientIdentity // who a request is from (trusted proxies)
	perClient *clientLimit   // -max-conns-per-ip; nil: no limit

	resp     *responder
	stats    *counters
	log      *slog.Logger
	loggable func(string) string
	now      func() time.Time
}

// newAdmission makes the admission of cfg, over the policies New puts
// in force (makePolicy, New).
func newAdmission(cfg Config, pol *policies, st *counters, resp *responder, loggable func(string) string) (*admission, error) {
	client, err := newClientIdentity(cfg)
	if err != nil {
		return nil, err
	}
	ad := &admission{pol: pol, client: client, perClient: newClientLimit(cfg, &st.ClientLimited),
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

// admitted answers 403 and reports false when the rules in force refuse
// the request (its client address, or its Referer); with none in force
// it costs one atomic load.
func (ad *admission) admitted(ctx *fasthttp.RequestCtx) bool {
	p := ad.pol.of(ctx).access
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
