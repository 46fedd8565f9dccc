package main

import (
	"net"
	"os"
	"strconv"
	"strings"
)

// playURL is the base URL a player reaches a listener by, logged at start
// ("url"): a playlist at <root>/hls/master.m3u8 plays at
// <url>hls/master.m3u8. A wildcard address (0.0.0.0, ::) is named by the
// machine's host name, since it answers on every address; the scheme's
// default port is left out.
func playURL(scheme string, addr net.Addr) string {
	tcp, ok := addr.(*net.TCPAddr)
	if !ok {
		return scheme + "://" + addr.String() + "/"
	}
	host := tcp.IP.String()
	if tcp.IP.IsUnspecified() {
		if name, err := os.Hostname(); err == nil && name != "" {
			host = name
		} else {
			host = "localhost"
		}
	}
	hostPort := net.JoinHostPort(host, strconv.Itoa(tcp.Port))
	if (scheme == "http" && tcp.Port == 80) || (scheme == "https" && tcp.Port == 443) {
		hostPort = strings.TrimSuffix(hostPort, ":"+strconv.Itoa(tcp.Port))
	}
	return scheme + "://" + hostPort + "/"
}
