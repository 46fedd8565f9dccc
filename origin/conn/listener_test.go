package conn_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"segorigin/origin/conn"
)

func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// accepter runs Accept on l until it fails, handing each connection to
// accepted; stop closes l and waits for the goroutine.
func accepter(t *testing.T, l net.Listener) (accepted <-chan net.Conn, stop func()) {
	t.Helper()
	ch := make(chan net.Conn, 16)
	var wg sync.WaitGroup
	wg.Go(func() { // owned by stop
		defer close(ch)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			ch <- c
		}
	})
	var once sync.Once
	stop = func() {
		once.Do(func() {
			l.Close()
			wg.Wait()
			for c := range ch {
				c.Close()
			}
		})
	}
	t.Cleanup(stop)
	return ch, stop
}

// gateListener is a gate with no limits wrapping a fresh loopback
// listener, closed when the test ends.
func gateListener(t *testing.T) (*conn.Listener, string) {
	t.Helper()
	gate, err := conn.NewGate(conn.GateConfig{Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := gate.Wrap(ln)
	t.Cleanup(func() { l.Close() })
	return l, ln.Addr().String()
}

func dialFrom(t *testing.T, ip, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func recv(t *testing.T, ch <-chan net.Conn, what string) net.Conn {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(5 * time.Second):
		t.Fatalf("no connection accepted: %s", what)
		return nil
	}
}

// refused dials addr from ip and reports whether the server closed the
// connection (EOF or reset) rather than keeping it open. The gate resets
// refused connections at once, sometimes before connect returns.
func refused(t *testing.T, ip, addr string) bool {
	t.Helper()
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	c, err := d.Dial("tcp", addr)
	if errors.Is(err, syscall.ECONNRESET) {
		return true
	}
	if err != nil {
		t.Fatalf("dial from %s: %v", ip, err)
	}
	defer c.Close()
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = c.Read(make([]byte, 1))
	var ne net.Error
	return err != nil && !(errors.As(err, &ne) && ne.Timeout())
}

// TestGateLimits: a connection over the total is closed at accept and
// counted, whatever its address; the ones admitted are *conn.TCP; closing
// one gives its place back.
func TestGateLimits(t *testing.T) {
	gate, err := conn.NewGate(conn.GateConfig{MaxConns: 3, Logger: quietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	accepted, stop := accepter(t, gate.Wrap(ln))
	addr := ln.Addr().String()
	st := gate.Stats()

	var kept []net.Conn
	for i, ip := range []string{"127.0.0.2", "127.0.0.2", "127.0.0.3"} {
		dialFrom(t, ip, addr)
		c := recv(t, accepted, ip)
		if _, ok := c.(*conn.TCP); !ok {
			t.Fatalf("connection %d accepted as %T, want *conn.TCP", i, c)
		}
		kept = append(kept, c)
	}
	if n := st.ConnsOpen.Load(); n != 3 {
		t.Fatalf("ConnsOpen = %d, want 3", n)
	}
	// A fourth connection, from an address already seen or a new one, is
	// over the total: closed by the gate, not accepted.
	for _, ip := range []string{"127.0.0.2", "127.0.0.4"} {
		if !refused(t, ip, addr) {
			t.Errorf("connection from %s over a limit was kept open", ip)
		}
	}
	if n := st.ConnsRefused.Load(); n != 2 {
		t.Errorf("ConnsRefused = %d, want 2", n)
	}
	// Closing one admitted connection frees a place.
	kept[0].Close()
	kept[0].Close() // a second Close gives nothing back twice
	if n := st.ConnsOpen.Load(); n != 2 {
		t.Fatalf("ConnsOpen after Close = %d, want 2", n)
	}
	dialFrom(t, "127.0.0.2", addr)
	kept = append(kept, recv(t, accepted, "127.0.0.2 after a Close"))
	for _, c := range kept {
		c.Close()
	}
	stop()
	if n := st.ConnsOpen.Load(); n != 0 {
		t.Errorf("ConnsOpen after closing all = %d, want 0", n)
	}
}

// failingListener fails Accept with errs in turn, then hands out the
// connections of the real listener under it.
type failingListener struct {
	net.Listener
	mu   sync.Mutex // protects errs
	errs []error
}

func (l *failingListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	if len(l.errs) > 0 {
		err := l.errs[0]
		l.errs = l.errs[1:]
		l.mu.Unlock()
		return nil, err
	}
	l.mu.Unlock()
	return l.Listener.Accept()
}

// TestGateAcceptBackoff: accept errors that may pass are retried, not
// returned; running out of descriptors is counted and reported to the
// hook (which would shed the file cache) each time; other retryable
// errors are not; an error that will not pass is returned.
func TestGateAcceptBackoff(t *testing.T) {
	var mu sync.Mutex
	var pressure []error
	gate, err := conn.NewGate(conn.GateConfig{
		Logger: quietLogger(),
		OnFDPressure: func(err error) {
			mu.Lock()
			pressure = append(pressure, err)
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	fl := &failingListener{Listener: ln, errs: []error{
		&net.OpError{Op: "accept", Err: syscall.EMFILE},
		&net.OpError{Op: "accept", Err: syscall.ECONNABORTED},
		&net.OpError{Op: "accept", Err: syscall.ENFILE},
	}}
	l := gate.Wrap(fl)
	defer l.Close()
	dialFrom(t, "127.0.0.1", ln.Addr().String())
	c, err := l.Accept()
	if err != nil {
		t.Fatalf("Accept after retryable errors: %v, want the connection", err)
	}
	c.Close()
	mu.Lock()
	got := len(pressure)
	emfile := got == 2 && errors.Is(pressure[0], syscall.EMFILE) && errors.Is(pressure[1], syscall.ENFILE)
	mu.Unlock()
	if !emfile {
		t.Errorf("OnFDPressure got %v, want EMFILE then ENFILE", pressure)
	}
	if n := gate.Stats().AcceptEMFILE.Load(); n != 2 {
		t.Errorf("AcceptEMFILE = %d, want 2", n)
	}
	fl.mu.Lock()
	fl.errs = []error{errors.New("accept: permanent")}
	fl.mu.Unlock()
	if _, err := l.Accept(); err == nil || err.Error() != "accept: permanent" {
		t.Errorf("Accept after a permanent error = %v, want it returned", err)
	}
}

// TestGateConfigValidation: negative limits are refused at NewGate.
func TestGateConfigValidation(t *testing.T) {
	for _, cfg := range []conn.GateConfig{{MaxConns: -1}} {
		if _, err := conn.NewGate(cfg); err == nil {
			t.Errorf("NewGate(%+v): no error", cfg)
		}
	}
}

// TestListenerWaitClosed: WaitClosed returns at once with nothing open,
// waits while a connection is open (until its context ends, with an error
// naming the count) and returns once the last one is closed.
func TestListenerWaitClosed(t *testing.T) {
	l, addr := gateListener(t)
	if err := l.WaitClosed(t.Context()); err != nil {
		t.Fatalf("WaitClosed with nothing open: %v", err)
	}
	accepted, _ := accepter(t, l)
	dialFrom(t, "127.0.0.1", addr)
	c := recv(t, accepted, "the first")
	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	err := l.WaitClosed(ctx)
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "1 connections") {
		t.Fatalf("WaitClosed with one open: %v, want the deadline and the count", err)
	}
	done := make(chan error, 1)
	go func() { done <- l.WaitClosed(t.Context()) }() // ends when c closes or the test's context does
	c.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitClosed after the last Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("WaitClosed still waiting after the last connection closed")
	}
}
