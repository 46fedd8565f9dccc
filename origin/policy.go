package origin

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"segorigin/origin/access"
)

// policy is the request policy in force: what the settings a reload may
// change (the sections and settings the schema marks Reload) become,
// made once from a Config and never changed after. Server.Reload makes a
// new one and puts it in force with one atomic store; a request pins the
// one in force when it starts (policies.pin) and reads each of these
// settings from it, so a request in flight during a reload sees the old
// settings or the new, never some of each.
type policy struct {
	resp            respTables     // CORS, Cache-Control, operator headers, media types
	gz              *gzipPolicy    // -gzip*
	access          *access.Policy // -access, -access-file; nil: off
	auth            *authorizer    // the Signed URLs section; nil: off
	rate, rateAfter int64          // -limit-rate, -limit-rate-after
	blockingCC      []byte         // -cache-control-blocking-reload; nil omits it
	notFoundLiveCC  []byte         // -cache-control-notfound-live; nil omits it

	src Config // what it was made from: the next reload says what it changes
}

// respTables are the responder's tables made from the configuration.
type respTables struct {
	cors         corsPolicy
	cacheControl [3][]byte                 // Cache-Control value by kind
	errorCC      errorCacheControl         // Cache-Control of error responses by status
	extraHeaders [kindError + 1][]headerKV // operator headers by kind, kindError for errors
	types        map[string]mediaType      // Content-Type and kind by extension: built in, then cfg.Types
}

// newPolicy makes the policy of cfg, whose rules validate has checked,
// but for its access rules (makePolicy parses them); what can
// still fail is what the parts check as they are built.
func newPolicy(cfg Config, st *counters) (*policy, error) {
	p := &policy{
		resp: respTables{cors: newCORSPolicy(cfg), cacheControl: cacheControlValues(cfg), errorCC: newErrorCacheControl(cfg),
			extraHeaders: extraHeaderValues(cfg.Headers), types: mediaTypeTable(cfg.Types)},
		rate: cfg.LimitRate, rateAfter: cfg.LimitRateAfter, src: cfg,
	}
	p.gz = newGzipPolicy(cfg, p.resp.types, &st.Gzip)
	if cfg.CacheControlBlockingReload != "" {
		p.blockingCC = []byte(cfg.CacheControlBlockingReload)
	}
	if cfg.CacheControlNotFoundLive != "" {
		p.notFoundLiveCC = []byte(cfg.CacheControlNotFoundLive)
	}
	if cfg.Auth.enabled() {
		var err error
		if p.auth, err = newAuthorizer(cfg.Auth, &st.Auth, cfg.Now); err != nil {
			return nil, fmt.Errorf("auth: %w", err)
		}
	}
	return p, nil
}

// policies holds the policy in force.
type policies struct {
	cur atomic.Pointer[policy]
	mu  sync.Mutex // serializes swaps: change reads, edits and stores
}

// userKey is the type of this package's RequestCtx user value keys that
// are looked up on every request: comparing one is comparing a byte, not
// a string.
type userKey uint8

// userPolicy is the user value under which a request keeps the policy it
// pinned.
const userPolicy userKey = 1

// pin makes the policy in force the request's, for all it reads from
// then on (of), and returns it.
func (ps *policies) pin(ctx *fasthttp.RequestCtx) *policy {
	p := ps.cur.Load()
	ctx.SetUserValue(userPolicy, p)
	return p
}

// of is the policy ctx pinned, or the one in force for an answer given
// before a request was read (an unparseable one).
func (ps *policies) of(ctx *fasthttp.RequestCtx) *policy {
	if p, ok := ctx.UserValue(userPolicy).(*policy); ok {
		return p
	}
	return ps.cur.Load()
}

// now is the policy in force, for work outside a request (logs, read-ahead).
func (ps *policies) now() *policy { return ps.cur.Load() }

// swap puts p in force. The rate-limited log lines of the authorizer's
// refusals carry their held-back counts over, or the counter
// segorigin_log_suppressed_total{kind="auth"} would go down.
func (ps *policies) swap(p *policy) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.swapLocked(p)
}

func (ps *policies) swapLocked(p *policy) {
	old := ps.cur.Swap(p)
	if old == nil || old.auth == nil || p.auth == nil || old.auth == p.auth {
		return
	}
	for i := range p.auth.logs {
		p.auth.logs[i].Inherit(&old.auth.logs[i])
	}
}
