package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"sync"
	"time"

	"segorigin/internal/ktlsvm"
)

// runState is one run: its servers and the -ktls they run with.
type runState struct {
	*env
	run    string // ktlsvm.RunKTLS, RunCopy or PlanSMP
	mode   string // segorigin -ktls: auto or off
	v4, v6 *server
}

// runFull is one run of PlanFull: every case of every combo, the combos
// side by side (so the waits of one overlap the others' work), then the
// servers' metrics, the drain on SIGTERM, and the access logs.
func (e *env) runFull(run string) {
	mode := "auto"
	if run == ktlsvm.RunCopy {
		mode = "off"
	}
	v4, err := e.startServer("v4", "127.0.0.1", mode, longWriteTimeout, nil)
	if err != nil {
		e.rep.Result(run+"/exit-v4", err) // the rest of the run is reported not run
		return
	}
	// The IPv6 server also serves the write-timeout case, and the
	// HelloRetryRequest case: a stock Go
	// client sends a key share for the group a stock Go server picks
	// (post-quantum hybrids first), so the client offers only
	// SecP256r1MLKEM768 (shared) and X25519 (not shared), and this server
	// leaves out SecP256r1MLKEM768, as Go before 1.26 did. It serves
	// HTTPS alone (-listen ''), so its connections go to event loops of
	// their own, where the IPv4 server's share the loops of its plain
	// listener.
	v6, err := e.startServer("v6", "[::1]", mode, writeTimeout, []string{"GODEBUG=tlssecpmlkem=0"}, "-listen", "")
	if err != nil {
		e.rep.Result(run+"/exit-v6", err)
		e.rep.Result(run+"/exit-v4", v4.stop())
		return
	}
	r := &runState{env: e, run: run, mode: mode, v4: v4, v6: v6}
	var wg sync.WaitGroup
	for _, c := range ktlsvm.Combos {
		wg.Go(func() { r.combo(c) })
	}
	wg.Wait()
	e.rep.Info("run %s: cases done", run)
	e.rep.Result(run+"/metrics-v4", r.checkMetrics(v4))
	e.rep.Result(run+"/metrics-v6", r.checkMetrics(v6))
	r.drain()
	e.rep.Info("run %s: drain done", run)
	e.rep.Result(run+"/exit-v6", v6.stop())
	e.rep.Result(run+"/access-log", errors.Join(r.checkAccess(v4), r.checkAccess(v6)))
	if mode == "auto" {
		e.offloaded += v4.tally.handshakes.Load() + v6.tally.handshakes.Load()
		e.rekeysRX += v4.tally.rekeysRX.Load()
		e.rekeysTX += v4.tally.rekeysTX.Load()
	}
}

// step is one request (or a few) on the keep-alive connection.
type step struct {
	name string
	fn   func(*conn) error
}

// combo runs combo c's cases, in the order of ktlsvm.CasesFor; the
// keep-alive steps share one connection, and the drain comes later.
func (r *runState) combo(c ktlsvm.Combo) {
	res := func(name string, err error) { r.rep.Result(r.run+"/"+c.Name+"/"+name, err) }
	steps := r.keepAliveSteps()
	cases := map[string]func(ktlsvm.Combo) error{
		"pipelined": r.pipelined, "slow-reader": r.slowReader, "abort": r.abort,
		"close-notify": r.closeNotify, "write-timeout": r.writeTimeout,
		"keyupdate":           func(c ktlsvm.Combo) error { return r.keyUpdate(c, false) },
		"keyupdate-requested": func(c ktlsvm.Combo) error { return r.keyUpdate(c, true) },
		"ipv6":                r.ipv6, "hrr": r.hrr,
		"pipelined-finished": r.pipelinedFinished, "resumption": r.resumption,
		"client-close-notify": r.clientCloseNotify,
	}
	kept := false
	for _, name := range ktlsvm.CasesFor(c) {
		switch i := slices.IndexFunc(steps, func(s step) bool { return s.name == name }); {
		case i >= 0:
			if !kept {
				r.keepAlive(c, steps, res)
				kept = true
			}
		case name == "drain":
		case cases[name] != nil:
			res(name, cases[name](c))
		default:
			res(name, fmt.Errorf("the client has no case %q", name))
		}
	}
}

// keepAlive runs steps one after another on one connection.
func (r *runState) keepAlive(c ktlsvm.Combo, steps []step, res func(string, error)) {
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		for _, s := range steps {
			res(s.name, err)
		}
		return
	}
	defer cn.close()
	for _, s := range steps {
		res(s.name, s.fn(cn))
	}
}

// Spans around the 16 KiB record boundaries: ending just before one,
// starting on one, one record long but shifted by a byte, crossing two.
var recordSpans = []span{{16383, 16384}, {16384, 32767}, {1, 16384}, {16380, 32800}, {0, 16383}, {32767, 49153}}

// keepAliveSteps are the requests of ktlsvm.Cases that share a
// connection, on seg.m4s (100003 bytes) and play.m3u8.
func (r *runState) keepAliveSteps() []step {
	seg, play := r.media["seg.m4s"], r.media["play.m3u8"]
	size := int64(len(seg))
	var etag string
	one := func(sp span, header string) func(*conn) error {
		return func(cn *conn) error {
			resp, body, err := cn.do("GET", "/seg.m4s", header)
			if err != nil {
				return err
			}
			return wantRange(resp, body, seg, sp)
		}
	}
	steps := []step{
		{"full", func(cn *conn) error {
			resp, body, err := cn.do("GET", "/seg.m4s")
			if err != nil {
				return err
			}
			etag = resp.Header.Get("ETag")
			return wantFull(resp, body, seg)
		}},
		{"range", one(span{0, 1}, "Range: bytes=0-1")}, // what Safari asks first
		{"range-records", func(cn *conn) error {
			for _, sp := range recordSpans {
				if err := one(sp, rangeHeader(sp))(cn); err != nil {
					return err
				}
			}
			return nil
		}},
		{"range-suffix", one(span{size - 16385, size - 1}, "Range: bytes=-16385")},
		{"range-open", one(span{81920, size - 1}, "Range: bytes=81920-")},
		{"multirange", func(cn *conn) error {
			resp, body, err := cn.do("GET", "/seg.m4s", "Range: bytes=0-99,16380-16390,32760-49160,65535-65536,-10")
			if err != nil {
				return err
			}
			return wantMultipart(resp, body, seg, []span{{0, 99}, {16380, 16390}, {32760, 49160}, {65535, 65536}, {size - 10, size - 1}})
		}},
	}
	steps = append(steps, statusSteps(size, &etag)...)
	return append(steps, step{"playlist", func(cn *conn) error {
		resp, body, err := cn.do("GET", "/play.m3u8")
		if err != nil {
			return err
		}
		return wantFull(resp, body, play)
	}})
}

// statusSteps are keepAliveSteps' HEAD, 304, 404 and 416 on seg.m4s
// (size bytes); etag is the full GET's, set when these run.
func statusSteps(size int64, etag *string) []step {
	return []step{
		{"head", func(cn *conn) error {
			resp, body, err := cn.do("HEAD", "/seg.m4s")
			if err != nil {
				return err
			}
			if err := wantStatus(resp, http.StatusOK); err != nil {
				return err
			}
			if cl := resp.Header.Get("Content-Length"); cl != fmt.Sprint(size) || len(body) != 0 {
				return fmt.Errorf("HEAD: Content-Length %q and %d body bytes, want %d and none (RFC 9110 §9.3.2)", cl, len(body), size)
			}
			return nil
		}},
		{"not-modified", func(cn *conn) error {
			resp, body, err := cn.do("GET", "/seg.m4s", "If-None-Match: "+*etag)
			if err != nil {
				return err
			}
			if err := wantStatus(resp, http.StatusNotModified); err != nil {
				return fmt.Errorf("If-None-Match %s: %w", *etag, err)
			}
			if len(body) != 0 || resp.Header.Get("ETag") != *etag {
				return fmt.Errorf("304 with %d body bytes and ETag %q, want none and %q (RFC 9110 §15.4.5)", len(body), resp.Header.Get("ETag"), *etag)
			}
			return nil
		}},
		{"not-found", func(cn *conn) error {
			resp, _, err := cn.do("GET", "/missing.ts")
			if err != nil {
				return err
			}
			return wantStatus(resp, http.StatusNotFound)
		}},
		{"unsatisfiable", func(cn *conn) error {
			resp, _, err := cn.do("GET", "/seg.m4s", "Range: bytes=200000-")
			if err != nil {
				return err
			}
			if err := wantStatus(resp, http.StatusRequestedRangeNotSatisfiable); err != nil {
				return err
			}
			if got, want := resp.Header.Get("Content-Range"), fmt.Sprintf("bytes */%d", size); got != want {
				return fmt.Errorf("416 Content-Range %q, want %q (RFC 9110 §15.5.17)", got, want)
			}
			return nil
		}},
	}
}

// pipelined: five requests in one write, answered in order (RFC 9112 §9.3.2).
func (r *runState) pipelined(c ktlsvm.Combo) error {
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	defer cn.close()
	if _, err := io.WriteString(cn.tc, pipelinedRequests); err != nil {
		return err
	}
	return r.pipelinedResponses(cn)
}

// pipelinedRequests are five requests sent in one write.
var pipelinedRequests = request("GET", "/play.m3u8") + request("GET", "/seg.m4s", "Range: bytes=16380-16390") +
	request("HEAD", "/seg.m4s") + request("GET", "/seg.m4s", "Range: bytes=0-99,20000-40000") + request("GET", "/seg.m4s")

// pipelinedResponses reads and checks the answers to pipelinedRequests,
// in order: each once, byte-exact.
func (r *runState) pipelinedResponses(cn *conn) error {
	seg, play := r.media["seg.m4s"], r.media["play.m3u8"]
	checks := []struct {
		method, path string
		check        func(*http.Response, []byte) error
	}{
		{"GET", "/play.m3u8", func(resp *http.Response, b []byte) error { return wantFull(resp, b, play) }},
		{"GET", "/seg.m4s", func(resp *http.Response, b []byte) error { return wantRange(resp, b, seg, span{16380, 16390}) }},
		{"HEAD", "/seg.m4s", func(resp *http.Response, b []byte) error { return wantStatus(resp, http.StatusOK) }},
		{"GET", "/seg.m4s", func(resp *http.Response, b []byte) error {
			return wantMultipart(resp, b, seg, []span{{0, 99}, {20000, 40000}})
		}},
		{"GET", "/seg.m4s", func(resp *http.Response, b []byte) error { return wantFull(resp, b, seg) }},
	}
	for i, ch := range checks {
		resp, body, err := cn.response(ch.method, ch.path)
		if err == nil {
			err = ch.check(resp, body)
		}
		if err != nil {
			return fmt.Errorf("response %d of %d: %w", i+1, len(checks), err)
		}
	}
	return nil
}

// getHeader sends GET path and reads the response's header, leaving its
// body to the caller.
func getHeader(cn *conn, path string) (*http.Response, error) {
	if _, err := io.WriteString(cn.tc, request("GET", path)); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(cn.br, &http.Request{Method: "GET"})
	if err != nil {
		return nil, err
	}
	return resp, wantStatus(resp, http.StatusOK)
}

// slowReader: a client that reads big.ts 4 KiB at a time with pauses,
// through a 4 KiB receive buffer: sendfile on the server's socket returns
// short again and again and waits; every byte still arrives, and the
// connection serves the next request.
func (r *runState) slowReader(c ktlsvm.Combo) error {
	big, play := r.media["big.ts"], r.media["play.m3u8"]
	cn, err := dial(r.v4, c, dialOpts{rcvbuf: 4096})
	if err != nil {
		return err
	}
	defer cn.close()
	resp, err := getHeader(cn, "/big.ts")
	if err != nil {
		return err
	}
	body := make([]byte, 0, len(big))
	buf := make([]byte, 4096)
	for {
		n, err := resp.Body.Read(buf)
		body = append(body, buf[:n]...)
		if err == io.EOF {
			break
		}
		if err != nil {
			r.v4.cut("/big.ts", int64(len(big)))
			return fmt.Errorf("body after %d bytes: %w", len(body), err)
		}
		time.Sleep(2 * time.Millisecond)
	}
	r.v4.body("/big.ts", int64(len(body)))
	if err := sameBytes("slow body", body, big); err != nil {
		return err
	}
	resp, b, err := cn.do("GET", "/play.m3u8")
	if err != nil {
		return fmt.Errorf("the request after the slow body: %w", err)
	}
	return wantFull(resp, b, play)
}

// abort: a client that resets the connection 16 KiB into big.ts; the
// server counts the cut body and carries on.
func (r *runState) abort(c ktlsvm.Combo) error {
	big, play := r.media["big.ts"], r.media["play.m3u8"]
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	resp, err := getHeader(cn, "/big.ts")
	if err != nil {
		cn.raw.Close()
		return err
	}
	r.v4.cut("/big.ts", int64(len(big)))
	head := make([]byte, 16<<10)
	_, err = io.ReadFull(resp.Body, head)
	cn.raw.SetLinger(0) // close with RST, mid-body
	cn.raw.Close()
	if err != nil {
		return fmt.Errorf("the first 16 KiB: %w", err)
	}
	if err := sameBytes("first 16 KiB", head, big[:len(head)]); err != nil {
		return err
	}
	next, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return fmt.Errorf("after the abort: %w", err)
	}
	defer next.close()
	resp, b, err := next.do("GET", "/play.m3u8")
	if err != nil {
		return fmt.Errorf("after the abort: %w", err)
	}
	return wantFull(resp, b, play)
}

// closeNotify: Connection: close is answered, then the server ends the
// TLS stream with close_notify (RFC 8446 §6.1) and closes.
func (r *runState) closeNotify(c ktlsvm.Combo) error {
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	defer cn.raw.Close()
	resp, body, err := cn.do("GET", "/seg.m4s", "Connection: close")
	if err != nil {
		return err
	}
	if err := wantFull(resp, body, r.media["seg.m4s"]); err != nil {
		return err
	}
	if !resp.Close {
		return errors.New("the response to Connection: close does not say Connection: close (RFC 9112 §9.6)")
	}
	return cn.expectCloseNotify()
}

// writeTimeout: a client that stops reading big.ts makes the (IPv6)
// server's write wait until -write-timeout, then end the connection: the client
// gets a correct prefix of the body, then the end, never more.
func (r *runState) writeTimeout(c ktlsvm.Combo) error {
	big := r.media["big.ts"]
	cn, err := dial(r.v6, c, dialOpts{rcvbuf: 4096})
	if err != nil {
		return err
	}
	defer cn.raw.Close()
	resp, err := getHeader(cn, "/big.ts")
	if err != nil {
		return err
	}
	r.v6.cut("/big.ts", int64(len(big)))
	time.Sleep(writeTimeout + 1500*time.Millisecond)
	body, err := io.ReadAll(resp.Body)
	var ne net.Error
	switch {
	case err == nil:
		return fmt.Errorf("all %d bytes arrived though the client stopped reading for longer than -write-timeout %v", len(body), writeTimeout)
	case errors.As(err, &ne) && ne.Timeout():
		return fmt.Errorf("the server did not end the connection: %w", err)
	case errors.Is(err, os.ErrDeadlineExceeded):
		return fmt.Errorf("the server did not end the connection: %w", err)
	}
	return sameBytes(fmt.Sprintf("the %d bytes before the timeout (%v)", len(body), err), body, big[:len(body)])
}

// ipv6: full and multi-range bodies over ::1, of a file sent by sendfile
// and of one sent inline (the playlist, at most -inline-max: its
// multipart body is assembled in memory).
func (r *runState) ipv6(c ktlsvm.Combo) error {
	seg, play := r.media["seg.m4s"], r.media["play.m3u8"]
	cn, err := dial(r.v6, c, dialOpts{})
	if err != nil {
		return err
	}
	defer cn.close()
	if ip := cn.raw.RemoteAddr().(*net.TCPAddr).IP; ip.To4() != nil || !ip.IsLoopback() {
		return fmt.Errorf("connected to %v, want ::1", ip)
	}
	resp, body, err := cn.do("GET", "/seg.m4s")
	if err == nil {
		err = wantFull(resp, body, seg)
	}
	if err != nil {
		return err
	}
	resp, body, err = cn.do("GET", "/seg.m4s", "Range: bytes=16383-16384,50000-70000")
	if err == nil {
		err = wantMultipart(resp, body, seg, []span{{16383, 16384}, {50000, 70000}})
	}
	if err != nil {
		return err
	}
	resp, body, err = cn.do("GET", "/play.m3u8")
	if err == nil {
		err = wantFull(resp, body, play)
	}
	if err != nil {
		return err
	}
	resp, body, err = cn.do("GET", "/play.m3u8", "Range: bytes=0-99,500-")
	if err != nil {
		return err
	}
	return wantMultipart(resp, body, play, []span{{0, 99}, {500, int64(len(play)) - 1}})
}

// hrr: a handshake with a HelloRetryRequest (RFC 8446 §4.1.4), then
// bodies on the connection handed over after it.
func (r *runState) hrr(c ktlsvm.Combo) error {
	seg := r.media["seg.m4s"]
	cn, err := dial(r.v6, c, dialOpts{curves: []tls.CurveID{tls.SecP256r1MLKEM768, tls.X25519}, wantHRR: true})
	if err != nil {
		return err
	}
	defer cn.close()
	if id := cn.tc.ConnectionState().CurveID; id != tls.X25519 {
		return fmt.Errorf("key exchange %v after the HelloRetryRequest, want X25519", id)
	}
	resp, body, err := cn.do("GET", "/seg.m4s")
	if err == nil {
		err = wantFull(resp, body, seg)
	}
	if err != nil {
		return err
	}
	resp, body, err = cn.do("GET", "/seg.m4s", "Range: bytes=16384-32767")
	if err != nil {
		return err
	}
	return wantRange(resp, body, seg, span{16384, 32767})
}
