package main

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"syscall"
	"time"

	"segorigin/internal/ktlsvm"
)

// draining is one combo's pair of connections for the drain: one with
// big.ts in flight (its reader stopped after the header, so the response
// is surely unfinished at SIGTERM), one idle between requests.
type draining struct {
	c    ktlsvm.Combo
	busy *conn
	resp *http.Response
	idle *conn
	err  error
}

// drain: SIGTERM with open kTLS connections. The idle ones end at once
// with close_notify, new connections are refused, the responses in flight
// finish whole and their connections then end with close_notify, and the
// server exits 0. It reports each combo's drain and the v4 server's exit.
func (r *runState) drain() {
	big := r.media["big.ts"]
	ds := make([]*draining, len(ktlsvm.Combos))
	var wg sync.WaitGroup
	for i, c := range ktlsvm.Combos {
		wg.Go(func() { ds[i] = r.drainPrepare(c) })
	}
	wg.Wait()
	for _, d := range ds {
		if d.err != nil { // its connections would hold the drain up
			for _, cn := range []*conn{d.busy, d.idle} {
				if cn != nil {
					cn.raw.Close()
				}
			}
		}
	}
	r.rep.Info("run %s: drain: %d connections open, SIGTERM", r.run, 2*len(ds))
	termErr := r.v4.terminate()
	for _, d := range ds {
		if d.err == nil {
			wg.Go(func() {
				if err := d.idle.expectCloseNotify(); err != nil {
					d.err = fmt.Errorf("idle connection at SIGTERM: %w", err)
				}
				d.idle.raw.Close()
			})
		}
	}
	wg.Wait()
	refused := checkRefused(r.v4.https)
	r.rep.Info("run %s: drain: idle connections closed", r.run)
	for _, d := range ds {
		if d.err == nil {
			wg.Go(func() { d.err = r.drainFinish(d, big) })
		}
	}
	wg.Wait()
	r.rep.Info("run %s: drain: responses in flight finished", r.run)
	for _, d := range ds {
		r.rep.Result(r.run+"/"+d.c.Name+"/drain", d.err)
	}
	r.rep.Result(r.run+"/exit-v4", errors.Join(termErr, refused, r.v4.waitExit(drainTimeout+5*time.Second)))
}

func (r *runState) drainPrepare(c ktlsvm.Combo) *draining {
	d := &draining{c: c}
	if d.busy, d.err = dial(r.v4, c, dialOpts{rcvbuf: 4096}); d.err != nil {
		return d
	}
	if d.resp, d.err = getHeader(d.busy, "/big.ts"); d.err != nil {
		return d
	}
	if d.idle, d.err = dial(r.v4, c, dialOpts{}); d.err != nil {
		return d
	}
	resp, body, err := d.idle.do("GET", "/play.m3u8")
	if err == nil {
		err = wantFull(resp, body, r.media["play.m3u8"])
	}
	d.err = err
	return d
}

// drainFinish reads the rest of the response in flight at SIGTERM.
func (r *runState) drainFinish(d *draining, big []byte) error {
	defer d.busy.raw.Close()
	body, err := io.ReadAll(d.resp.Body)
	if err != nil {
		r.v4.cut("/big.ts", int64(len(big)))
		return fmt.Errorf("the response in flight at SIGTERM: after %d bytes: %w", len(body), err)
	}
	r.v4.body("/big.ts", int64(len(body)))
	if err := sameBytes("the response in flight at SIGTERM", body, big); err != nil {
		return err
	}
	if err := d.busy.expectCloseNotify(); err != nil {
		return fmt.Errorf("after the response in flight at SIGTERM: %w", err)
	}
	return nil
}

// checkRefused: a draining server accepts no new connection.
func checkRefused(addr string) error {
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err == nil {
		c.Close()
		return fmt.Errorf("a new connection to %s was accepted while draining", addr)
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("a new connection to %s while draining: %v, want connection refused", addr, err)
	}
	return nil
}

// smpConns is how many connections per combo run at once on two vCPUs.
const smpConns = 2

// runSMP is PlanSMP: every combo's connections at once, each with a mix
// of whole, range and multi-range bodies, then the metrics, the access
// log and the exit.
func (e *env) runSMP() {
	run := ktlsvm.PlanSMP
	if n := runtime.NumCPU(); n != 2 {
		e.rep.Result(run+"/exit-v4", fmt.Errorf("the guest has %d CPUs, want 2", n))
		return
	}
	v4, err := e.startServer("v4", "127.0.0.1", "auto", longWriteTimeout, nil)
	if err != nil {
		e.rep.Result(run+"/exit-v4", err)
		return
	}
	r := &runState{env: e, run: run, mode: "auto", v4: v4}
	errs := make([][]error, len(ktlsvm.Combos))
	var wg sync.WaitGroup
	for i, c := range ktlsvm.Combos {
		errs[i] = make([]error, smpConns)
		for j := range smpConns {
			wg.Go(func() { errs[i][j] = r.mixed(c) })
		}
	}
	wg.Wait()
	for i, c := range ktlsvm.Combos {
		e.rep.Result(run+"/"+c.Name+"/concurrent", errors.Join(errs[i]...))
	}
	e.rep.Result(run+"/metrics-v4", r.checkMetrics(v4))
	e.rep.Result(run+"/exit-v4", v4.stop())
	e.rep.Result(run+"/access-log", r.checkAccess(v4))
	e.offloaded += v4.tally.handshakes.Load()
}

// mixed is one connection of runSMP.
func (r *runState) mixed(c ktlsvm.Combo) error {
	seg, big, play := r.media["seg.m4s"], r.media["big.ts"], r.media["play.m3u8"]
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	defer cn.close()
	size := int64(len(seg))
	checks := []func() error{
		func() error {
			return get(cn, "/seg.m4s", "", func(resp *http.Response, b []byte) error { return wantFull(resp, b, seg) })
		},
		func() error {
			return get(cn, "/big.ts", "", func(resp *http.Response, b []byte) error { return wantFull(resp, b, big) })
		},
		func() error {
			return get(cn, "/play.m3u8", "", func(resp *http.Response, b []byte) error { return wantFull(resp, b, play) })
		},
	}
	for _, sp := range recordSpans {
		checks = append(checks, func() error {
			return get(cn, "/seg.m4s", rangeHeader(sp), func(resp *http.Response, b []byte) error { return wantRange(resp, b, seg, sp) })
		})
	}
	checks = append(checks, func() error {
		return get(cn, "/seg.m4s", "Range: bytes=0-99,16380-16390,-10", func(resp *http.Response, b []byte) error {
			return wantMultipart(resp, b, seg, []span{{0, 99}, {16380, 16390}, {size - 10, size - 1}})
		})
	})
	for i, check := range checks {
		if err := check(); err != nil {
			return fmt.Errorf("request %d: %w", i+1, err)
		}
	}
	return nil
}

// get does GET path with an optional header and checks the response.
func get(cn *conn, path, header string, check func(*http.Response, []byte) error) error {
	var headers []string
	if header != "" {
		headers = append(headers, header)
	}
	resp, body, err := cn.do("GET", path, headers...)
	if err != nil {
		return err
	}
	return check(resp, body)
}
