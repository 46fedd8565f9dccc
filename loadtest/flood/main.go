// Command flood sends requests an origin must refuse, as fast as it can, to
// measure what refusals cost in log volume: -conns connections each send an
// unparseable request on a fresh connection (fasthttp answers 400 and
// closes), and -conns keep-alive connections each send GETs of a path with
// a broken percent escape (400 from the handler). It prints how many of
// each it sent; compare with the server's segorigin_bad_requests_total and
// segorigin_bad_paths_total, and with the size of its log.
//
// Usage:
//
//	go run ./loadtest/flood -addr 127.0.0.1:8080 -duration 10s [-conns 4]
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "server `address`")
	dur := flag.Duration("duration", 10*time.Second, "how long to flood")
	conns := flag.Int("conns", 4, "connections of each kind")
	flag.Parse()
	malformed, badPaths := flood(*addr, *dur, *conns)
	fmt.Printf("malformed %d bad_paths %d\n", malformed, badPaths)
	if malformed+badPaths == 0 {
		fmt.Fprintln(os.Stderr, "flood: no request sent: is the server at", *addr, "?")
		os.Exit(1)
	}
}

// flood runs both kinds of sender until d has passed; it returns the
// requests each sent. Every sender goroutine ends by the deadline.
func flood(addr string, d time.Duration, conns int) (malformed, badPaths int64) {
	var nMalformed, nBad atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range conns {
		wg.Go(func() { sendMalformed(addr, end, &nMalformed) })
		wg.Go(func() { sendBadPaths(addr, end, &nBad) })
	}
	wg.Wait()
	return nMalformed.Load(), nBad.Load()
}

// sendMalformed sends one unparseable request per connection: fasthttp
// logs a line quoting the request's bytes for each such connection.
func sendMalformed(addr string, end time.Time, n *atomic.Int64) {
	pad := strings.Repeat("P", 64)
	for time.Now().Before(end) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			return
		}
		c.SetDeadline(end.Add(time.Second))
		fmt.Fprintf(c, "GARBAGE-%d \x01\x02 %s\r\n\r\n", n.Add(1), pad)
		io.Copy(io.Discard, c)
		c.Close()
	}
}

// sendBadPaths sends GETs of a path with a broken escape on one keep-alive
// connection, reading each answer's header and its 16-byte body.
func sendBadPaths(addr string, end time.Time, n *atomic.Int64) {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return
	}
	defer c.Close()
	c.SetDeadline(end.Add(time.Second))
	br := bufio.NewReader(c)
	for time.Now().Before(end) {
		fmt.Fprintf(c, "GET /bad%%zz/%d HTTP/1.1\r\nHost: flood\r\n\r\n", n.Add(1))
		length := 0
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			if line == "\r\n" {
				break
			}
			fmt.Sscanf(strings.ToLower(line), "content-length: %d", &length)
		}
		if _, err := br.Discard(length); err != nil {
			return
		}
	}
}
