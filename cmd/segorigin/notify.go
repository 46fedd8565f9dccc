package main

import (
	"log/slog"
	"net"
)

// notifier tells a service manager (systemd, Type=notify) about the
// process's state: READY=1 once the listeners are bound, STOPPING=1 when
// shutdown begins, STATUS= lines between. The protocol (sd_notify(3)) is one
// datagram of "KEY=value" lines to the unix socket named by NOTIFY_SOCKET
// ("@" for the abstract namespace, which Go's net package maps itself). It
// is written here rather than taken from github.com/coreos/go-systemd:
// daemon.SdNotify is these same few lines, and a module for one function
// is more to audit than the function.
type notifier struct {
	addr *net.UnixAddr // nil: no service manager asked (NOTIFY_SOCKET unset)
	log  *slog.Logger
}

func newNotifier(socket string, log *slog.Logger) *notifier {
	n := &notifier{log: log}
	if socket != "" {
		n.addr = &net.UnixAddr{Name: socket, Net: "unixgram"}
	}
	return n
}

func (n *notifier) enabled() bool { return n.addr != nil }

// send delivers state; a failure is logged, never fatal: the service
// manager may have gone, and serving matters more.
func (n *notifier) send(state string) {
	if n.addr == nil {
		return
	}
	c, err := net.DialUnix("unixgram", nil, n.addr)
	if err == nil {
		_, err = c.Write([]byte(state))
		if cerr := c.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		n.log.Warn("systemd notify failed", "socket", n.addr.Name, "err", err)
	}
}
