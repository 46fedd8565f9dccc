package main

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// TestFlood: both senders reach a server and stop at the deadline. The
// stand-in answers every request with a 400, closing after an
// unparseable one as fasthttp does, keeping the connection otherwise.
func TestFlood(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { // ends when ln closes
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // ends when the client closes or goes quiet
				defer c.Close()
				c.SetDeadline(time.Now().Add(5 * time.Second))
				br := bufio.NewReader(c)
				for {
					line, err := br.ReadString('\n')
					if err != nil {
						return
					}
					if strings.HasPrefix(line, "GARBAGE") {
						c.Write([]byte("HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 16\r\n\r\n400 Bad Request\n"))
						return
					}
					if line == "\r\n" {
						if _, err := c.Write([]byte("HTTP/1.1 400 Bad Request\r\nContent-Length: 16\r\n\r\n400 Bad Request\n")); err != nil {
							return
						}
					}
				}
			}()
		}
	}()
	malformed, bad := flood(ln.Addr().String(), 200*time.Millisecond, 1)
	if malformed == 0 || bad == 0 {
		t.Errorf("flood sent %d malformed, %d bad paths; want both > 0", malformed, bad)
	}
}
