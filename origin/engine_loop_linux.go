package origin

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"sync"

	"github.com/valyala/fasthttp"

	"segorigin/internal/httpmsg"
	"segorigin/origin/clientaddr"
	"segorigin/origin/coldread"
	"segorigin/origin/conn"
	"segorigin/origin/loop"
	"segorigin/ranges"
)

// loopAvailable: this platform has the event-loop engine.
const loopAvailable = true

// defaultEngine serves plain HTTP unless -engine says otherwise.
const defaultEngine = EngineLoop

// loopServer serves one plain-HTTP listener with the event-loop engine
// (origin/loop): requests are parsed by fasthttp's RequestHeader, answered
// by the same plan the fasthttp engine renders (resolve, serveName), and
// the plan becomes a loop.Response: the header and an inline body in one
// writev, a file's spans by sendfile. Work that may block on storage (a
// cache miss, a cold window) runs on a goroutine, and the connection
// resumes on its loop when it is done.
type loopServer struct {
	s    *Server
	ln   *conn.Listener // the gate's limits and PROXY rule; its Accept is not used
	eng  *loop.Engine
	reqs sync.Pool // *loopReq
	// offloads counts the goroutines answering parked requests (each
	// ends when its plan is made, bounded by -cold-deadline and the
	// opens semaphore); Run waits for them.
	offloads sync.WaitGroup
}

// loopConnState is what the server keeps per connection: a few words, so
// an idle connection costs little more than its socket.
type loopConnState struct {
	key          string // per-IP key in the gate (Release)
	trusted      bool   // the peer is a trusted proxy
	proxyPending bool   // the first bytes may be a PROXY header
	continued    bool   // 100 Continue sent for the request being read
	reqs         int    // requests read on the connection
}

// loopReq is one request in progress: the parsed request and its answer,
// pooled. It belongs to the loop's thread except while an offload
// goroutine builds its plan (the connection is parked then).
type loopReq struct {
	ls      *loopServer
	c       *loop.Conn
	ctx     fasthttp.RequestCtx
	p       plan
	rh      reqHeaders
	g       grant
	name    reqName // over scratch
	scratch pathBuf
	rd      bytes.Reader
	br      *bufio.Reader
	uri     fasthttp.URI
	head    []byte
	hdrLen  int    // bytes of head before any body
	mbuf    []byte // multipart assembly of an inlined file
	resp    loop.Response
	parts   [8]loop.Part
	via     string
	counted bool  // the response was counted by handleParseError: no finish
	first   bool  // no file window sent yet (beforeBody made the first one resident)
	loaded  int64 // offset of the window a cold reader just read: sent as it is (-1: none)

	done     func(*loop.Conn, int64, error)
	ready    func(*loop.Conn, *loop.Part, int64, int64) (int64, bool)
	rendered func()
}

func (s *Server) newLoopServer(gl *conn.Listener) (*loopServer, error) {
	ls := &loopServer{s: s, ln: gl}
	eng, err := loop.New(loop.Config{
		Loops: s.cfg.Loops,
		// One byte more than the largest header: fasthttp's reader then
		// reports a longer header as too large (431), as on the other
		// engine.
		ReadBuffer:   max(s.cfg.MaxHeaderBytes+1, 16<<10),
		ReadTimeout:  s.cfg.ReadTimeout,
		IdleTimeout:  s.cfg.IdleTimeout,
		WriteTimeout: s.cfg.WriteTimeout,
		Window:       coldWindow,
		Handler:      ls,
		Logger:       s.log,
		Stats:        &s.stats.Loop,
	})
	if err != nil {
		return nil, err
	}
	ls.eng = eng
	ls.reqs.New = func() any {
		r := &loopReq{ls: ls, br: bufio.NewReaderSize(nil, s.cfg.MaxHeaderBytes)}
		r.done, r.ready, r.rendered = r.finished, r.readyWindow, r.afterOffload
		return r
	}
	return ls, nil
}

func (ls *loopServer) serve(ln net.Listener) error {
	tl, ok := ln.(*net.TCPListener)
	if !ok {
		return errors.New("origin: the loop engine serves TCP listeners only")
	}
	return ls.eng.Serve(tl)
}

// shutdown drains the engine (idle connections closed at once, the others
// after their response, all by ctx's end) and waits for the goroutines
// that were building plans.
func (ls *loopServer) shutdown(ctx context.Context) error {
	err := ls.eng.Shutdown(ctx)
	ls.offloads.Wait()
	return err
}

// Accept admits a connection under the gate's limits.
func (ls *loopServer) Accept(c *loop.Conn) bool {
	var peer netip.Addr
	if a, ok := c.RemoteAddr().(*net.TCPAddr); ok {
		peer, _ = netip.AddrFromSlice(a.IP)
		peer = peer.Unmap()
	}
	key, trusted, ok := ls.ln.Admit(peer)
	if !ok {
		c.Reset()
		return false
	}
	c.Value = &loopConnState{key: key, trusted: trusted, proxyPending: ls.ln.ProxyExpected()}
	return true
}

// Closed gives the connection's place back to the gate.
func (ls *loopServer) Closed(c *loop.Conn) {
	if st, ok := c.Value.(*loopConnState); ok {
		ls.ln.Release(st.key)
	}
}

// AcceptError: accept ran out of descriptors.
func (ls *loopServer) AcceptError(err error) { ls.ln.OnFDPressure(err) }

// SendfileRefused: the file system refused sendfile; the loop copies.
func (ls *loopServer) SendfileRefused(*loop.Conn) {
	ls.s.stats.Transport.SendfileFallbacks.Add(1)
}

// loopTimeout is the error a request that took too long is answered
// with (408, as fasthttp answers its read deadline).
type loopTimeout struct{}

func (loopTimeout) Error() string { return "origin: timed out reading the request" }
func (loopTimeout) Timeout() bool { return true }

// Timeout answers a request that did not arrive in time with 408.
func (ls *loopServer) Timeout(c *loop.Conn, reading bool) {
	if !reading {
		return
	}
	r := ls.getReq(c)
	ls.parseError(r, loopTimeout{})
}

// Data parses one request from in and starts its answer.
func (ls *loopServer) Data(c *loop.Conn, in []byte, full bool) int {
	st := c.Value.(*loopConnState)
	taken := 0
	if st.proxyPending {
		n, remote, err := ls.ln.TakeProxy(st.trusted, c.RemoteAddr(), &st.key, in)
		if errors.Is(err, clientaddr.ErrIncomplete) && !full {
			return 0
		}
		if err != nil {
			c.Abort(false)
			return 0
		}
		st.proxyPending = false
		if remote != nil {
			c.SetRemote(remote)
		}
		taken, in = n, in[n:]
		if len(in) == 0 {
			return taken
		}
	}
	r := ls.getReq(c)
	ctx := &r.ctx
	r.rd.Reset(in)
	r.br.Reset(&r.rd)
	err := ctx.Request.Header.Read(r.br)
	switch {
	case err == nil:
		hdrLen := len(in) - r.rd.Len() - r.br.Buffered()
		if httpmsg.HasBareLF(in[:hdrLen]) {
			err = errBareLF
			break
		}
		persistLaterMinor(&ctx.Request.Header)
		err = ls.readBody(r, st, in, hdrLen, full)
	case headerHasBareLF(in):
		// fasthttp waits for a CRLFCRLF that such a client never sends
		// (or, with the buffer full, calls the header too large): the
		// request is refused for what it is, now rather than at the
		// read timeout.
		err = errBareLF
	case httpmsg.HasBareCR(headerBlock(in)):
		// The same for a CR that ends no line.
		err = errBareCR
	case errors.Is(err, io.EOF) && !full:
		// Only the buffer ends here (the reader over it says EOF): the
		// header is still arriving.
		err = errNeedMore
	}
	rest := r.rd.Len() + r.br.Buffered()
	switch {
	case errors.Is(err, errNeedMore):
		ls.putReq(r)
		return taken
	case err != nil:
		ls.parseError(r, refusal(in, r.br.Size(), err))
		return taken + len(in)
	}
	st.continued = false
	if err := r.uri.Parse(ctx.Request.Header.Host(), ctx.Request.Header.RequestURI()); err != nil {
		ls.parseError(r, err)
		return taken + len(in)
	}
	st.reqs++
	ls.serveRequest(r)
	return taken + len(in) - rest
}

// refusal names what is wrong with a request that cannot be parsed, for
// the answer to say it: a header that filled the buffer before its
// request line ended (within limit, the header buffer) is a
// request-target too long (414, RFC 9112 §3), not
// a header too large; a request line of another major version is 505.
func refusal(in []byte, limit int, err error) error {
	var small *fasthttp.ErrSmallBuffer
	if errors.As(err, &small) && bytes.IndexByte(in[:min(len(in), limit)], '\n') < 0 {
		return fmt.Errorf("%w (%d bytes without a line end)", errTargetTooLong, len(in))
	}
	if major, ok := httpmsg.RequestLineMajor(in); ok && major != 1 {
		// Refused for something else before the version was read
		// (the HTTP/2 preface's "*" target): 505 says why.
		return fmt.Errorf("%w (HTTP/%c): %w", errVersion, '0'+major, err)
	}
	return err
}

// headerHasBareLF reports whether the header section at the start of in
// ends a line in a bare LF.
func headerHasBareLF(in []byte) bool { return httpmsg.HasBareLF(headerBlock(in)) }

// headerBlock is the header section at the start of in: up to its
// CRLFCRLF, or all of in without one.
func headerBlock(in []byte) []byte {
	if i := bytes.Index(in, crlfcrlf); i >= 0 {
		return in[:i+len(crlfcrlf)]
	}
	return in
}

var crlfcrlf = []byte("\r\n\r\n")

// errNeedMore: the buffer holds part of a request.
var errNeedMore = errors.New("origin: request incomplete")

// readBody gets past the request's body, which an origin that serves
// files never uses: in holds the request, its header the first hdrLen
// bytes. A body whose end is not buffered yet makes room for itself and
// waits (errNeedMore); 100 Continue goes first when the client waits for
// it (RFC 9110 §10.1.1), and never for a body that would be refused. The
// framing is decided here, on the bytes buffered, so a body split across
// reads anywhere reads as it would whole.
func (ls *loopServer) readBody(r *loopReq, st *loopConnState, in []byte, hdrLen int, full bool) error {
	req := &r.ctx.Request
	if err := checkTransferCoding(&req.Header); err != nil {
		// With "identity" dropped, a Content-Length beside it would
		// have the loop wait for a body the request never framed.
		return err
	}
	cl := req.Header.ContentLength()
	var n int
	switch {
	case cl > maxRequestBody:
		// RFC 9110 §15.5.14: 413 "the request content is larger than
		// the server is willing or able to process"; refused before the
		// client sends it.
		return errBodyTooLarge
	case cl == -1:
		var err error
		n, err = httpmsg.ScanChunked(in[hdrLen:], maxRequestBody, maxChunkedEncoded)
		switch {
		case errors.Is(err, httpmsg.ErrBodyTooLarge):
			return errBodyTooLarge
		case errors.Is(err, httpmsg.ErrIncomplete):
			if full && len(in) >= hdrLen+maxChunkedEncoded {
				return errBodyTooLarge
			}
			// Room to grow, up to the limit and its framing.
			r.c.Grow(min(2*len(in), hdrLen+maxChunkedEncoded+2))
			return ls.waitBody(r, st)
		case err != nil:
			return err
		}
	case cl > 0:
		if len(in)-hdrLen < cl {
			r.c.Grow(hdrLen + cl)
			return ls.waitBody(r, st)
		}
		n = cl
	}
	if _, err := r.br.Discard(n); err != nil {
		return fmt.Errorf("origin: skipping a %d-byte request body: %w", n, err)
	}
	return nil
}

// waitBody: the body is still arriving. A client that waits for 100
// Continue before sending it is told to go on, once per request.
func (ls *loopServer) waitBody(r *loopReq, st *loopConnState) error {
	if r.ctx.Request.MayContinue() && !st.continued {
		st.continued = true
		if err := r.c.WriteNow(continueLine); err != nil {
			return err
		}
	}
	return errNeedMore
}

// maxRequestBody is the largest request body read (and discarded): the
// fasthttp engine's MaxRequestBodySize. maxChunkedEncoded bounds the
// same body chunked, its chunk-size lines, extensions and trailers
// included.
const (
	maxRequestBody    = 64 << 10
	maxChunkedEncoded = 2*maxRequestBody + 8<<10
)

var continueLine = []byte("HTTP/1.1 100 Continue\r\n\r\n")

// serveRequest builds the plan on the loop; where that would block it
// parks the connection and finishes on a goroutine.
func (ls *loopServer) serveRequest(r *loopReq) {
	s := ls.s
	ctx := &r.ctx
	p := &r.p
	*p = plan{noBlock: true}
	r.rh = reqHeaders{}
	name, g, ok := s.resolve(ctx, &r.rh, &r.scratch)
	if !ok {
		p.kind = kindOther
		ls.render(r)
		return
	}
	s.serveName(ctx, p, name, &r.rh, g)
	if !p.wouldBlock {
		ls.render(r)
		return
	}
	// name aliases r.scratch, which r keeps until the answer is done.
	r.name, r.g = name, g
	r.c.Park()
	ls.offloads.Add(1)
	go r.offload()
}

// offload makes the plan where blocking is allowed, then hands it back to
// the connection's loop. Its owner is the loopServer (offloads); it ends
// when serveName returns.
func (r *loopReq) offload() {
	defer r.ls.offloads.Done()
	r.p.noBlock, r.p.wouldBlock = false, false
	r.ls.s.serveName(&r.ctx, &r.p, r.name, &r.rh, r.g)
	r.c.Post(r.rendered)
}

// afterOffload runs on the loop: the plan made elsewhere is sent.
func (r *loopReq) afterOffload() {
	if r.c.Closed() {
		if r.p.h != nil {
			r.p.h.Release()
			r.p.h = nil
		}
		r.ls.s.finish(&r.ctx, r.p.kind, 0, "")
		r.ls.putReq(r)
		return
	}
	r.ls.render(r)
	r.c.Continue()
}

// parseError answers a request that cannot be parsed (or did not arrive
// in time), as the fasthttp engine's ErrorHandler does, and closes.
func (ls *loopServer) parseError(r *loopReq, err error) {
	ls.s.handleParseError(&r.ctx, err)
	r.counted = true
	r.ctx.SetConnectionClose()
	// The rest of the request (a body, more pipelined requests) may
	// still be on its way: the close lingers so that it does not reset
	// the answer away.
	r.c.LingerOnClose()
	ls.render(r)
}

// render turns the plan into a loop.Response and starts it: the
// connection rules fasthttp's server applies (Connection: close, HTTP/1.0
// keep-alive, -max-requests-per-conn, the drain), the header rendered by
// fasthttp's ResponseHeader, and the body as memory or file parts.
func (ls *loopServer) render(r *loopReq) {
	s := ls.s
	ctx, p, c := &r.ctx, &r.p, r.c
	st := c.Value.(*loopConnState)
	hdr := &ctx.Response.Header
	closeConn := ctx.Request.Header.ConnectionClose() || ctx.Response.ConnectionClose() || c.Draining() ||
		(s.cfg.MaxRequestsPerConn > 0 && st.reqs >= s.cfg.MaxRequestsPerConn)
	if closeConn {
		hdr.SetConnectionClose()
	} else if !ctx.Request.Header.IsHTTP11() {
		hdr.Set("Connection", "keep-alive")
	}
	if s.cfg.ServerName != "" && len(hdr.Server()) == 0 {
		hdr.SetServer(s.cfg.ServerName)
	}
	resp := &r.resp
	resp.Reset()
	resp.Parts = r.parts[:0]
	resp.Close, resp.Done = closeConn, r.done
	if p.h == nil {
		body := ctx.Response.Body()
		code := ctx.Response.StatusCode()
		send := !ctx.IsHead() && code >= 200 && code != fasthttp.StatusNoContent && code != fasthttp.StatusNotModified
		if send || len(body) > 0 {
			hdr.SetContentLength(len(body))
		}
		r.head = hdr.AppendBytes(r.head[:0])
		r.hdrLen = len(r.head)
		logged := 0
		if send {
			r.head = append(r.head, body...)
			logged = len(body)
		}
		resp.Parts = append(resp.Parts, loop.Part{Mem: r.head})
		r.via = ""
		if !r.counted {
			// Recorded before it is sent, as the fasthttp engine records
			// a response fasthttp writes from memory: its line is in the
			// access log by the time the client has read it.
			s.finish(ctx, p.kind, int64(logged), "")
			r.counted = true
		}
		c.Send(resp)
		return
	}
	hdr.SetContentLength(int(p.total))
	r.head = hdr.AppendBytes(r.head[:0])
	r.hdrLen = len(r.head)
	resp.Parts = append(resp.Parts, loop.Part{Mem: r.head})
	h := p.h
	if h.Bytes != nil {
		body := h.Bytes[p.spans[0].Start : p.spans[0].Start+p.spans[0].Length]
		if p.mp != nil {
			r.mbuf = assembleMultipart(r.mbuf[:0], p.mp, h.Bytes)
			body = r.mbuf
		}
		resp.Parts = append(resp.Parts, loop.Part{Mem: body})
		r.via = "inline"
		c.Send(resp)
		return
	}
	fd := int(h.Fd())
	if p.mp == nil {
		resp.Parts = append(resp.Parts, loop.Part{Fd: fd, Off: p.spans[0].Start, Len: p.spans[0].Length})
	} else {
		for i := range p.mp.Parts() {
			sp := p.mp.Span(i)
			resp.Parts = append(resp.Parts, loop.Part{Mem: p.mp.PartHeader(i)}, loop.Part{Fd: fd, Off: sp.Start, Len: sp.Length})
		}
		resp.Parts = append(resp.Parts, loop.Part{Mem: p.mp.Trailer()})
	}
	if s.cold != nil {
		resp.Ready, r.first, r.loaded = r.ready, true, -1
	}
	resp.NoSendfile = !sendfileOn(s)
	r.via = "sendfile"
	c.Send(resp)
}

// readyWindow is the cold path's check before each sendfile window: the
// first window of the body was made resident (its first 256 KiB at least)
// by beforeBody; a later one that is not resident is read by the cold
// pool on a goroutine, and the connection resumes when it is in.
func (r *loopReq) readyWindow(c *loop.Conn, _ *loop.Part, off, n int64) (int64, bool) {
	h := r.p.h
	if r.first {
		r.first = false
		if n <= coldFirstWindow {
			return n, true // beforeBody checked it: no second system call
		}
		if ok, err := coldread.Resident(h.Fd(), off, n, h.Size); err != nil || !ok {
			return coldFirstWindow, true
		}
		return n, true
	}
	if off == r.loaded {
		// Read by the pool just now: sent whether or not it is still
		// resident (evicted at once, counted StillCold), as on fasthttp.
		r.loaded = -1
		return n, true
	}
	ok, err := coldread.Resident(h.Fd(), off, n, h.Size)
	if err == nil && ok {
		return n, true
	}
	s := r.ls.s
	name, kind := h.Name, r.p.kind
	r.ls.offloads.Add(1)
	// The goroutine holds a reference of its own: if the connection
	// closes meanwhile, its response (and r) is released and reused.
	go func() {
		defer r.ls.offloads.Done()
		own, err := s.cache.Acquire(name)
		if err == nil {
			_, err = s.ensureResident(name, kind, own, ranges.Span{Start: off, Length: n})
			own.Release()
		}
		if err != nil {
			s.stats.Cold.Aborted.Add(1)
			c.Post(func() { c.Abort(false) })
			return
		}
		c.Post(func() {
			if !c.Closed() && r.c == c {
				r.loaded = off
				c.Continue()
			}
		})
	}()
	return 0, false
}

// finished runs on the loop when the response has left (or failed): it
// counts the body under its path, releases the file and records the
// response.
func (r *loopReq) finished(_ *loop.Conn, sent int64, err error) {
	s := r.ls.s
	body := max(sent-int64(r.hdrLen), 0)
	if h := r.p.h; h != nil {
		e := bodyEnd{via: r.via, sent: body, want: r.p.total, size: h.Size,
			truncated: errors.Is(err, loop.ErrTruncated), aborted: err != nil}
		switch {
		case r.via == "inline":
		case r.resp.Copied():
			e.via, r.via = "copy", "copy"
		default:
			e.sendfiled = body
		}
		s.countBody(e)
		h.Release()
		r.p.h = nil
	}
	if !r.counted {
		s.finish(&r.ctx, r.p.kind, body, r.via)
	}
	r.ls.putReq(r)
}

func (ls *loopServer) getReq(c *loop.Conn) *loopReq {
	r := ls.reqs.Get().(*loopReq)
	r.c = c
	ctx := &r.ctx
	ctx.Init2(c, fasthttpLogger{ls.s}, false)
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Response.Header.SetNoDefaultContentType(true)
	return r
}

// putReq returns r to the pool, keeping no reference to the request.
func (ls *loopServer) putReq(r *loopReq) {
	r.ctx.ResetUserValues()
	r.ctx.Request.Reset()
	r.ctx.Response.Reset()
	r.scratch.release()
	r.c, r.name, r.g, r.counted, r.via = nil, reqName{}, grant{}, false, ""
	r.p = plan{}
	r.resp.Reset()
	r.rd.Reset(nil)
	r.br.Reset(nil)
	if cap(r.mbuf) > maxPooledMultipart {
		r.mbuf = nil
	}
	ls.reqs.Put(r)
}
