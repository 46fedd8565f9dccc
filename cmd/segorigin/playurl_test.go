package main

import (
	"net"
	"os"
	"testing"
)

func TestPlayURL(t *testing.T) {
	host, err := os.Hostname()
	if err != nil {
		t.Skip(err)
	}
	for _, tc := range []struct {
		name, scheme string
		addr         *net.TCPAddr
		want         string
	}{
		{"loopback", "http", &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 8080}, "http://127.0.0.1:8080/"},
		{"default http port", "http", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 80}, "http://192.0.2.7/"},
		{"default https port", "https", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 443}, "https://192.0.2.7/"},
		{"https on 80", "https", &net.TCPAddr{IP: net.IPv4(192, 0, 2, 7), Port: 80}, "https://192.0.2.7:80/"},
		{"wildcard", "http", &net.TCPAddr{IP: net.IPv4zero, Port: 80}, "http://" + host + "/"},
		{"wildcard v6", "http", &net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://" + net.JoinHostPort(host, "8080") + "/"},
		{"v6", "https", &net.TCPAddr{IP: net.IPv6loopback, Port: 443}, "https://[::1]/"},
		{"v6 port", "http", &net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := playURL(tc.scheme, tc.addr); got != tc.want {
				t.Errorf("playURL(%q, %v) = %q, want %q", tc.scheme, tc.addr, got, tc.want)
			}
		})
	}
}
