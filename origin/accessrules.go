package origin

import (
	"errors"
	"fmt"
	"time"

	"github.com/valyala/fasthttp"

	"segorigin/origin/access"
)

// errAccessRefused is a refusal by Config.Access: 403, the reason
// counted and logged by admitted (not a file the server may not read).
var errAccessRefused = errors.New("origin: refused by the access rules")

// admission holds the limiters of the access rules' refusals' log lines,
// which outlive a reload; the rules are the policy's (policy.access).
type admission struct {
	logs [access.NumVerdicts]rateLimitedLog // refusals, by verdict
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

// newAccess sets the refusals' log limiters up: a step of New.
func (s *Server) newAccess(*cleanups) error {
	for i := range s.admit.logs {
		s.admit.logs[i].Every, s.admit.logs[i].Now = 10*time.Second, s.cfg.Now
	}
	return nil
}

// ReloadAccess replaces the allow/deny rules and valid referers with
// those of src (nginx statements, as Config.Access); an empty src turns
// the check off. Requests already checked are unaffected. A src that
// does not parse leaves the rules in force.
func (s *Server) ReloadAccess(src string) error {
	return s.pol.change(func(p *policy) (err error) {
		p.access, err = s.accessPolicy(src)
		p.src.Access = src
		return err
	})
}

// AccessRules is how many allow/deny rules are in force.
func (s *Server) AccessRules() int {
	if p := s.pol.now().access; p != nil {
		return p.Addresses.Len()
	}
	return 0
}

// admitted answers 403 and reports false when the rules in force refuse
// the request (its client address, or its Referer); with none in force
// it costs one atomic load.
func (s *Server) admitted(ctx *fasthttp.RequestCtx) bool {
	p := s.pol.of(ctx).access
	if p == nil {
		return true
	}
	h := &ctx.Request.Header
	referer := h.Peek(fasthttp.HeaderReferer)
	present := len(referer) > 0 || len(h.PeekAll(fasthttp.HeaderReferer)) > 0
	v := p.Check(s.clientAddr(ctx), referer, present, ctx.Host())
	if v == access.Allowed {
		return true
	}
	s.stats.Access.Refused[v].Add(1)
	if l := &s.admit.logs[v]; l.Allow() {
		s.log.Info("request refused", "status", fasthttp.StatusForbidden, "reason", v.String(),
			"path", s.loggable(string(ctx.Path())), "client", s.clientIP(ctx),
			"referer", s.loggable(string(referer)), "suppressed", l.Suppressed())
	}
	s.resp.fail(ctx, errAccessRefused)
	return false
}

// accessLogDropped is the refusals' log lines held back.
func (s *Server) accessLogDropped() int64 {
	var n int64
	for i := range s.admit.logs {
		n += s.admit.logs[i].Dropped()
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
