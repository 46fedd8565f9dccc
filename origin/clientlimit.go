package origin

import (
	"errors"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valyala/fasthttp"
)

// errClientLimit: the client has -max-conns-per-ip requests in progress
// already. Answered 503 with Retry-After, as nginx's limit_conn answers
// (limit_conn_status 503).
var errClientLimit = errors.New("origin: too many requests in progress from this client")

// clientLimit bounds the requests in progress at once per client address
// (-max-conns-per-ip), as nginx's limit_conn over $binary_remote_addr
// does: a connection counts while a request on it is being answered,
// from its whole header read to its last byte sent, and the address is
// the client's as the trusted proxies name it (X-Forwarded-For,
// Forwarded, PROXY), not the proxy's. Over the limit the request is
// answered 503 with Retry-After; the connection is never reset.
//
// Written by hand over a map and a mutex: a request takes and gives one
// count, and no library keeps counts by key with a bound.
type clientLimit struct {
	max     int
	mu      sync.Mutex
	n       map[netip.Addr]int // requests in progress per address; absent: none
	refused *atomic.Int64      // Stats.ClientLimited
	log     rateLimitedLog
}

func newClientLimit(cfg Config, refused *atomic.Int64) *clientLimit {
	if cfg.MaxConnsPerIP <= 0 {
		return nil
	}
	l := &clientLimit{max: cfg.MaxConnsPerIP, n: map[netip.Addr]int{}, refused: refused}
	l.log.Every, l.log.Now = 10*time.Second, cfg.Now
	return l
}

// take counts a request from a; false: a has max in progress already
// (counted as refused). An unknown address is not limited.
func (l *clientLimit) take(a netip.Addr) bool {
	if !a.IsValid() {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[a] >= l.max {
		l.refused.Add(1)
		return false
	}
	l.n[a]++
	return true
}

// dropped is how many log lines of refusals were held back.
func (l *clientLimit) dropped() int64 {
	if l == nil {
		return 0
	}
	return l.log.Dropped()
}

// give ends a request from a that take counted.
func (l *clientLimit) give(a netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.n[a]--; l.n[a] <= 0 {
		delete(l.n, a)
	}
}

// holdClient counts the request in p against its client's limit, when
// there is one: true when it may go on; false when ctx holds the answer
// (503).
func (ad *admission) holdClient(ctx *fasthttp.RequestCtx, p *plan) bool {
	if ad.perClient == nil {
		return true
	}
	a := ad.client.addr(ctx)
	if !ad.perClient.take(a) {
		if ad.perClient.log.Allow() {
			ad.log.Warn("client over -max-conns-per-ip: answering 503", "client", a.String(),
				"max_conns_per_ip", ad.perClient.max, "suppressed", ad.perClient.log.Suppressed())
		}
		ad.resp.fail(ctx, errClientLimit)
		return false
	}
	if a.IsValid() {
		p.client, p.holds = a, true
	}
	return true
}

// releaseClient ends p's count against its client's limit, once.
func (ad *admission) releaseClient(p *plan) {
	if p.holds {
		p.holds = false
		ad.perClient.give(p.client)
	}
}
