package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	"segorigin/loadtest/verify"
)

// tally is what one client saw; merged at the end.
type tally struct {
	waited    []time.Duration // answers to a reload sent before its rename: from the rename to the last byte
	immediate []time.Duration // answers to a reload sent after its rename: from the send to the last byte
	answers   int64           // blocking reloads answered 200 and verified
	timedOut  int64           // answered 503 (three target durations passed)
	parts     int64           // parts fetched and verified
	bytes     int64           // body bytes verified, playlists and parts
	errs      int64           // anything else: a transport error, a wrong status, a byte that differs
	firstErr  error
}

func (t *tally) fail(err error) {
	t.errs++
	if t.firstErr == nil {
		t.firstErr = err
	}
}

// client is one player: its own keep-alive connection, asking its
// playlist for the next part with a blocking reload as soon as the last
// answer is in, and (with parts) fetching the part each answer adds.
type client struct {
	addr  string
	f     *feed
	parts bool
	size  int64 // bytes of each part
	nc    net.Conn
	br    *bufio.Reader
	req   []byte
	w     *window // answers are counted inside it
	t     tally
	stop  func() bool // ends the connection's watch of the run's end
}

// run asks until ctx ends; a connection that fails is dialled again.
func (c *client) run(ctx context.Context) {
	defer c.hangUp()
	seq := c.f.latest() + 1
	for ctx.Err() == nil {
		if c.nc == nil {
			nc, err := net.Dial("tcp", c.addr)
			if err != nil {
				c.t.fail(err)
				time.Sleep(100 * time.Millisecond)
				continue
			}
			c.nc, c.br = nc, bufio.NewReaderSize(nc, 16<<10)
			// A reload may wait seconds: the run's end cuts it short.
			c.stop = context.AfterFunc(ctx, func() { nc.SetDeadline(time.Now()) })
		}
		next, err := c.reload(seq)
		if err == nil && c.parts && next > seq {
			err = c.fetchPart(next - 1)
		}
		if err != nil {
			if ctx.Err() == nil {
				c.t.fail(err)
			}
			c.hangUp()
		}
		seq = max(next, c.f.latest()+1)
	}
}

// hangUp closes the connection, if any.
func (c *client) hangUp() {
	if c.nc != nil {
		c.stop()
		c.nc.Close()
		c.nc = nil
	}
}

// reload asks for the part of sequence seq and checks the answer against
// the versions published since; next is the sequence to ask for then.
func (c *client) reload(seq int) (next int, err error) {
	c.req = fmt.Appendf(c.req[:0], "GET %s HTTP/1.1\r\nHost: llload\r\n\r\n", c.f.target(seq))
	sent := time.Now()
	if _, err := c.nc.Write(c.req); err != nil {
		return seq, err
	}
	body, status, err := c.read()
	if err != nil {
		return seq, err
	}
	done := time.Now()
	switch status {
	case http.StatusOK:
	case http.StatusServiceUnavailable:
		if c.w.in(done) {
			c.t.timedOut++
		}
		return seq, nil
	default:
		return seq, fmt.Errorf("%s: status %d", c.f.target(seq), status)
	}
	// The answer is the version that added seq, or a later one when the
	// client asked late.
	for s := seq; ; s++ {
		v, ok := c.f.await(s, time.Second)
		if !ok {
			return seq, fmt.Errorf("%s: the answer is no version published from part %d on:\n%s", c.f.path, seq, body)
		}
		if !bytes.Equal(v.body, body) {
			continue
		}
		if !c.w.in(done) {
			return s + 1, nil
		}
		first, _ := c.f.version(seq)
		if sent.Before(first.at) {
			// The rename returned before first.at: a delay below 0 is
			// the packager's goroutine paused between the two.
			c.t.waited = append(c.t.waited, done.Sub(first.at))
		} else {
			c.t.immediate = append(c.t.immediate, done.Sub(sent))
		}
		c.t.answers++
		c.t.bytes += int64(len(body))
		return s + 1, nil
	}
}

// fetchPart fetches the part of sequence seq and checks every byte.
func (c *client) fetchPart(seq int) error {
	p := c.f.partPath(seq)
	c.req = fmt.Appendf(c.req[:0], "GET %s HTTP/1.1\r\nHost: llload\r\n\r\n", p)
	if _, err := c.nc.Write(c.req); err != nil {
		return err
	}
	body, status, err := c.read()
	switch {
	case err != nil:
		return err
	case status != http.StatusOK:
		return fmt.Errorf("%s: status %d", p, status)
	case int64(len(body)) != c.size:
		return fmt.Errorf("%s: %d bytes, want %d", p, len(body), c.size)
	}
	// The bytes the packager wrote (synth's for the part's name), made
	// once for every client: a memcmp rather than a byte-by-byte check.
	if v, ok := c.f.version(seq); !ok || !bytes.Equal(body, v.part) {
		if err := verify.Body(verify.Name(p), 0, body); err != nil {
			return err
		}
		return fmt.Errorf("%s: not the part of version %d", p, seq)
	}
	if !c.w.in(time.Now()) {
		return nil
	}
	c.t.parts++
	c.t.bytes += int64(len(body))
	return nil
}

var errNoLength = errors.New("llload: an answer without Content-Length")

// read reads one response: its status and body.
func (c *client) read() ([]byte, int, error) {
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		return nil, 0, err
	}
	defer resp.Body.Close()
	if resp.ContentLength < 0 && resp.StatusCode == http.StatusOK {
		return nil, 0, errNoLength
	}
	body, err := io.ReadAll(resp.Body)
	if err == nil && resp.ContentLength >= 0 && int64(len(body)) != resp.ContentLength {
		err = fmt.Errorf("llload: %d body bytes, Content-Length %s", len(body), strconv.FormatInt(resp.ContentLength, 10))
	}
	return body, resp.StatusCode, err
}
