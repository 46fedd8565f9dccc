package main

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"segorigin/internal/ktlsvm"
)

// pipelinedFinished: the client's Finished and five requests leave in
// one TCP segment. The server's handshake must leave the requests'
// records in the socket for the kernel to open (crypto/tls read one
// record at a time): every response comes, in order, once, byte-exact.
func (r *runState) pipelinedFinished(c ktlsvm.Combo) error {
	cn, err := dial(r.v4, c, dialOpts{hold: true})
	if err != nil {
		return err
	}
	defer cn.close()
	if _, err := io.WriteString(cn.tc, pipelinedRequests); err != nil {
		return err
	}
	if err := cn.rec.flush(); err != nil {
		return err
	}
	return r.pipelinedResponses(cn)
}

// resumption: a TLS 1.3 session ticket from a first connection resumes a
// second. Both are handed to the kernel (the ticket moved the first
// sequence number it seals with): a full body on each.
func (r *runState) resumption(c ktlsvm.Combo) error {
	sessions := tls.NewLRUClientSessionCache(1)
	for i, resume := range []bool{false, true} {
		cn, err := dial(r.v4, c, dialOpts{sessions: sessions, resume: resume})
		if err != nil {
			return fmt.Errorf("connection %d: %w", i+1, err)
		}
		resp, body, err := cn.do("GET", "/seg.m4s")
		if err == nil {
			err = wantFull(resp, body, r.media["seg.m4s"])
		}
		cn.close()
		if err != nil {
			return fmt.Errorf("connection %d: %w", i+1, err)
		}
	}
	return nil
}

// clientCloseNotify: after a response the client sends close_notify
// (and keeps its socket open for reading); the server must end the
// connection cleanly, with its own close_notify.
func (r *runState) clientCloseNotify(c ktlsvm.Combo) error {
	cn, err := dial(r.v4, c, dialOpts{})
	if err != nil {
		return err
	}
	defer cn.raw.Close()
	resp, body, err := cn.do("GET", "/play.m3u8")
	if err == nil {
		err = wantFull(resp, body, r.media["play.m3u8"])
	}
	if err != nil {
		return err
	}
	if err := cn.tc.CloseWrite(); err != nil {
		return fmt.Errorf("close_notify: %w", err)
	}
	if err := cn.expectCloseNotify(); err != nil {
		return err
	}
	r.v4.tally.closeNotes.Add(1)
	return nil
}

// kernelRekeys reports whether this kernel takes new TLS 1.3 keys on a
// live kTLS socket (TLS_TX and TLS_RX again after a KeyUpdate): Linux
// 6.14 and later.
func kernelRekeys() (bool, error) {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false, err
	}
	rel := unix.ByteSliceToString(u.Release[:])
	major, rest, _ := strings.Cut(rel, ".")
	minor, _, _ := strings.Cut(rest, ".")
	ma, err1 := strconv.Atoi(major)
	mi, err2 := strconv.Atoi(strings.TrimRightFunc(minor, func(r rune) bool { return r < '0' || r > '9' }))
	if err := errors.Join(err1, err2); err != nil {
		return false, fmt.Errorf("kernel release %q: %w", rel, err)
	}
	return ma > 6 || ma == 6 && mi >= 14, nil
}
