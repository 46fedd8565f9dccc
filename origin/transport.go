package origin

import (
	"errors"
	"io"
	"net"
	"net/netip"

	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/conn"
	"segorigin/ranges"
)

// copyBufSize is the userspace copy path's buffer: large enough to
// amortise the pread+write pair on plain TCP.
const copyBufSize = 64 << 10

// bodyStream is a response body: spans of one open file, alone or framed as
// multipart/byteranges. fasthttp writes the status line and headers, flushes
// them (ImmediateHeaderFlush), then calls WriteTo, which sends the body
// straight to the connection through the transport; it always calls Close,
// which releases the file (for HEAD and on errors too).
//
// File descriptor ownership: the handler acquires h from the cache and hands
// it to the stream; from then on only Close releases it.
type bodyStream struct {
	srv   *handler
	conn  net.Conn
	name  string // cache key of h, for the cold-read path
	h     *cache.Handle
	spans []ranges.Span // the spans, in order; one unless mp != nil
	mp    *ranges.Multipart
	total int64 // Content-Length: every byte WriteTo must send

	// inline is the whole body in memory, for a file the cache inlined: a
	// slice of h.Bytes, or the multipart body assembled in mbuf. WriteTo
	// writes it into fasthttp's buffer behind the header.
	inline []byte
	mbuf   []byte // multipart assembly buffer, kept with the pooled stream

	sf   sendfileWriter // plain TCP and kTLS path (reused: no allocation per response)
	cp   copyWriter     // userspace path
	ktls bool           // sf serves a kTLS socket: count under KTLS

	// The client's count against -max-conns-per-ip, given back by Close.
	client netip.Addr
	holds  bool

	// For the access log and latency, recorded by Close.
	ctx  *fasthttp.RequestCtx
	kind kind
	sent int64  // bytes WriteTo sent
	via  string // body path that sent them
}

var _ fasthttp.BodyWriterTo = (*bodyStream)(nil)

// attachBody hands the plan's file and spans to a pooled body stream and
// sets it as the response body: the fasthttp engine's rendering of a plan.
func (q *handler) attachBody(ctx *fasthttp.RequestCtx, p *plan) {
	h, total := p.h, p.total
	bs := q.streamPool.Get().(*bodyStream)
	bs.srv, bs.conn, bs.name, bs.h, bs.mp, bs.total = q, ctx.Conn(), h.Name, h, p.mp, total // h.Name: the caller's name is reused after route
	bs.ctx, bs.kind, bs.sent, bs.via = ctx, p.kind, 0, ""
	bs.client, bs.holds = p.client, p.holds
	p.holds = false

	bs.spans = append(bs.spans[:0], p.spans...)
	if h.Bytes != nil {
		bs.attachInline(ctx, total)
		return
	}
	ctx.Response.ImmediateHeaderFlush = true
	ctx.Response.SetBodyStream(bs, int(total))
}

// attachInline prepares a body the cache holds in memory: WriteTo puts it
// into fasthttp's buffer after the header, which fasthttp flushes once.
func (b *bodyStream) attachInline(ctx *fasthttp.RequestCtx, total int64) {
	b.inline = b.h.Bytes[b.spans[0].Start : b.spans[0].Start+b.spans[0].Length]
	if b.mp != nil {
		b.mbuf = assembleMultipart(b.mbuf[:0], b.mp, b.h.Bytes)
		b.inline = b.mbuf
	}
	ctx.Response.SetBodyStream(b, int(total))
}

// assembleMultipart appends to buf the multipart/byteranges body mp frames
// over data (an inlined file): part headers, spans and trailer, exactly
// mp.Len() bytes.
func assembleMultipart(buf []byte, mp *ranges.Multipart, data []byte) []byte {
	for i := range mp.Parts() {
		sp := mp.Span(i)
		buf = append(buf, mp.PartHeader(i)...)
		buf = append(buf, data[sp.Start:sp.Start+sp.Length]...)
	}
	return append(buf, mp.Trailer()...)
}

// maxPooledMultipart bounds the assembly buffer a pooled stream keeps.
const maxPooledMultipart = 256 << 10

// writeInline writes an inline body to fasthttp's writer w, behind the
// header.
func (b *bodyStream) writeInline(w io.Writer) (int64, error) {
	n, err := w.Write(b.inline)
	return int64(n), err
}

// SupportsBodyWriteTo tells fasthttp that WriteTo may replace Read.
func (b *bodyStream) SupportsBodyWriteTo() bool { return true }

// WriteTo sends the whole body to the connection. The writer fasthttp
// passes is its buffered writer, already flushed; the body bypasses it so
// that file bytes never pass through user space on the sendfile path.
func (b *bodyStream) WriteTo(fw io.Writer) (int64, error) {
	if b.inline != nil {
		n, err := b.writeInline(fw)
		b.accountInline(n, err)
		if err == nil && n != b.total {
			err = io.ErrShortWrite
		}
		return n, err
	}
	var w bodyWriter = &b.cp
	b.cp.reset(b.srv, b.conn)
	b.ktls = false
	if c, ok := b.conn.(*conn.TCP); ok && sendfileOn(b.srv) {
		b.sf.reset(b.srv, c, &b.cp)
		w = &b.sf
	} else if c := conn.KernelTLS(b.conn); c != nil && sendfileOn(b.srv) {
		// HTTPS whose records the kernel seals: plaintext framing and
		// sendfile spans on the socket, as on plain TCP.
		b.sf.reset(b.srv, c, &b.cp)
		w, b.ktls = &b.sf, true
	}
	n, err := b.send(w)
	b.account(n, err)
	if err == nil && n != b.total {
		err = io.ErrShortWrite // cannot happen: the spans add up to total
	}
	return n, err
}

// bodyWriter is one body path. framing writes bytes from memory (multipart
// part headers, with more set, and the trailer); span sends a span of the
// file.
type bodyWriter interface {
	framing(p []byte, more bool) (int64, error)
	span(h *cache.Handle, sp ranges.Span) (int64, error)
}

func (b *bodyStream) send(w bodyWriter) (int64, error) {
	if b.mp == nil {
		return b.sendSpan(w, b.spans[0], true)
	}
	var n int64
	for i := range b.mp.Parts() {
		k, err := w.framing(b.mp.PartHeader(i), true)
		n += k
		if err != nil {
			return n, err
		}
		k, err = b.sendSpan(w, b.mp.Span(i), i == 0)
		n += k
		if err != nil {
			return n, err
		}
	}
	k, err := w.framing(b.mp.Trailer(), false)
	return n + k, err
}

// accountInline counts an inline body.
func (b *bodyStream) accountInline(n int64, err error) {
	b.sent, b.via = n, "inline"
	b.srv.countBody(bodyEnd{via: b.via, sent: n, aborted: err != nil})
}

// account counts the response under the path that sent its bytes.
func (b *bodyStream) account(n int64, err error) {
	b.sent = n
	switch {
	case b.sf.used && n == b.sf.sent && b.ktls:
		b.via = "ktls"
	case b.sf.used && n == b.sf.sent:
		b.via = "sendfile"
	default:
		b.via = "copy"
	}
	b.srv.countBody(bodyEnd{via: b.via, ktls: b.ktls, sent: n, sendfiled: b.sf.sent, want: b.total, size: b.h.Size,
		truncated: errors.Is(err, conn.ErrTruncated), aborted: err != nil})
}

// bodyEnd is how a file body ended, as an engine saw it, for countBody.
type bodyEnd struct {
	via       string // the path that sent it: "sendfile", "ktls", "inline", or "copy" (also after sendfile fell back)
	ktls      bool   // the socket is kTLS: what sendfile sent counts under "ktls"
	sent      int64  // body bytes sent
	sendfiled int64  // of those, the bytes sendfile sent
	want      int64  // body bytes announced
	size      int64  // the file's size at open
	truncated bool   // the file shrank while being sent
	aborted   bool   // the send failed (truncated or not)
}

// countBody counts a file body under its path, its bytes under the paths
// that sent them, and how it ended: the one place both engines count a
// body.
func (q *handler) countBody(e bodyEnd) {
	t := &q.stats.Transport
	sfResponses, sfBytes := &t.SendfileResponses, &t.SendfileBytes
	if e.ktls {
		sfResponses, sfBytes = &t.KTLSResponses, &t.KTLSBytes
	}
	switch e.via {
	case "inline":
		t.InlineResponses.Add(1)
		t.InlineBytes.Add(e.sent)
	case "copy":
		t.CopyResponses.Add(1)
	default:
		sfResponses.Add(1)
	}
	if e.via != "inline" {
		sfBytes.Add(e.sendfiled)
		t.CopyBytes.Add(e.sent - e.sendfiled)
	}
	switch {
	case e.truncated:
		t.Truncated.Add(1)
		q.log.Warn("file shrank while being sent: closing the connection",
			"sent", e.sent, "want", e.want, "size_at_open", e.size)
	case e.aborted:
		t.Aborted.Add(1)
	}
}

// Close releases the file and returns the stream to its pool. fasthttp calls
// it exactly once per response, whether or not the body was sent.
func (b *bodyStream) Close() error {
	b.h.Release()
	if b.holds {
		b.holds = false
		b.srv.admit.perClient.give(b.client)
	}
	s := b.srv
	s.rec.finish(b.ctx, b.kind, b.sent, b.via)
	b.srv, b.conn, b.name, b.h, b.mp, b.ctx = nil, nil, "", nil, nil, nil
	b.inline = nil
	if cap(b.mbuf) > maxPooledMultipart {
		b.mbuf = nil
	}
	b.sf = sendfileWriter{}
	b.cp = copyWriter{}
	s.streamPool.Put(b)
	return nil
}

// copyWriter is the userspace body path: pread into a pooled buffer, then
// write. On TLS each write is one record's worth.
type copyWriter struct {
	srv  *handler
	conn net.Conn
}

func (w *copyWriter) reset(s *handler, c net.Conn) { w.srv, w.conn = s, c }

func (w *copyWriter) framing(p []byte, _ bool) (int64, error) {
	n, err := w.conn.Write(p)
	return int64(n), err
}

func (w *copyWriter) span(h *cache.Handle, sp ranges.Span) (int64, error) {
	bp := w.srv.bufPool.Get().(*[]byte)
	defer w.srv.bufPool.Put(bp)
	return conn.CopySpan(w.conn, h.File, sp.Start, sp.Length, *bp)
}

// sendfileOn: the sendfile writer may serve (Linux, not -disable-sendfile).
func sendfileOn(s *handler) bool { return conn.SendfileAvailable && !s.cfg.DisableSendfile }

// sendfileWriter is the plain TCP (and kTLS) body path: part framing with
// MSG_MORE, file spans with sendfile(2). If the file system refuses
// sendfile, the span (and the rest of the body) goes through the copy path
// instead.
type sendfileWriter struct {
	c        *conn.TCP
	fallback *copyWriter
	srv      *handler
	used     bool  // at least one span went through sendfile
	refused  bool  // sendfile refused: copy from here on
	sent     int64 // bytes sent by this path (framing included)
}

func (w *sendfileWriter) reset(s *handler, c *conn.TCP, fb *copyWriter) {
	*w = sendfileWriter{c: c, fallback: fb, srv: s}
}

func (w *sendfileWriter) framing(p []byte, more bool) (int64, error) {
	if w.refused {
		return w.fallback.framing(p, more)
	}
	var n int
	var err error
	if more {
		var n64 int64
		n64, err = w.c.WriteMore(p)
		n = int(n64)
	} else {
		n, err = w.c.TCPConn.Write(p)
	}
	w.sent += int64(n)
	return int64(n), err
}

func (w *sendfileWriter) span(h *cache.Handle, sp ranges.Span) (int64, error) {
	if !w.refused {
		n, err := w.c.Sendfile(h.Fd(), sp.Start, sp.Length)
		w.sent += n
		if !errors.Is(err, conn.ErrSendfileUnsupported) {
			w.used = true
			return n, err
		}
		w.refused = true
		w.srv.stats.Transport.SendfileFallbacks.Add(1)
	}
	return w.fallback.span(h, sp)
}

// errRead: something read a body stream instead of calling WriteTo.
var errRead = errors.New("origin: a body stream is sent by WriteTo, never read")

// Read exists because fasthttp's SetBodyStream takes an io.Reader; it is
// never called. fasthttp consumes a stream whose SupportsBodyWriteTo is
// true through WriteTo alone (Response.Write, Body and the chunked path
// alike, fasthttp v1.78.0 copyBodyStream), and WriteTo sends straight to
// the connection. A second implementation of the body framing here would
// be code no request runs; if a fasthttp release ever read instead, the
// response fails (and its connection closes) rather than send bytes
// nothing has tested.
func (b *bodyStream) Read([]byte) (int, error) { return 0, errRead }

// TransportCounters count which body path served each response body, and
// the bytes each sent (framing of multipart bodies included).
type TransportCounters[C any] struct {
	SendfileResponses C // bodies sent by sendfile(2) on plain TCP
	SendfileBytes     C
	KTLSResponses     C // bodies sent by sendfile(2) on a kTLS socket
	KTLSBytes         C
	InlineResponses   C // bodies sent from the cache entry's memory, with the header in one send
	InlineBytes       C
	CopyResponses     C // bodies sent by pread into a pooled buffer and write
	CopyBytes         C
	SendfileFallbacks C // sendfile refused by the file system (EINVAL/ENOSYS): served by copy
	Truncated         C // files that shrank while being sent: connection closed
	Aborted           C // bodies cut short by the client or a write timeout
}

// transportMetrics declares the body paths' metrics.
func transportMetrics(t *table, st *TransportStats) {
	resp := t.counter("body_responses_total", "Response bodies by transport path.", "path")
	bytes := t.counter("body_bytes_total", "Body bytes sent by transport path.", "path")
	for path, v := range map[string][2]int64{
		"sendfile": {st.SendfileResponses, st.SendfileBytes},
		"ktls":     {st.KTLSResponses, st.KTLSBytes},
		"inline":   {st.InlineResponses, st.InlineBytes},
		"copy":     {st.CopyResponses, st.CopyBytes},
	} {
		t.add(resp, v[0], path)
		t.add(bytes, v[1], path)
	}
	t.one("sendfile_fallbacks_total", "Responses where the file system refused sendfile and copy served.", st.SendfileFallbacks)
	t.one("truncated_total", "Responses cut short because the file shrank while being sent.", st.Truncated)
	t.one("aborted_total", "Responses cut short by the client or a write timeout.", st.Aborted)
}
