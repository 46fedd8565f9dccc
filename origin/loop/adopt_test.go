//go:build linux

package loop_test

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/origin/loop"
)

// lowerIO is a ConnIO standing in for a kTLS socket's: what it reads is
// not the peer's bytes as sent (here: lowered, where the kernel would
// decrypt), and its close says a last word first (a close_notify).
type lowerIO struct {
	fd      int
	closing atomic.Int32
	busy    int32 // Closing's first calls find no room for the last word
}

func (l *lowerIO) Read(p []byte) (int, error) {
	n, err := unix.Read(l.fd, p)
	if n > 0 {
		copy(p, bytes.ToLower(p[:n]))
	}
	return n, err
}

func (l *lowerIO) Closing() bool {
	n := l.closing.Add(1)
	switch {
	case n <= l.busy:
		return false
	case n == l.busy+1:
		unix.Write(l.fd, []byte("<closing>"))
	}
	return true
}

// viewed is how the engine's NetConn shows a connection whose ConnIO has
// a view of its own.
type viewed struct{ net.Conn }

func (l *lowerIO) View(c net.Conn) net.Conn { return viewed{c} }

// ioHandler is lineHandler that also checks, at accept, that an adopted
// connection carries its ConnIO and that NetConn is its view.
type ioHandler struct {
	lineHandler
	sawIO, sawView atomic.Bool
}

func (h *ioHandler) Accept(c *loop.Conn) bool {
	_, isLower := c.IO().(*lowerIO)
	_, isView := c.NetConn().(viewed)
	h.sawIO.Store(isLower)
	h.sawView.Store(isView)
	return true
}

// TestAdoptIO: an engine serving no listener serves a connection
// adopted with a ConnIO: requests are what the ConnIO reads (lowered
// here, as the kernel decrypts a kTLS socket's records), the Handler
// finds the ConnIO and its view, responses go out as on any connection,
// and the ConnIO's last word precedes the close, once; when the socket
// has no room for it at first, the close waits until it has.
func TestAdoptIO(t *testing.T) {
	for _, busy := range []int32{0, 2} {
		t.Run(fmt.Sprintf("busy%d", busy), func(t *testing.T) { testAdoptIO(t, busy) })
	}
}

func testAdoptIO(t *testing.T, busy int32) {
	h := &ioHandler{}
	e, err := loop.New(loop.Config{Loops: 1, Handler: h, ReadBuffer: 4096})
	if err != nil {
		t.Fatal(err)
	}
	if e.Serving() {
		t.Fatal("Serving before Serve")
	}
	serveEngine(t, e, nil)
	if !e.WaitServing(5 * time.Second) {
		t.Fatal("the loops of an engine serving no listener did not start")
	}

	client, server := tcpPair(t)
	defer client.Close()
	fd := dupFD(t, server)
	io1 := &lowerIO{fd: fd, busy: busy}
	if err := e.AdoptIO(fd, io1); err != nil {
		t.Fatalf("AdoptIO: %v", err)
	}
	server.Close()
	client.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(client, "MEM 5\nCLOSE\n"); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(client)
	if err != nil {
		t.Fatalf("reading the adopted connection: %v", err)
	}
	if want := "mmmmmbye\n<closing>"; string(got) != want {
		t.Errorf("adopted connection answered %q, want %q", got, want)
	}
	if n := io1.closing.Load(); n < busy+1 {
		t.Errorf("Closing called %d times, want at least %d", n, busy+1)
	}
	if !h.sawIO.Load() || !h.sawView.Load() {
		t.Errorf("at accept: Conn.IO was the ConnIO: %v; NetConn its view: %v", h.sawIO.Load(), h.sawView.Load())
	}
}

// tcpPair is a connected pair of loopback TCP sockets.
func tcpPair(t *testing.T) (client net.Conn, server *net.TCPConn) {
	t.Helper()
	ln, err := net.ListenTCP("tcp", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if server, err = ln.AcceptTCP(); err != nil {
		client.Close()
		t.Fatal(err)
	}
	return client, server
}

// dupFD is a duplicate of c's descriptor, for the engine to own.
func dupFD(t *testing.T, c *net.TCPConn) int {
	t.Helper()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	fd := -1
	var derr error
	if err := raw.Control(func(s uintptr) { fd, derr = unix.FcntlInt(s, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		t.Fatal(err)
	}
	if derr != nil {
		t.Fatal(derr)
	}
	return fd
}

// TestAdoptIODrain: an idle adopted connection closed by Shutdown gets
// its ConnIO's last word too, waiting for room for it.
func TestAdoptIODrain(t *testing.T) {
	h := &ioHandler{}
	e, err := loop.New(loop.Config{Loops: 1, Handler: h, ReadBuffer: 4096})
	if err != nil {
		t.Fatal(err)
	}
	stop := serveEngine(t, e, nil)
	if !e.WaitServing(5 * time.Second) {
		t.Fatal("the loops did not start")
	}
	client, server := tcpPair(t)
	defer client.Close()
	fd := dupFD(t, server)
	server.Close()
	io1 := &lowerIO{fd: fd, busy: 2}
	if err := e.AdoptIO(fd, io1); err != nil {
		t.Fatalf("AdoptIO: %v", err)
	}
	client.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(client, "MEM 5\n"); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, 5)
	if _, err := io.ReadFull(client, got); err != nil || string(got) != "mmmmm" {
		t.Fatalf("answer %q, %v; want mmmmm", got, err)
	}
	stop()
	rest, err := io.ReadAll(client)
	if err != nil || string(rest) != "<closing>" {
		t.Errorf("after Shutdown the idle connection read %q, %v; want %q, then EOF", rest, err, "<closing>")
	}
}
