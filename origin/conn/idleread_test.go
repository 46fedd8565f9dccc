package conn

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// TestWaitBeforeReadLosesWakeup is why a keep-alive connection still pays
// one read(2) that returns EAGAIN before it parks (see the package doc,
// "The idle read"). Waiting for readability before reading, through the
// only public hook, syscall.RawConn.Read with a callback that declines its
// first call, misses a request that arrived while the server was busy:
// RawRead resets the poller's readiness before that first call, and the
// edge-triggered epoll reports no new event for data already there, so the
// read would wait for the idle timeout with the request in the socket.
//
// If this test ever fails, Go's poller keeps readiness across RawConn.Read
// and the EAGAIN read can go.
func TestWaitBeforeReadLosesWakeup(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	sc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	raw, err := sc.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	const attempts = 20
	lost := 0
	for range attempts {
		// The next request arrives while the server is still busy with
		// the previous response; the poller sees it meanwhile.
		if _, err := client.Write([]byte("GET / HTTP/1.1\r\nHost: t\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2 * time.Millisecond)
		// The wait-first read, bounded so the test ends.
		sc.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		first := true
		err := raw.Read(func(uintptr) bool {
			if first {
				first = false
				return false // wait for readability before reading
			}
			return true
		})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			lost++
		} else if err != nil {
			t.Fatal(err)
		}
		sc.SetReadDeadline(time.Time{})
		if _, err := sc.Read(buf); err != nil { // the request was there all along
			t.Fatal(err)
		}
	}
	t.Logf("wait-before-read missed a waiting request %d of %d times", lost, attempts)
	if lost == 0 {
		t.Errorf("wait-before-read never missed a request that was already in the socket: Go's poller may now keep readiness across RawConn.Read; revisit the EAGAIN read")
	}
}
