//go:build !linux

package origin

import (
	"context"
	"errors"
	"net"

	"github.com/valyala/fasthttp"

	"segorigin/origin/conn"
)

// loopAvailable: the event-loop engine needs epoll.
const loopAvailable = false

const defaultEngine = EngineFastHTTP

type loopServer struct{}

func (q *handler) newLoopServer(*conn.Listener) (*loopServer, error) {
	return nil, errors.New("origin: the loop engine needs Linux")
}
func (ls *loopServer) serve(net.Listener) error {
	return errors.New("origin: the loop engine needs Linux")
}
func (ls *loopServer) shutdown(ctx context.Context) error { return nil }

// connServer serves the listeners the loops do not: here, fasthttp.
type connServer interface {
	serve(net.Listener) error
	shutdown(context.Context) error
}

type fastServer struct{ http *fasthttp.Server }

func (q *handler) newConnServer() connServer { return fastServer{q.newFastHTTP()} }

func (f fastServer) serve(ln net.Listener) error        { return f.http.Serve(ln) }
func (f fastServer) shutdown(ctx context.Context) error { return f.http.ShutdownWithContext(ctx) }

// writeBufferSize is fasthttp's per-connection response buffer (its
// default): headers, bodiless responses and inline bodies leave from it.
const writeBufferSize = 4096

// newFastHTTP is the server of the listeners the loops do not serve here.
func (q *handler) newFastHTTP() *fasthttp.Server {
	return &fasthttp.Server{
		Handler:                       q.handle,
		Name:                          q.cfg.ServerName,
		NoDefaultServerHeader:         q.cfg.ServerName == "",
		NoDefaultContentType:          true,
		ReadTimeout:                   q.cfg.ReadTimeout,
		WriteTimeout:                  q.cfg.WriteTimeout,
		IdleTimeout:                   q.cfg.IdleTimeout,
		MaxRequestsPerConn:            q.cfg.MaxRequestsPerConn,
		ReadBufferSize:                q.cfg.MaxHeaderBytes,
		WriteBufferSize:               writeBufferSize,
		MaxRequestBodySize:            64 << 10,
		DisablePreParseMultipartForm:  true,
		DisableHeaderNamesNormalizing: false,
		ReduceMemoryUsage:             true,
		CloseOnShutdown:               true,
		Logger:                        q.fasthttpLog,
		ErrorHandler:                  q.refuse,
		HeaderReceived: func(h *fasthttp.RequestHeader) fasthttp.RequestConfig {
			persistLaterMinor(h)
			return fasthttp.RequestConfig{} // the server's limits
		},
		// MaxConnsPerIP stays 0: fasthttp would wrap each connection and
		// hide the *net.TCPConn the sendfile path needs; -max-conns-per-ip
		// is the request path's (admission).
	}
}

// refuse answers a request fasthttp could not read (handleParseError) and
// writes its access line, with as much of its request line as fasthttp
// parsed (the loops' layer logs the line as it arrived).
func (q *handler) refuse(ctx *fasthttp.RequestCtx, err error) {
	q.resp.handleParseError(ctx, err)
	var line []byte
	if h := &ctx.Request.Header; len(h.Method()) > 0 && len(h.RequestURI()) > 0 {
		line = append(append(append(append(append(line, h.Method()...), ' '), h.RequestURI()...), ' '), h.Protocol()...)
	}
	sent := len(ctx.Response.Body())
	if ctx.IsHead() {
		sent = 0
	}
	q.rec.refused(ctx, line, int64(sent))
}
