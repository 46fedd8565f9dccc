package origin_test

import (
	"bytes"
	"fmt"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/fixtures/llpack"
	"segorigin/internal/testwait"
	"segorigin/origin"
)

// parkedClients is how many blocking reloads TestParkedRequestAlloc
// parks at once.
const parkedClients = 2000

// parkedBudget is the most a parked blocking reload may cost the server's
// heap on the event loops, beyond what its connection costs idle.
const parkedBudget = 1024

// parkedRequest is a blocking reload as a browser's player sends it: the
// size of its header is most of what a parked request keeps.
const parkedRequest = "GET %s HTTP/1.1\r\nHost: origin.test\r\n" +
	"User-Agent: Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36\r\n" +
	"Accept: */*\r\nAccept-Language: en-US,en;q=0.9\r\nSec-Fetch-Mode: cors\r\nSec-Fetch-Site: cross-site\r\n" +
	"Origin: https://player.example\r\nReferer: https://player.example/live/\r\n\r\n"

// TestParkedRequestAlloc: 2,000 blocking reloads parked on the event
// loops cost the server's heap at most parkedBudget bytes each beyond
// their idle connections, and every one is answered with the playlist
// that satisfies it once the packager renames it in. The clients are raw
// sockets (no Go heap of their own), so the heap's growth is the
// server's.
func TestParkedRequestAlloc(t *testing.T) {
	if origin.RaceEnabled {
		t.Skip("the race detector's shadow memory and dropped pools make a heap budget meaningless")
	}
	m := measureParked(t, origin.EngineLoop, parkedClients)
	if m.request > parkedBudget {
		t.Errorf("a parked blocking reload costs %d bytes of heap beyond its connection, want at most %d", m.request, parkedBudget)
	}
}

// TestParkedRequestAllocStream: the same on the stream transport, whose
// connection is a goroutine with its read buffer (its stack is not in the
// heap: see the log for what the heap holds); its budget is the loops'
// and a goroutine's smallest stack.
func TestParkedRequestAllocStream(t *testing.T) {
	if origin.RaceEnabled {
		t.Skip("the race detector's shadow memory and dropped pools make a heap budget meaningless")
	}
	m := measureParked(t, origin.EngineFastHTTP, parkedClients/4)
	if m.request > parkedBudget {
		t.Errorf("a parked blocking reload costs %d bytes of heap beyond its connection, want at most %d", m.request, parkedBudget)
	}
}

// parkedCost is the server's heap per connection: idle, and the more a
// parked blocking reload on it adds.
type parkedCost struct{ conn, request, stack int64 }

// measureParked opens n connections to a server of engine, parks a
// blocking reload on each and answers them; it returns the server's heap
// per connection and per parked request.
func measureParked(t testing.TB, engine origin.Engine, n int) parkedCost {
	root := t.TempDir()
	ts := startServer(t, root, func(c *origin.Config) {
		c.Engine = engine
		c.MaxConns = 4 * n
	})
	p := startPackager(t, root, llpack.Config{TargetDuration: 4, Parts: 4}, 5)
	target := blockingTarget(p)
	addr := ts.tcpAddr(t)
	req := []byte(fmt.Sprintf(parkedRequest, target))
	// A warm-up request sizes the server's pools and caches first.
	ts.get(target[:len("/live/live.m3u8")])
	before, stack0 := heapInUse()
	fds := make([]int, 0, n)
	t.Cleanup(func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	})
	for range n {
		fds = append(fds, rawDial(t, addr))
	}
	testwait.For(t, 30*time.Second, fmt.Sprintf("%d connections open", n), func() bool { return ts.srv.Stats().ConnsOpen >= int64(n) })
	idle, stack1 := heapInUse()
	for _, fd := range fds {
		if _, err := unix.Write(fd, req); err != nil {
			t.Fatal(err)
		}
	}
	testwait.For(t, 30*time.Second, fmt.Sprintf("%d requests parked", n), func() bool { return origin.LiveWaiters(ts.srv) == n })
	parked, _ := heapInUse()
	m := parkedCost{conn: (idle - before) / int64(n), request: (parked - idle) / int64(n), stack: (stack1 - stack0) / int64(n)}
	t.Logf("%s: heap %d bytes, %d with %d idle connections (%d each, and %d of goroutine stack), %d with a blocking reload parked on each (%d each more, %d in all)",
		engine, before, idle, n, m.conn, m.stack, parked, m.request, m.conn+m.request)
	if err := p.Publish(); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("Content-Length: %d\r\n", len(p.Published()))
	buf := make([]byte, 64<<10)
	for i, fd := range fds {
		got := rawReadHeader(t, fd, buf)
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") || !strings.Contains(got, want) ||
			!strings.Contains(got, "Access-Control-Allow-Origin: ") {
			t.Fatalf("client %d got %q, want 200 with %q and the CORS fields", i, got, want)
		}
	}
	return m
}

// heapInUse is the live heap and the goroutine stacks in use after two
// collections.
func heapInUse() (heap, stack int64) {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse)
}

// tcpAddr is ts's listener as a socket address.
func (ts *testServer) tcpAddr(t testing.TB) *unix.SockaddrInet4 {
	a, err := net.ResolveTCPAddr("tcp4", ts.addr)
	if err != nil {
		t.Fatal(err)
	}
	sa := &unix.SockaddrInet4{Port: a.Port}
	copy(sa.Addr[:], a.IP.To4())
	return sa
}

// rawDial connects a blocking socket to addr, outside Go's runtime.
func rawDial(t testing.TB, addr *unix.SockaddrInet4) int {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(fd, addr); err != nil {
		unix.Close(fd)
		t.Fatal(err)
	}
	tv := unix.Timeval{Sec: 10}
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		t.Fatal(err)
	}
	return fd
}

// rawReadHeader reads from fd until the end of a response header (or 10 s
// without bytes) and returns what arrived.
func rawReadHeader(t testing.TB, fd int, buf []byte) string {
	n := 0
	for n < len(buf) {
		m, err := unix.Read(fd, buf[n:])
		if err == unix.EINTR {
			// A read with SO_RCVTIMEO is not restarted after a
			// signal (the runtime's preemption) has run.
			continue
		}
		if err != nil || m == 0 {
			t.Fatalf("reading the answer after %q: %v", buf[:n], err)
		}
		n += m
		if bytes.Contains(buf[:n], []byte("\r\n\r\n")) {
			break
		}
	}
	return string(buf[:n])
}
