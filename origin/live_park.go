package origin

import (
	"time"

	"github.com/valyala/fasthttp"
)

// userStart is the user value under which a request woken from a park
// keeps the time it began (requestTime).
const userStart userKey = 2

// requestTime is when the request of ctx began: fasthttp's time, or, for
// a request woken from a park (a fresh RequestCtx), its first one.
func requestTime(ctx *fasthttp.RequestCtx) time.Time {
	if ns, ok := ctx.UserValue(userStart).(int64); ok {
		return time.Unix(0, ns)
	}
	return ctx.Time()
}
