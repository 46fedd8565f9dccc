//go:build linux

package loop_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/internal/testwait"
	"segorigin/origin/loop"
)

// lineHandler is a tiny protocol over the loop: each request is a line
// "mem N" (answered with N bytes 'm'), "file OFF LEN" (LEN bytes of the
// test file from OFF, by sendfile, after a 4-byte prefix "ok\r\n"),
// "park" (answered "parked\n" from another goroutine), "hold" (parked
// until the client leaves, never answered), or "close" (answered "bye\n",
// then the connection closes).
type lineHandler struct {
	file    *os.File
	closed  atomic.Int64
	pending sync.WaitGroup
	mu      sync.Mutex // protects errs
	errs    []error
}

type lineResp struct {
	resp loop.Response
	head []byte
}

func (h *lineHandler) Accept(c *loop.Conn) bool { return true }
func (h *lineHandler) Closed(c *loop.Conn)      { h.closed.Add(1) }
func (h *lineHandler) Timeout(c *loop.Conn, reading bool) {
	if reading {
		r := &lineResp{head: []byte("timeout\n")}
		r.resp.Parts = []loop.Part{{Mem: r.head}}
		c.Send(&r.resp)
	}
}

func (h *lineHandler) Data(c *loop.Conn, in []byte, full bool) int {
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		if full && len(in) < 1<<20 {
			c.Grow(2 * len(in)) // a long line: room for more
		}
		return 0
	}
	var verb string
	var a, b int64
	fmt.Sscan(string(in[:i]), &verb, &a, &b)
	r := &lineResp{}
	switch verb {
	case "mem":
		r.head = bytes.Repeat([]byte("m"), int(a))
		r.resp.Parts = []loop.Part{{Mem: r.head}}
	case "file":
		r.head = []byte("ok\r\n")
		r.resp.Parts = []loop.Part{{Mem: r.head}, {Fd: int(h.file.Fd()), Off: a, Len: b}}
	case "park":
		c.Park()
		h.pending.Add(1)
		go func() {
			defer h.pending.Done()
			time.Sleep(10 * time.Millisecond)
			c.Post(func() {
				r.resp.Parts = []loop.Part{{Mem: []byte("parked\n")}}
				c.Send(&r.resp)
				c.Continue()
			})
		}()
		return i + 1
	case "hold":
		c.ParkUntilGone()
		return i + 1
	case "holdpost": // a blocking reload: held until gone, answered a moment later
		c.ParkUntilGone()
		h.pending.Add(1)
		go func() {
			defer h.pending.Done()
			time.Sleep(time.Duration(a) * time.Millisecond)
			c.Post(func() {
				if c.Closed() {
					return
				}
				r.resp.Parts = []loop.Part{{Mem: []byte("held\n")}}
				c.Send(&r.resp)
				c.Continue()
			})
		}()
		return i + 1
	case "body": // a line, then a bytes of body: answered "ok" once all are in
		if len(in) < i+1+int(a) {
			c.Grow(i + 1 + int(a))
			return 0
		}
		r.resp.Parts = []loop.Part{{Mem: []byte("ok")}}
		c.Send(&r.resp)
		return i + 1 + int(a)
	case "close":
		r.resp.Parts = []loop.Part{{Mem: []byte("bye\n")}}
		r.resp.Close = true
	default:
		h.mu.Lock()
		h.errs = append(h.errs, fmt.Errorf("unknown request %q", in[:i]))
		h.mu.Unlock()
		c.Abort(false)
		return 0
	}
	c.Send(&r.resp)
	return i + 1
}

// startLoop serves h on 127.0.0.1:0 until the test ends.
func startLoop(t *testing.T, h *lineHandler, mod func(*loop.Config)) (string, *loop.Engine) {
	t.Helper()
	cfg := loop.Config{Loops: 2, Handler: h, ReadBuffer: 4096, Poller: os.Getenv("TEST_POLLER")}
	if mod != nil {
		mod(&cfg)
	}
	e, err := loop.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { // after serveEngine's (cleanups run last first)
		ln.Close()
		h.pending.Wait()
		for _, err := range h.errs {
			t.Error(err)
		}
	})
	serveEngine(t, e, ln)
	return ln.Addr().String(), e
}

// serveEngine serves ln (nil: adopted connections only) with e until
// stop, or the test's cleanup, shuts it down and checks that both end
// cleanly.
func serveEngine(t *testing.T, e *loop.Engine, ln *net.TCPListener) (stop func()) {
	done := make(chan error, 1)
	go func() { done <- e.Serve(ln) }()
	stop = sync.OnceFunc(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := e.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	t.Cleanup(stop)
	return stop
}

func testFile(t *testing.T, size int) (*os.File, []byte) {
	t.Helper()
	data := make([]byte, size)
	for i := range data {
		data[i] = byte(i*7 + i/251)
	}
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, data
}

// TestPipelinedInOrder: requests written at once, answers in order, byte
// for byte, large sendfile spans (beyond the socket buffer) included.
func TestPipelinedInOrder(t *testing.T) {
	f, data := testFile(t, 8<<20)
	h := &lineHandler{file: f}
	addr, _ := startLoop(t, h, func(c *loop.Config) { c.Window = 1 << 20 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var req bytes.Buffer
	var want bytes.Buffer
	for i := range 40 {
		switch i % 4 {
		case 0:
			fmt.Fprintf(&req, "mem %d\n", 100+i)
			want.Write(bytes.Repeat([]byte("m"), 100+i))
		case 1:
			off, n := int64(i*1000), int64(3<<20)
			fmt.Fprintf(&req, "file %d %d\n", off, n)
			want.WriteString("ok\r\n")
			want.Write(data[off : off+n])
		case 2:
			req.WriteString("park\n")
			want.WriteString("parked\n")
		case 3:
			fmt.Fprintf(&req, "file %d %d\n", i, 10)
			want.WriteString("ok\r\n")
			want.Write(data[i : i+10])
		}
	}
	req.WriteString("close\n")
	want.WriteString("bye\n")
	go c.Write(req.Bytes())
	c.SetDeadline(time.Now().Add(20 * time.Second))
	got, err := io.ReadAll(bufio.NewReader(c))
	if err != nil {
		t.Fatalf("reading the answers: %v", err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		i := 0
		for i < len(got) && i < want.Len() && got[i] == want.Bytes()[i] {
			i++
		}
		t.Fatalf("answers: %d bytes, want %d; first difference at %d", len(got), want.Len(), i)
	}
}

// TestReadTimeout: a request that never completes is answered by the
// Handler's Timeout and closed; an idle connection is closed silently.
func TestReadTimeout(t *testing.T) {
	h := &lineHandler{}
	addr, _ := startLoop(t, h, func(c *loop.Config) {
		c.ReadTimeout, c.IdleTimeout = 300*time.Millisecond, 300*time.Millisecond
	})
	partial, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	partial.Write([]byte("mem 1"))
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	idle.Write([]byte("mem 3\n"))
	for _, tc := range []struct {
		c    net.Conn
		want string
	}{{partial, "timeout\n"}, {idle, "mmm"}} {
		tc.c.SetDeadline(time.Now().Add(5 * time.Second))
		got, err := io.ReadAll(tc.c)
		if err != nil || string(got) != tc.want {
			t.Errorf("read until close = %q, %v; want %q, nil", got, err, tc.want)
		}
	}
}

// TestParkUntilGone: a connection parked until its client leaves is
// closed at the client's FIN (its read sees EOF, Closed runs) while one
// parked beside it stays open until its client closes too.
func TestParkUntilGone(t *testing.T) {
	h := &lineHandler{}
	addr, _ := startLoop(t, h, nil)
	var conns [2]*net.TCPConn
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i] = c.(*net.TCPConn)
		if _, err := c.Write([]byte("hold\n")); err != nil {
			t.Fatal(err)
		}
	}
	if err := conns[0].CloseWrite(); err != nil {
		t.Fatal(err)
	}
	conns[0].SetDeadline(time.Now().Add(5 * time.Second))
	if got, err := io.ReadAll(conns[0]); err != nil || len(got) != 0 {
		t.Fatalf("read after FIN = %q, %v; want the server's close at once", got, err)
	}
	testwait.For(t, 5*time.Second, "Closed for the client that left", func() bool { return h.closed.Load() == 1 })
	conns[1].Close()
	testwait.For(t, 5*time.Second, "Closed for the second", func() bool { return h.closed.Load() == 2 })
}

// TestParkUntilGoneAnswered: a request parked until its client leaves
// and then answered leaves the connection serving: the next request is
// read and answered, and so is one the client sent while the first was
// held (it is not taken for the client leaving), in order.
func TestParkUntilGoneAnswered(t *testing.T) {
	h := &lineHandler{}
	addr, _ := startLoop(t, h, nil)
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	expect := func(want string) {
		t.Helper()
		got := make([]byte, len(want))
		if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
			t.Fatalf("read %q, %v; want %q", got, err, want)
		}
	}
	fmt.Fprint(c, "holdpost 20\n")
	expect("held\n")
	fmt.Fprint(c, "mem 3\n")
	expect("mmm")
	fmt.Fprint(c, "holdpost 50\n")
	time.Sleep(10 * time.Millisecond) // parked by now, most likely
	fmt.Fprint(c, "mem 2\n")
	expect("held\n")
	expect("mm")
	if n := h.closed.Load(); n != 0 {
		t.Fatalf("Closed ran %d times with the client still there", n)
	}
}

// TestDrain: Shutdown closes idle connections at once and lets a response
// in flight finish.
func TestDrain(t *testing.T) {
	f, data := testFile(t, 16<<20)
	h := &lineHandler{file: f}
	addr, e := startLoop(t, h, nil)
	idle, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer idle.Close()
	busy, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	fmt.Fprintf(busy, "file 0 %d\n", len(data))
	br := bufio.NewReaderSize(busy, 4)
	busy.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.Peek(4); err != nil { // the response has begun
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		done <- e.Shutdown(ctx)
	}()
	idle.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("idle connection during the drain: read %d, %v; want EOF", n, err)
	}
	got, err := io.ReadAll(br)
	if err != nil || len(got) != 4+len(data) || !bytes.Equal(got[4:], data) {
		t.Errorf("response in flight during the drain: %d bytes, %v; want %d whole", len(got), err, 4+len(data))
	}
	if err := <-done; err != nil {
		t.Errorf("Shutdown: %v", err)
	}
	if n := h.closed.Load(); n != 2 {
		t.Errorf("Closed called %d times, want 2", n)
	}
}

// TestManyIdleConnections: a thousand idle keep-alive connections are
// all answered again after an idle spell (nothing lost, no buffer held).
func TestManyIdleConnections(t *testing.T) {
	h := &lineHandler{}
	addr, e := startLoop(t, h, nil)
	conns := make([]net.Conn, 1000)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatalf("dial %d: %v", i, err)
		}
		defer c.Close()
		conns[i] = c
	}
	for round := range 2 {
		for i, c := range conns {
			fmt.Fprintf(c, "mem %d\n", 1+i%7)
		}
		for i, c := range conns {
			c.SetDeadline(time.Now().Add(10 * time.Second))
			buf := make([]byte, 1+i%7)
			if _, err := io.ReadFull(c, buf); err != nil || string(buf) != string(bytes.Repeat([]byte("m"), len(buf))) {
				t.Fatalf("round %d conn %d: %q, %v", round, i, buf, err)
			}
		}
	}
	if got := e.Stats().Accepted.Load(); got != int64(len(conns)) {
		t.Errorf("accepted %d, want %d", got, len(conns))
	}
}

// TestAdopt: a connection accepted elsewhere and handed to the engine is
// served by a loop like one from its listener, and closed by it; Adopt
// after Shutdown refuses, and closes what it was given.
func TestAdopt(t *testing.T) {
	h := &lineHandler{}
	addr, e := startLoop(t, h, nil)
	// One request through the listener: the loops are running.
	c0, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c0.Close()
	if _, err := io.WriteString(c0, "mem 3\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(c0, make([]byte, 3)); err != nil {
		t.Fatal(err)
	}

	other, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	client, err := net.Dial("tcp", other.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	accepted, err := other.AcceptTCP()
	if err != nil {
		t.Fatal(err)
	}
	f, err := accepted.File() // a duplicate descriptor: the engine's to own
	accepted.Close()
	if err != nil {
		t.Fatal(err)
	}
	fd, err := unix.Dup(int(f.Fd()))
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Adopt(fd); err != nil {
		t.Fatalf("Adopt: %v", err)
	}
	client.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(client)
	for _, req := range []string{"mem 5\n", "close\n"} {
		if _, err := io.WriteString(client, req); err != nil {
			t.Fatal(err)
		}
	}
	got, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("reading the adopted connection: %v", err)
	}
	if string(got) != "mmmmmbye\n" {
		t.Errorf("adopted connection answered %q, want %q", got, "mmmmmbye\n")
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	wfd, err := unix.Dup(int(w.Fd()))
	w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Adopt(wfd); err == nil {
		t.Error("Adopt after Shutdown: no error")
	}
	// Its descriptor was closed: the pipe's only writer is gone.
	r.SetDeadline(time.Now().Add(5 * time.Second))
	if n, err := r.Read(make([]byte, 1)); n != 0 || err != io.EOF {
		t.Errorf("after a refused Adopt the pipe reads %d, %v: want EOF (its writer closed)", n, err)
	}
}

// TestLoopsHoldingEveryP: with as many loops as Ps, each waiting in
// epoll_wait without giving its P up, the collector still stops the
// world (its signals end the waits, which the loops take in their
// stride) and a Handler's own goroutine still runs: every answer arrives,
// whole and in order, while the collector runs over and over.
func TestLoopsHoldingEveryP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	h := &lineHandler{}
	addr, _ := startLoop(t, h, func(c *loop.Config) { c.Loops = 2 })
	stop := make(chan struct{})
	gcDone := make(chan int)
	go func() {
		n := 0
		defer func() { gcDone <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			runtime.GC()
			n++
		}
	}()
	var wg sync.WaitGroup
	for k := range 2 {
		wg.Go(func() {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Error(err)
				return
			}
			defer c.Close()
			br := bufio.NewReader(c)
			for i := range 100 {
				req, want := fmt.Sprintf("mem %d\n", 1+i%5), strings.Repeat("m", 1+i%5)
				if i%10 == k {
					req, want = "park\n", "parked\n"
				}
				c.SetDeadline(time.Now().Add(10 * time.Second))
				if _, err := io.WriteString(c, req); err != nil {
					t.Errorf("conn %d request %d: %v", k, i, err)
					return
				}
				got := make([]byte, len(want))
				if _, err := io.ReadFull(br, got); err != nil || string(got) != want {
					t.Errorf("conn %d request %d %q: got %q, %v", k, i, req, got, err)
					return
				}
				time.Sleep(time.Millisecond) // the loops wait between requests
			}
		})
	}
	wg.Wait()
	close(stop)
	if n := <-gcDone; n == 0 {
		t.Error("no collection completed while the loops served")
	}
}

// TestUringServes: the io_uring poller serves pipelined requests, parked
// responses, and a request that arrives while every loop is parked on
// the netpoller (the ring's eventfd wakes it); its counters move.
func TestUringServes(t *testing.T) {
	if _, err := loop.New(loop.Config{Handler: &lineHandler{}, Poller: loop.PollerUring}); errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("this kernel refuses io_uring: %v", err)
	}
	f, data := testFile(t, 1<<20)
	h := &lineHandler{file: f}
	addr, e := startLoop(t, h, func(c *loop.Config) { c.Poller = loop.PollerUring; c.Loops = 1 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	r := bufio.NewReader(c)
	for round := range 2 {
		if round == 1 {
			// With nothing to do and no deadline the loop parks: it
			// waits on the netpoller for the ring's eventfd.
			for i := 0; e.Stats().Parks.Load() == 0 && i < 100; i++ {
				time.Sleep(20 * time.Millisecond)
			}
			if e.Stats().Parks.Load() == 0 {
				t.Fatal("the loop never parked")
			}
		}
		fmt.Fprintf(c, "mem 5\npark\nfile 7 100000\n")
		want := "mmmmm" + "parked\n" + "ok\r\n" + string(data[7:7+100000])
		got := make([]byte, len(want))
		if _, err := io.ReadFull(r, got); err != nil {
			t.Fatalf("round %d: reading the answers: %v", round, err)
		}
		if string(got) != want {
			t.Fatalf("round %d: answers differ from what was asked", round)
		}
	}
	st := e.Stats()
	if st.UringEnters.Load() == 0 || st.UringSubmissions.Load() == 0 || st.UringCompletions.Load() == 0 || st.UringReceives.Load() == 0 {
		t.Errorf("uring counters: %d enters, %d submissions, %d completions, %d receives; want all > 0",
			st.UringEnters.Load(), st.UringSubmissions.Load(), st.UringCompletions.Load(), st.UringReceives.Load())
	}
}

// TestLongRequestGrows: a request longer than the read buffer is read
// whole once the Handler makes room for it (Grow), on either poller: on
// io_uring the bytes a receive brought that did not fit wait in its
// buffer and are reported again, as epoll reports a socket still
// readable.
func TestLongRequestGrows(t *testing.T) {
	h := &lineHandler{}
	addr, _ := startLoop(t, h, func(c *loop.Config) { c.Loops = 1 })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	long := "mem" + strings.Repeat(" ", 40000) + "3\n" // ten times the 4 KiB read buffer
	body := "body 20000\n" + strings.Repeat("x", 20000)
	if _, err := io.WriteString(c, long+"mem 2\n"+body+"mem 1\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 8)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "mmmmmokm" {
		t.Fatalf("answers %q, %v; want %q", got, err, "mmmmmokm")
	}
}

// TestUringBuffersRunOut: on io_uring a request's bytes are received
// into one of the loop's 128 buffers, and a connection whose response is
// parked holds the buffer its next request came in. With more such
// connections than buffers, the receives that find none (ENOBUFS) leave
// the bytes in the socket for the loop to read itself: every client
// still gets both answers, in order, whole.
func TestUringBuffersRunOut(t *testing.T) {
	if _, err := loop.New(loop.Config{Handler: &lineHandler{}, Poller: loop.PollerUring}); errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		t.Skipf("this kernel refuses io_uring: %v", err)
	}
	h := &lineHandler{}
	addr, e := startLoop(t, h, func(c *loop.Config) { c.Poller = loop.PollerUring; c.Loops = 1 })
	const clients = 200 // more than the loop's buffers
	conns := make([]net.Conn, clients)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		conns[i] = c
		fmt.Fprintf(c, "holdpost 1500\n")
	}
	time.Sleep(300 * time.Millisecond) // every request parked, most likely
	for _, c := range conns {
		fmt.Fprintf(c, "mem %d\n", 3)
	}
	for i, c := range conns {
		got := make([]byte, len("held\nmmm"))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "held\nmmm" {
			t.Fatalf("client %d: %q, %v; want %q", i, got, err, "held\nmmm")
		}
	}
	if n := e.Stats().UringNoBuffers.Load(); n == 0 {
		t.Errorf("no receive found every buffer held (%d receives); the test did not test what it says", e.Stats().UringReceives.Load())
	}
}

// TestSparseRequestsPark: a loop whose requests come tens of
// milliseconds apart (paced players) answers each, and parks on Go's
// netpoller between them instead of keeping its P in epoll_wait.
func TestSparseRequestsPark(t *testing.T) {
	h := &lineHandler{}
	// epoll, whose parks are on the netpoller.
	addr, e := startLoop(t, h, func(c *loop.Config) { c.Loops = 1; c.Poller = loop.PollerEpoll })
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	const requests = 10
	parks := e.Stats().Parks.Load()
	for i := range requests {
		c.SetDeadline(time.Now().Add(10 * time.Second))
		if _, err := fmt.Fprintf(c, "mem %d\n", 10+i); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 10+i)
		if _, err := io.ReadFull(br, got); err != nil || string(got) != strings.Repeat("m", 10+i) {
			t.Fatalf("request %d: got %q, %v", i, got, err)
		}
		time.Sleep(30 * time.Millisecond) // a sparse client
	}
	if n := e.Stats().Parks.Load() - parks; n < requests/2 {
		t.Errorf("the loop parked %d times between %d requests 30 ms apart, want at least %d", n, requests, requests/2)
	}
}
