package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Every server runs with the privileges the shipped systemd unit gives
// (deploy/segorigin.service: DynamicUser=, AmbientCapabilities= and
// CapabilityBoundingSet= of CAP_NET_BIND_SERVICE alone): a user other
// than root, with CAP_NET_BIND_SERVICE as its only capability. Without
// CAP_NET_ADMIN the kernel does not load the tls module on demand for
// setsockopt(TCP_ULP, "tls"): it must be loaded beforehand, which the
// Debian package does by a modules-load.d entry.
const serverUID = 65534 // nobody

// serverCaps is the servers' capability set, as CapEff in
// /proc/PID/status shows it.
const serverCaps = uint64(1) << unix.CAP_NET_BIND_SERVICE

// modulesLoadDirs are where systemd-modules-load reads *.conf files
// (modules-load.d(5)); the host puts the package's file in the first.
var modulesLoadDirs = []string{"/usr/lib/modules-load.d", "/etc/modules-load.d"}

// unprivileged is how the client starts a server: as serverUID with
// serverCaps ambient, so they survive the exec as its only capabilities.
func unprivileged() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{
		Credential:  &syscall.Credential{Uid: serverUID, Gid: serverUID},
		AmbientCaps: []uintptr{unix.CAP_NET_BIND_SERVICE},
	}
}

// checkPrivileges: the process pid runs as serverUID with exactly
// serverCaps effective and permitted.
func checkPrivileges(pid int) error {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return err
	}
	fields := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			fields[k] = strings.TrimSpace(v)
		}
	}
	if uid := strings.Fields(fields["Uid"]); len(uid) == 0 || uid[0] != strconv.Itoa(serverUID) {
		return fmt.Errorf("server pid %d runs as uid %q, want %d", pid, fields["Uid"], serverUID)
	}
	for _, set := range []string{"CapEff", "CapPrm"} {
		v, err := strconv.ParseUint(fields[set], 16, 64)
		if err != nil || v != serverCaps {
			return fmt.Errorf("server pid %d: %s %q, want %016x (CAP_NET_BIND_SERVICE only)", pid, set, fields[set], serverCaps)
		}
	}
	return nil
}

// ulpListed reports whether the kernel lists the tls upper-layer
// protocol, that is whether the tls module is loaded.
func ulpListed() (bool, error) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/tcp_available_ulp")
	if err != nil {
		return false, err
	}
	return slices.Contains(strings.Fields(string(b)), "tls"), nil
}

// checkNoModule starts a server with the unit's privileges before the
// tls module is loaded, on ports 80 and 443 (which take
// CAP_NET_BIND_SERVICE): it must serve with kTLS off, log exactly one
// line saying how to load the module (and that it lacks CAP_NET_ADMIN),
// and the kernel must not have loaded the module for it, though it has a
// modprobe to do so with.
func (e *env) checkNoModule() error {
	if on, err := ulpListed(); err != nil || on {
		return fmt.Errorf("tls loaded before the check (%v): the guest must boot without it", err)
	}
	cmd := exec.Command(e.server, "-listen", "127.0.0.1:80", "-tls-listen", "127.0.0.1:443", "-tls-dev",
		"-root", mediaDir, "-log-format", "json", "-drain-timeout", "5s")
	cmd.SysProcAttr = unprivileged()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	lines := make(chan []map[string]any, 1)
	go func() { // ends at the server's exit (EOF on stderr)
		var got []map[string]any
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				got = append(got, m)
			}
		}
		lines <- got
	}()
	// The server is ready once its listening lines are out; give it the
	// start-up time the others get, then stop it.
	start := time.Now()
	perr := waitListening(cmd.Process.Pid, []string{"127.0.0.1:80", "127.0.0.1:443"}, startTimeout)
	if perr == nil {
		perr = checkPrivileges(cmd.Process.Pid)
	}
	listening := time.Since(start)
	cmd.Process.Signal(syscall.SIGTERM)
	var logs []map[string]any
	select {
	case logs = <-lines:
	case <-time.After(startTimeout):
		cmd.Process.Kill()
		logs = <-lines
	}
	werr := cmd.Wait()
	if perr != nil {
		return fmt.Errorf("%w; logs: %v", perr, logs)
	}
	if werr != nil {
		return fmt.Errorf("server exit after SIGTERM: %v; logs: %v", werr, logs)
	}
	var hints, paths []map[string]any
	for _, m := range logs {
		msg, _ := m["msg"].(string)
		switch {
		case strings.Contains(msg, "tls module is not loaded"):
			hints = append(hints, m)
		case msg == "body paths":
			paths = append(paths, m)
		}
	}
	if len(paths) != 1 || paths[0]["ktls"] != false {
		return fmt.Errorf("body paths lines %v: want one, with ktls=false", paths)
	}
	if len(hints) != 1 {
		return fmt.Errorf("%d lines saying the tls module is not loaded, want 1: %v", len(hints), logs)
	}
	msg := hints[0]["msg"].(string)
	if !strings.Contains(msg, "modprobe tls") || !strings.Contains(msg, "/etc/modules-load.d/") || hints[0]["cap_net_admin"] != false {
		return fmt.Errorf("the line %v does not say how to load the module, or says the server has CAP_NET_ADMIN", hints[0])
	}
	if on, err := ulpListed(); err != nil || on {
		return fmt.Errorf("the kernel loaded tls for the unprivileged server (listed %v, %v)", on, err)
	}
	e.rep.Info("unprivileged server without the tls module: listening after %.1f s, exited %.1f s after SIGTERM: %s",
		listening.Seconds(), (time.Since(start) - listening).Seconds(), msg)
	return nil
}

// waitListening waits until pid has a listening TCP socket on each addr
// (the server logs its listening lines once they are bound; reading
// /proc/net/tcp keeps this independent of the log), or d passes.
func waitListening(pid int, addrs []string, d time.Duration) error {
	deadline := time.Now().Add(d)
	for {
		missing, err := notListening(addrs)
		if err == nil && len(missing) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server pid %d not listening on %v within %v (%v)", pid, missing, d, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// notListening returns those of addrs (127.0.0.1:port) no socket listens on.
func notListening(addrs []string) ([]string, error) {
	b, err := os.ReadFile("/proc/net/tcp")
	if err != nil {
		return addrs, err
	}
	var missing []string
	for _, a := range addrs {
		_, port, _ := strings.Cut(a, ":")
		p, err := strconv.Atoi(port)
		if err != nil {
			return addrs, err
		}
		// local_address 0100007F:0050 (127.0.0.1:80), state 0A (LISTEN).
		want := fmt.Sprintf(" 0100007F:%04X 00000000:0000 0A ", p)
		if !strings.Contains(string(b), want) {
			missing = append(missing, a)
		}
	}
	return missing, nil
}

// modulesLoad does what systemd-modules-load does at boot, before any
// service starts: modprobe each module named in the modules-load.d
// files (the package's among them), '#' and ';' lines being comments.
// Then the kernel must list tls.
func (e *env) modulesLoad() error {
	var names []string
	for _, dir := range modulesLoadDirs {
		confs, _ := filepath.Glob(filepath.Join(dir, "*.conf"))
		for _, conf := range confs {
			b, err := os.ReadFile(conf)
			if err != nil {
				return err
			}
			for _, line := range strings.Split(string(b), "\n") {
				if l := strings.TrimSpace(line); l != "" && l[0] != '#' && l[0] != ';' {
					names = append(names, l)
				}
			}
		}
	}
	if len(names) == 0 {
		return fmt.Errorf("no module named in %v", modulesLoadDirs)
	}
	for _, name := range names {
		if out, err := exec.Command("/sbin/modprobe", name).CombinedOutput(); err != nil {
			return fmt.Errorf("modprobe %s: %v: %s", name, err, out)
		}
	}
	on, err := ulpListed()
	if err == nil && !on {
		err = errors.New("modprobe succeeded but the kernel does not list tls")
	}
	if err != nil {
		return err
	}
	e.rep.Info("modules-load.d: modprobe %s", strings.Join(names, " "))
	return nil
}
