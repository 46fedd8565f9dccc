//go:build linux

package origin

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"github.com/valyala/fasthttp"

	"segorigin/internal/httpmsg"
	"segorigin/origin/clientaddr"
	"segorigin/origin/coldread"
	"segorigin/origin/conn"
	"segorigin/origin/wire"
	"segorigin/ranges"
)

// h1Server is the HTTP/1 layer every transport drives: the event loops
// (engine_loop_linux.go) and the stream transport of a goroutine per
// connection (engine_stream_linux.go) hand it the bytes a connection
// buffered (data), and it parses them with fasthttp's RequestHeader (its
// framing and smuggling rules, and the refusals of internal/httpmsg),
// reads past a request body, answers with the plan the handler makes
// (resolve, then the file steps: advance) as a wire.Response, and keeps the connection's
// rules: keep-alive and Connection, -max-requests-per-conn, 100 Continue,
// pipelining, the PROXY header of a trusted proxy, the lingering close
// after a refusal, the cold path's window gate, and the one accounting
// point for body paths. Work that may block on storage (a cache miss, a
// cold window) runs on a goroutine, and the connection resumes when it is
// done.
type h1Server struct {
	s    *handler
	ln   *conn.Listener // the gate's limits and PROXY rule (the loops); nil where the listener applies them itself
	reqs sync.Pool      // *h1Req
	// offloads counts the goroutines answering parked requests (each
	// ends when its plan is made, bounded by -cold-deadline and the
	// opens semaphore); shutdown waits for them.
	offloads sync.WaitGroup
}

// h1Conn is what the HTTP/1 layer needs of a connection, whichever
// transport carries it (*loop.Conn, *stream.Conn).
type h1Conn interface {
	// NetConn is the connection as fasthttp's RequestCtx sees it
	// (addresses; over TLS, its state).
	NetConn() net.Conn
	RemoteAddr() net.Addr
	State() any
	SetState(any)
	SetRemote(*net.TCPAddr)
	Grow(n int)
	WriteNow(p []byte) error
	Send(r *wire.Response)
	Park()
	Post(fn func())
	Continue()
	Abort(reset bool)
	Reset()
	LingerOnClose()
	Closed() bool
	Draining() bool
}

func (q *handler) newH1Server(gl *conn.Listener) *h1Server {
	ls := &h1Server{s: q, ln: gl}
	ls.reqs.New = func() any {
		r := &h1Req{ls: ls, br: bufio.NewReaderSize(nil, q.cfg.MaxHeaderBytes)}
		r.done, r.ready, r.rendered = r.finished, r.readyWindow, r.afterOffload
		return r
	}
	return ls
}

// h1ReadBuffer is the most a connection's read buffer grows to for a
// header on every transport: one byte more than the largest header, so
// that fasthttp's reader reports a longer one as too large (431) or its
// request-target too long (414). A body grows it further, up to its limit.
func (q *handler) h1ReadBuffer() int { return max(q.cfg.MaxHeaderBytes+1, 16<<10) }

// h1FirstBuffer is a connection's read buffer when a request begins: most
// requests fit, and one that does not grows it (data).
const h1FirstBuffer = 4 << 10

// h1Timeout is the error a request that took too long is answered with
// (408).
type h1Timeout struct{}

func (h1Timeout) Error() string { return "origin: timed out reading the request" }
func (h1Timeout) Timeout() bool { return true }

// timeout answers a request that did not arrive in time with 408.
func (ls *h1Server) timeout(c h1Conn, reading bool) {
	ls.dropPending(c)
	if !reading {
		return
	}
	r := ls.getReq(c)
	ls.parseError(r, h1Timeout{}, nil)
}

// h1ConnState is what the server keeps per connection: a few words, so
// an idle connection costs little more than its socket.
type h1ConnState struct {
	trusted      bool // the peer is a trusted proxy
	proxyPending bool // the first bytes may be a PROXY header
	continued    bool // 100 Continue sent for the request being read
	reqs         int  // requests read on the connection

	// pending is a request whose header is parsed and whose body is
	// still arriving (its header the first pendingHdr bytes, its chunked
	// body scanned as far as chunks says): the next bytes resume it
	// rather than parse the header again.
	pending    *h1Req
	pendingHdr int
	chunks     httpmsg.ChunkedProgress

	// parked is the request parked for a live wait (live_park_linux.go),
	// for dropParked when the connection closes first.
	parked *h1Parked
}

// h1Req is one request in progress: the parsed request and its answer,
// pooled. It belongs to the loop's thread except while an offload
// goroutine builds its plan (the connection is parked then).
type h1Req struct {
	ls      *h1Server
	c       h1Conn
	ctx     fasthttp.RequestCtx
	p       plan // its name is over scratch
	scratch pathBuf
	rd      bytes.Reader
	br      *bufio.Reader
	uri     fasthttp.URI
	head    []byte
	hdrLen  int    // bytes of head before any body
	mbuf    []byte // multipart assembly of an inlined file
	resp    wire.Response
	parts   [8]wire.Part
	via     string
	counted bool   // the response was counted by handleParseError: no finish
	refused bool   // refused before the handler: its access line is still to write
	line    []byte // a refused request's line as it arrived (the connection's buffer), until then
	first   bool   // no file window sent yet (beforeBody made the first one resident)
	loaded  int64  // offset of the window a cold reader just read: sent as it is (-1: none)
	grow    growStream

	done     func(int64, error)
	ready    func(*wire.Part, int64, int64) (int64, bool)
	rendered func()
}

// data parses one request from in and starts its answer: what every
// transport calls with the bytes a connection buffered.
func (ls *h1Server) data(c h1Conn, in []byte, full bool) int {
	st := c.State().(*h1ConnState)
	taken := 0
	if st.proxyPending {
		var ok bool
		if taken, ok = ls.takeProxy(c, st, in, full); !ok || taken == len(in) {
			return taken
		}
		in = in[taken:]
	}
	r, err := ls.readRequest(c, st, in, full)
	ctx := &r.ctx
	rest := r.rd.Len() + r.br.Buffered()
	switch {
	case errors.Is(err, errNeedMore):
		if st.pending != r {
			ls.putReq(r)
		}
		return taken
	case err != nil:
		refusedMethod(&ctx.Request.Header, in)
		ls.parseError(r, refusal(in, r.br.Size(), err), firstLine(in))
		return taken + len(in)
	}
	st.continued, st.chunks = false, httpmsg.ChunkedProgress{}
	if err := r.uri.Parse(ctx.Request.Header.Host(), ctx.Request.Header.RequestURI()); err != nil {
		ls.parseError(r, err, firstLine(in))
		return taken + len(in)
	}
	st.reqs++
	ls.serveRequest(r)
	return taken + len(in) - rest
}

// readRequest reads the request at the start of in: its header (parsed
// again only if it did not arrive whole before) and past its body.
// errNeedMore: more bytes are needed (st.pending holds the request when
// its header is parsed).
func (ls *h1Server) readRequest(c h1Conn, st *h1ConnState, in []byte, full bool) (*h1Req, error) {
	if r := st.pending; r != nil {
		st.pending = nil
		r.rd.Reset(in)
		r.br.Reset(&r.rd)
		if _, err := r.br.Discard(st.pendingHdr); err != nil {
			return r, fmt.Errorf("origin: the %d-byte header of a pending request: %w", st.pendingHdr, err)
		}
		return r, ls.readBody(r, st, in, st.pendingHdr, full)
	}
	r := ls.getReq(c)
	ctx := &r.ctx
	r.rd.Reset(in)
	r.br.Reset(&r.rd)
	err := ctx.Request.Header.Read(r.br)
	if err != nil && !errors.Is(err, io.EOF) && httpmsg.TidyTransferEncoding(headerBlock(in)) {
		// fasthttp compares a Transfer-Encoding value whole: a list with
		// empty elements (",chunked") is read again with them blanked
		// (RFC 9110 §5.6.1: they are ignored). Only after a refusal, so
		// a request that parses pays nothing for it.
		r.rd.Reset(in)
		r.br.Reset(&r.rd)
		ctx.Request.Header.Reset()
		err = ctx.Request.Header.Read(r.br)
	}
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
	case !errors.Is(err, io.EOF) && !errors.As(err, new(*fasthttp.ErrSmallBuffer)) && !bytes.Contains(in, crlfcrlf) &&
		(!full || len(in) < ls.s.h1ReadBuffer()) && refusedForCodingsOnly(in):
		// fasthttp refuses a Transfer-Encoding line as it arrives, but
		// the answer (501 for codings before chunked, 400 otherwise)
		// depends on the whole list, and on whether a later line is
		// refused for something else: it is decided once the header
		// has arrived, so it is the same however the bytes arrive.
		if full {
			c.Grow(min(2*len(in), ls.s.h1ReadBuffer()))
		}
		err = errNeedMore
	case errors.Is(err, io.EOF) && (!full || len(in) < ls.s.h1ReadBuffer()):
		// Only the buffer ends here (the reader over it says EOF): the
		// header is still arriving. A full buffer grows toward the
		// limit: a connection's starts at h1FirstBuffer, so a partial
		// request costs what has arrived, not -max-header-bytes.
		if full {
			c.Grow(min(2*len(in), ls.s.h1ReadBuffer()))
		}
		err = errNeedMore
	}
	return r, err
}

// takeProxy reads the PROXY header a trusted proxy sends first (the
// loops; the stream transport's listener reads it itself): the bytes it
// took, and false when the request cannot go on yet (the header is
// incomplete) or at all (c is closed).
func (ls *h1Server) takeProxy(c h1Conn, st *h1ConnState, in []byte, full bool) (int, bool) {
	n, remote, err := ls.ln.TakeProxy(st.trusted, c.RemoteAddr(), in)
	if errors.Is(err, clientaddr.ErrIncomplete) && !full {
		return 0, false
	}
	if err != nil {
		c.Abort(false)
		return 0, false
	}
	st.proxyPending = false
	if remote != nil {
		c.SetRemote(remote)
	}
	return n, true
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
	major, ok := httpmsg.RequestLineMajor(in)
	if !ok {
		// RFC 9112 §3: "Recipients of an invalid request-line SHOULD
		// respond with either a 400 (Bad Request) error"; fasthttp
		// refuses one ("GET /" with no version) as soon as it ends, so
		// what follows it must not change the answer either.
		return err
	}
	if major != 1 {
		// Refused for something else (the HTTP/2 preface's "*" target,
		// or a fault after a whole request line): 505 says why, whatever
		// else follows it, as soon as the line has arrived.
		return fmt.Errorf("%w (HTTP/%c): %w", errVersion, '0'+major, err)
	}
	head := refusedHeader(in, err)
	if te := httpmsg.FieldList(head, "Transfer-Encoding"); httpmsg.CodingsBeforeChunked(te) && refusedForCodingsOnly(endHeader(head)) {
		// fasthttp refuses every coding but chunked. RFC 9112 §6.1: "A
		// server that receives a request message with a transfer coding
		// it does not understand SHOULD respond with 501 (Not
		// Implemented)"; one that does not end in chunked stays 400
		// (§6.3). Its lines make one list (RFC 9110 §5.3).
		return fmt.Errorf("%w (%q): %w", errCodingNotImplemented, te, err)
	}
	return err
}

// refusedHeader is the header section a refusal may read: for a bare LF
// or CR, which is refused as soon as it arrives, the lines before the
// first line that holds either (the line whose CR arrived alone reads as
// the same line once its bare LF follows), so what follows the fault (a
// Transfer-Encoding line that would make it 501) must not change the
// answer of bytes that arrive together rather than apart; all of it
// otherwise.
func refusedHeader(in []byte, err error) []byte {
	block := headerBlock(in)
	if !errors.Is(err, errBareLF) && !errors.Is(err, errBareCR) {
		return block
	}
	at := len(block)
	for _, i := range [...]int{httpmsg.BareLF(block), httpmsg.BareCR(block)} {
		if i >= 0 {
			at = min(at, i)
		}
	}
	return block[:bytes.LastIndexByte(block[:at], '\n')+1]
}

// refusedForCodingsOnly reports whether head, refused by fasthttp, has
// a Transfer-Encoding field line and parses (or wants more) without it:
// its transfer codings alone refused it.
func refusedForCodingsOnly(head []byte) bool {
	masked, found := httpmsg.MaskField(head, "Transfer-Encoding")
	return found && !refuses(masked)
}

// endHeader is head as a whole header section, what a refusal judges:
// ended by an empty line, so that fasthttp reads its last field line as
// it does once another line begins (a name ending in a space is refused
// only then), whether or not more bytes came after it.
func endHeader(head []byte) []byte {
	switch {
	case bytes.HasSuffix(head, crlfcrlf):
		return head
	case bytes.HasSuffix(head, crlfcrlf[:2]):
		return append(head[:len(head):len(head)], crlfcrlf[:2]...)
	}
	return append(head[:len(head):len(head)], crlfcrlf...)
}

// refuses reports whether fasthttp refuses b as a request header for
// something other than its end not having arrived.
func refuses(b []byte) bool {
	var h fasthttp.RequestHeader
	err := h.Read(bufio.NewReaderSize(bytes.NewReader(b), len(b)+1))
	return err != nil && !errors.Is(err, io.EOF)
}

// refusedMethod sets a refused request's method as its request line
// names it, whether or not fasthttp's reader got as far as reading it
// (bytes that arrive together or apart must get the same answer): a HEAD
// gets its refusal without a body (RFC 9110 §9.3.2), anything else with.
func refusedMethod(h *fasthttp.RequestHeader, in []byte) {
	if bytes.HasPrefix(in, []byte("HEAD ")) {
		h.SetMethod(fasthttp.MethodHead)
	} else {
		h.SetMethod(fasthttp.MethodGet)
	}
}

// firstLine is the request line at the start of in, as it arrived: up to
// its line end (without it), or all of in when no line end has come.
func firstLine(in []byte) []byte {
	if i := bytes.IndexByte(in, '\n'); i >= 0 {
		in = in[:i]
	}
	return bytes.TrimSuffix(in, []byte("\r"))
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
func (ls *h1Server) readBody(r *h1Req, st *h1ConnState, in []byte, hdrLen int, full bool) error {
	req := &r.ctx.Request
	cl := req.Header.ContentLength()
	if cl > 0 {
		// fasthttp drops "identity": a Content-Length beside it would
		// have the layer wait for a body the request never framed.
		// (Without a body to wait for, checkMessage refuses it.)
		if err := checkTransferCoding(&req.Header); err != nil {
			return err
		}
	}
	var n int
	switch {
	case cl > maxRequestBody:
		// RFC 9110 §15.5.14: 413 "the request content is larger than
		// the server is willing or able to process"; refused before the
		// client sends it.
		return errBodyTooLarge
	case cl == -1:
		var err error
		n, st.chunks, err = httpmsg.ScanChunkedFrom(in[hdrLen:], st.chunks, maxRequestBody, maxChunkedEncoded)
		switch {
		case errors.Is(err, httpmsg.ErrBodyTooLarge):
			return errBodyTooLarge
		case errors.Is(err, httpmsg.ErrIncomplete):
			if full && len(in) >= hdrLen+maxChunkedEncoded {
				return errBodyTooLarge
			}
			// Room to grow, up to the limit and its framing.
			r.c.Grow(min(2*len(in), hdrLen+maxChunkedEncoded+2))
			return ls.waitBody(r, st, hdrLen)
		case err != nil:
			return err
		}
	case cl > 0:
		if len(in)-hdrLen < cl {
			r.c.Grow(hdrLen + cl)
			return ls.waitBody(r, st, hdrLen)
		}
		n = cl
	}
	if _, err := r.br.Discard(n); err != nil {
		return fmt.Errorf("origin: skipping a %d-byte request body: %w", n, err)
	}
	return nil
}

// waitBody: the body is still arriving. A client that waits for 100
// Continue before sending it is told to go on, once per request; the
// request waits in st.pending for the rest.
func (ls *h1Server) waitBody(r *h1Req, st *h1ConnState, hdrLen int) error {
	if r.ctx.Request.MayContinue() && !st.continued {
		st.continued = true
		if err := r.c.WriteNow(continueLine); err != nil {
			return err
		}
	}
	st.pending, st.pendingHdr = r, hdrLen
	return errNeedMore
}

// dropPending gives back a request that was waiting for its body when its
// connection timed out or closed.
func (ls *h1Server) dropPending(c h1Conn) {
	if st, ok := c.State().(*h1ConnState); ok && st.pending != nil {
		ls.putReq(st.pending)
		st.pending, st.chunks = nil, httpmsg.ChunkedProgress{}
	}
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

// serveRequest builds the plan on the loop; where a step would block it
// parks the connection and the plan is finished on a goroutine.
func (ls *h1Server) serveRequest(r *h1Req) {
	s := ls.s
	ctx := &r.ctx
	p := &r.p
	*p = plan{noBlock: true}
	var ok bool
	if p.name, p.g, ok = s.resolve(ctx, &p.rh, &r.scratch); !ok || !s.admit.holdClient(ctx, p) {
		p.kind = kindOther
		ls.render(r)
		return
	}
	s.files.advance(ctx, p)
	if p.live.waiting {
		ls.waitLive(r)
		return
	}
	if !p.wouldBlock {
		ls.render(r)
		return
	}
	// p.name aliases r.scratch, which r keeps until the answer is done.
	r.c.Park()
	ls.offloads.Add(1)
	go r.offload()
}

// offload finishes the plan where blocking is allowed, from the step that
// suspended, then hands it back to the connection's loop. Its owner is
// the h1Server (offloads); it ends when advance returns.
func (r *h1Req) offload() {
	defer r.ls.offloads.Done()
	r.p.noBlock = false
	r.ls.s.files.advance(&r.ctx, &r.p)
	r.c.Post(r.rendered)
}

// afterOffload runs on the loop: the plan made elsewhere is sent.
func (r *h1Req) afterOffload() {
	if r.p.live.waiting && !r.c.Closed() {
		r.ls.waitLive(r)
		return
	}
	if r.c.Closed() {
		if r.p.h != nil {
			r.p.h.Release()
			r.p.h = nil
		}
		r.ls.s.admit.releaseClient(&r.p)
		r.ls.s.rec.finish(&r.ctx, r.p.kind, 0, "")
		r.ls.putReq(r)
		return
	}
	r.ls.render(r)
	r.c.Continue()
}

// parseError answers a request that cannot be parsed (or did not arrive
// in time), as the fasthttp engine's ErrorHandler does, and closes. line
// is its request line as it arrived, for the access log (nil: none).
func (ls *h1Server) parseError(r *h1Req, err error, line []byte) {
	ls.s.resp.handleParseError(&r.ctx, err)
	r.counted, r.refused, r.line = true, true, line
	r.ctx.SetConnectionClose()
	// The rest of the request (a body, more pipelined requests) may
	// still be on its way: the close lingers so that it does not reset
	// the answer away.
	r.c.LingerOnClose()
	ls.render(r)
}

// render turns the plan into a wire.Response and starts it: the
// connection rules fasthttp's server applies (Connection: close, HTTP/1.0
// keep-alive, -max-requests-per-conn, the drain), the header rendered by
// fasthttp's ResponseHeader, and the body as memory or file parts.
func (ls *h1Server) render(r *h1Req) {
	s := ls.s
	ctx, p, c := &r.ctx, &r.p, r.c
	st := c.State().(*h1ConnState)
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
	pol := s.pol.of(ctx)
	resp.Rate, resp.RateAfter = pol.rate, pol.rateAfter // nginx's limit_rate, limit_rate_after
	if p.h == nil {
		ls.renderMemory(r)
		return
	}
	if p.grow {
		r.startGrowing() // a file streamed as it grows (grow_linux.go)
		return
	}
	hdr.SetContentLength(int(p.total))
	r.head = hdr.AppendBytes(r.head[:0])
	r.hdrLen = len(r.head)
	resp.Parts = append(resp.Parts, wire.Part{Mem: r.head})
	h := p.h
	if h.Bytes != nil {
		body := h.Bytes[p.spans[0].Start : p.spans[0].Start+p.spans[0].Length]
		if p.mp != nil {
			r.mbuf = assembleMultipart(r.mbuf[:0], p.mp, h.Bytes)
			body = r.mbuf
		}
		resp.Parts = append(resp.Parts, wire.Part{Mem: body})
		r.via = "inline"
		c.Send(resp)
		return
	}
	fd := int(h.Fd())
	if p.mp == nil {
		resp.Parts = append(resp.Parts, wire.Part{Fd: fd, Off: p.spans[0].Start, Len: p.spans[0].Length})
	} else {
		for i := range p.mp.Parts() {
			sp := p.mp.Span(i)
			resp.Parts = append(resp.Parts, wire.Part{Mem: p.mp.PartHeader(i)}, wire.Part{Fd: fd, Off: sp.Start, Len: sp.Length})
		}
		resp.Parts = append(resp.Parts, wire.Part{Mem: p.mp.Trailer()})
	}
	if s.cold != nil {
		resp.Ready, r.first, r.loaded = r.ready, true, -1
	}
	resp.NoSendfile = !sendfileOn(s)
	resp.KernelTLS = ctx.IsTLS() // HTTPS on the loops is kTLS; the stream transport sets its own
	r.via = "sendfile"
	c.Send(resp)
}

// renderMemory sends an answer whose body, if any, is in ctx.Response:
// the header and body in one part.
func (ls *h1Server) renderMemory(r *h1Req) {
	ctx, resp := &r.ctx, &r.resp
	hdr := &ctx.Response.Header
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
	resp.Parts = append(resp.Parts, wire.Part{Mem: r.head})
	r.via = ""
	switch {
	case !r.counted:
		// Recorded before it is sent, as the fasthttp engine records
		// a response fasthttp writes from memory: its line is in the
		// access log by the time the client has read it.
		ls.s.rec.finish(ctx, r.p.kind, int64(logged), "")
		r.counted = true
	case r.refused:
		ls.s.rec.refused(ctx, r.line, int64(logged))
		r.refused, r.line = false, nil // line is the connection's buffer
	}
	r.c.Send(resp)
}

// readyWindow is the cold path's check before each sendfile window: the
// first window of the body was made resident (its first 256 KiB at least)
// by beforeBody; a later one that is not resident is read by the cold
// pool on a goroutine, and the connection resumes when it is in.
func (r *h1Req) readyWindow(_ *wire.Part, off, n int64) (int64, bool) {
	c := r.c
	h := r.p.h
	if r.first {
		r.first = false
		if n <= coldFirstWindow {
			// beforeBody checked it: no second system call here, nor in
			// the transport when it found the window resident.
			r.resp.Resident = r.p.resident
			return n, true
		}
		if ok, err := coldread.Resident(h.Fd(), off, n, h.Size); err != nil || !ok {
			return coldFirstWindow, true
		}
		r.resp.Resident = true
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
		r.resp.Resident = true
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
			_, err = s.cold.ensureResident(name, kind, own, ranges.Span{Start: off, Length: n})
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
func (r *h1Req) finished(sent int64, err error) {
	s := r.ls.s
	body := max(sent-int64(r.hdrLen), 0)
	if h := r.p.h; h != nil {
		e := bodyEnd{via: r.via, sent: body, want: r.p.total, size: h.Size,
			truncated: errors.Is(err, wire.ErrTruncated), aborted: err != nil}
		switch {
		case r.via == "inline":
		case r.resp.Copied:
			e.via, r.via = "copy", "copy"
		case r.resp.KernelTLS:
			e.via, r.via, e.ktls, e.sendfiled = "ktls", "ktls", true, body
		default:
			e.sendfiled = body
		}
		s.countBody(e)
		h.Release()
		r.p.h = nil
	}
	s.admit.releaseClient(&r.p)
	if !r.counted {
		s.rec.finish(&r.ctx, r.p.kind, body, r.via)
	}
	if r.endGrowing() {
		r.ls.putReq(r)
	}
}

func (ls *h1Server) getReq(c h1Conn) *h1Req {
	r := ls.reqs.Get().(*h1Req)
	r.c = c
	ctx := &r.ctx
	ctx.Init2(c.NetConn(), ls.s.fasthttpLog, false)
	ctx.Request.Reset()
	ctx.Response.Reset()
	ctx.Response.Header.SetNoDefaultContentType(true)
	return r
}

// putReq returns r to the pool, keeping no reference to the request.
func (ls *h1Server) putReq(r *h1Req) {
	r.ctx.ResetUserValues()
	r.ctx.Request.Reset()
	r.ctx.Response.Reset()
	r.scratch.release()
	r.c, r.counted, r.via = nil, false, ""
	r.refused, r.line = false, nil
	r.p = plan{}
	r.resp.Reset()
	r.rd.Reset(nil)
	r.br.Reset(nil)
	if cap(r.mbuf) > maxPooledMultipart {
		r.mbuf = nil
	}
	ls.reqs.Put(r)
}
