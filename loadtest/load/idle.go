package load

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// idleDialers bounds concurrent dials: a burst of thousands would overrun
// a server's listen backlog (nginx: 511) and measure that instead.
const idleDialers = 32

// idleSet holds idle keep-alive connections: each made one request and
// then stays silent. Owned by Run, which calls close.
type idleSet struct {
	open   atomic.Int64 // connections open now
	lost   atomic.Int64 // connections the server closed while we held them
	failed atomic.Int64 // connections that could not be set up
	ending atomic.Bool  // close has begun: a closed connection is ours

	mu     sync.Mutex // protects conns and closed
	conns  []net.Conn
	closed bool

	wg sync.WaitGroup // one per connection's watcher goroutine
}

// openIdle opens n idle connections to host and returns when all are
// open (or failed) or ctx ends; the connections outlive ctx, until close.
func openIdle(ctx context.Context, host, path string, n int) *idleSet {
	s := &idleSet{}
	if n == 0 {
		return s
	}
	req := fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: segorigin-loadtest-idle\r\n\r\n", path, host)
	var next atomic.Int64
	var dialers sync.WaitGroup
	for range min(idleDialers, n) {
		dialers.Go(func() {
			for ctx.Err() == nil && next.Add(1) <= int64(n) {
				c, err := dialIdle(ctx, host, req)
				if err != nil {
					s.failed.Add(1)
					continue
				}
				s.hold(c)
			}
		})
	}
	dialers.Wait()
	return s
}

// dialIdle connects, makes one keep-alive request and reads its response.
func dialIdle(ctx context.Context, host string, req []byte) (net.Conn, error) {
	d := net.Dialer{Timeout: 5 * time.Second}
	c, err := d.DialContext(ctx, "tcp", host)
	if err != nil {
		return nil, err
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := c.Write(req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReaderSize(c, 4096)
	resp, err := http.ReadResponse(br, nil)
	if err == nil {
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err == nil && resp.Close {
			err = fmt.Errorf("server closes the connection after %s", resp.Status)
		}
	}
	if err == nil && br.Buffered() > 0 {
		err = fmt.Errorf("%d unexpected bytes after the response", br.Buffered())
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	c.SetDeadline(time.Time{})
	return c, nil
}

// hold keeps c and starts its watcher, which notices the server closing it.
func (s *idleSet) hold(c net.Conn) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		c.Close()
		return
	}
	s.conns = append(s.conns, c)
	s.mu.Unlock()
	s.open.Add(1)
	s.wg.Go(func() { // ends when the server closes c or close() does
		var b [1]byte
		c.Read(b[:]) // an idle connection receives nothing until it ends
		s.open.Add(-1)
		if !s.ending.Load() {
			s.lost.Add(1)
		}
	})
}

// close closes every connection and waits for their watchers.
func (s *idleSet) close() {
	s.ending.Store(true)
	s.mu.Lock()
	s.closed = true
	conns := s.conns
	s.conns = nil
	s.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
	s.wg.Wait()
}
