package origin

import "github.com/valyala/fasthttp"

// clientIP is the address a request is attributed to: token IP binding,
// logs and metrics use it.
func (s *Server) clientIP(ctx *fasthttp.RequestCtx) string {
	return ctx.RemoteIP().String()
}
