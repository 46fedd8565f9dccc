package main

import (
	"bufio"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Server flags. Only the IPv6 server, which serves the write-timeout
// case, has a short write timeout (the case waits for it); the IPv4
// server's is long, so that no other response, however slow the emulated
// guest, can hit it. The drain timeout is far above what a drain here
// takes.
const (
	writeTimeout     = 3 * time.Second
	longWriteTimeout = 60 * time.Second
	drainTimeout     = 20 * time.Second
	startTimeout     = 60 * time.Second
)

// inlineMax is the servers' -inline-max, given explicitly: files of at
// most this many bytes are held by the cache and sent with their header
// in one write (path "inline"), larger ones by sendfile (path "ktls", or
// "copy" with -ktls off). The client splits what it expects by the same
// rule, from the files' sizes (play.m3u8 is inline, seg.m4s and big.ts are
// not), so the plan covers both paths whatever the default becomes.
//
// Over kTLS an inline body is still sealed by the kernel: the header and
// body go to the socket in plaintext, and after the hand-over the server
// refuses crypto/tls every write, counting ktls_write_denied, which must
// stay at the client's own count (checkMetrics); the client decrypts and
// compares every byte.
const inlineMax = 16 << 10

// server is one segorigin process.
type server struct {
	name  string // "v4" or "v6"
	ktls  string // its -ktls: auto or off
	cmd   *exec.Cmd
	https string // addresses it logged
	http  string
	admin string
	cert  []byte           // sha256 of its -tls-dev certificate, as it logged it
	sizes map[string]int64 // request path ("/seg.m4s") -> size of the file it serves
	tally tally            // what the client saw it serve

	mu     sync.Mutex // protects logs and access
	logs   []string   // stderr lines
	access []accessLine

	done    chan struct{} // closed when the process has exited and its output is read
	waitErr error         // cmd.Wait's, once done is closed
}

// accessLine is one line of the server's JSON access log
// (-access-log-format json).
type accessLine struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Status int    `json:"status"`
	Bytes  int64  `json:"bytes"`
	Via    string `json:"via"`
}

// tally counts what the client saw a server do, to compare with what the
// server says it did. Bodies are counted apart by the path they must take
// (see inlineMax): file bodies of files over -inline-max, and inline ones.
type tally struct {
	file       bodyTally    // bodies of files over -inline-max: path "ktls", or "copy" with -ktls off
	inline     bodyTally    // bodies of files of at most -inline-max: path "inline"
	aborted    atomic.Int64 // bodies cut by the client or by the write timeout, on either path
	handshakes atomic.Int64
	denied     atomic.Int64 // connections on which crypto/tls had to be refused a write (kTLS transmit only)
	keyUpdates atomic.Int64 // KeyUpdate records the client sent (kTLS: read by the kernel)
	rekeysRX   atomic.Int64 // of those, followed by the kernel (Linux 6.14)
	rekeysTX   atomic.Int64 // of those, update_requested: the server's keys changed too
	noRekey    atomic.Int64 // of those, that ended the connection (older kernels)
	closeNotes atomic.Int64 // close_notify alerts the server surely read (client-close-notify)
}

// bodyTally counts the bodies of one path.
type bodyTally struct {
	bodies   atomic.Int64 // GET responses with a file body (200, 206), whole or cut
	bytesMin atomic.Int64 // body bytes the server surely sent
	bytesMax atomic.Int64 // and at most (a cut body may have gone further than the client read)
}

// inlined reports whether the server holds the file of path in memory
// and sends it inline: as the cache decides, a non-empty file of at most
// -inline-max bytes (the default -inline-budget holds every file here).
// Only the paths of mediaFiles have bodies.
func (s *server) inlined(path string) bool {
	size := s.sizes[path]
	return size > 0 && size <= inlineMax
}

// bodiesOf is the tally a body of path counts on.
func (s *server) bodiesOf(path string) *bodyTally {
	if s.inlined(path) {
		return &s.tally.inline
	}
	return &s.tally.file
}

// body counts a whole body of n bytes of path.
func (s *server) body(path string, n int64) {
	t := s.bodiesOf(path)
	t.bodies.Add(1)
	t.bytesMin.Add(n)
	t.bytesMax.Add(n)
}

// cut counts a body of path the server could not finish: at most total
// bytes.
func (s *server) cut(path string, total int64) {
	t := s.bodiesOf(path)
	t.bodies.Add(1)
	t.bytesMax.Add(total)
	s.tally.aborted.Add(1)
}

// startServer starts segorigin on host (127.0.0.1 or [::1]) with -ktls
// mode, -write-timeout wt and -inline-max inlineMax, with the unit's
// privileges (see unprivileged), and waits for its
// listening lines, its certificate's fingerprint and its body paths line,
// which must say kTLS is on with every cipher (auto) or off.
func (e *env) startServer(name, host, mode string, wt time.Duration, extraEnv []string, extraArgs ...string) (*server, error) {
	s := &server{name: name, ktls: mode, sizes: map[string]int64{}, done: make(chan struct{})}
	for file, b := range e.media {
		s.sizes["/"+file] = int64(len(b))
	}
	s.cmd = exec.Command(e.server,
		"-listen", host+":0", "-tls-listen", host+":0", "-admin-listen", host+":0", "-tls-dev",
		"-root", mediaDir, "-settle", "0", "-ktls", mode, "-inline-max", strconv.Itoa(inlineMax),
		"-log-format", "json", "-access-log", "-", "-access-log-format", "json",
		"-write-timeout", wt.String(), "-drain-timeout", drainTimeout.String())
	s.cmd.Args = append(s.cmd.Args, extraArgs...)
	s.cmd.Env = append(os.Environ(), extraEnv...)
	s.cmd.SysProcAttr = unprivileged()
	stderr, err := s.cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := s.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	if mode == "auto" {
		e.autoStarts++
	}
	ready := make(chan error, 1)
	var readers sync.WaitGroup
	readers.Add(2)
	go func() { // ends at the server's exit (EOF on stderr)
		defer readers.Done()
		s.readLogs(stderr, ready)
	}()
	go func() { // ends at the server's exit (EOF on stdout)
		defer readers.Done()
		s.readAccess(stdout)
	}()
	go func() { // ends when the process has exited
		readers.Wait()
		s.waitErr = s.cmd.Wait()
		close(s.done)
	}()
	select {
	case err = <-ready:
		if err == nil {
			err = checkPrivileges(s.cmd.Process.Pid)
		}
	case <-s.done:
		err = fmt.Errorf("exited before it was ready: %v", s.waitErr)
	case <-time.After(startTimeout):
		err = fmt.Errorf("not ready within %v", startTimeout)
	}
	if err != nil {
		s.cmd.Process.Kill()
		<-s.done
		return nil, fmt.Errorf("segorigin %s (-ktls %s): %w\n%s", name, mode, err, s.logText())
	}
	e.rep.Info("server %s: https %s admin %s -ktls %s %s", name, s.https, s.admin, mode, strings.Join(extraEnv, " "))
	return s, nil
}

// readLogs keeps the stderr lines and reports on ready once everything
// startServer waits for has been logged (or the stream ended).
func (s *server) readLogs(r io.Reader, ready chan<- error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var paths map[string]any
	sent := false
	for sc.Scan() {
		line := sc.Text()
		s.mu.Lock()
		s.logs = append(s.logs, line)
		s.mu.Unlock()
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) != nil {
			continue
		}
		switch msg, _ := m["msg"].(string); {
		case msg == "listening" && m["proto"] == "https":
			s.https, _ = m["addr"].(string)
		case msg == "listening" && m["proto"] == "http":
			s.http, _ = m["addr"].(string)
		case msg == "listening" && m["proto"] == "admin":
			s.admin, _ = m["addr"].(string)
		case msg == "body paths":
			paths = m
		case strings.Contains(msg, "self-signed development certificate"):
			fp, _ := m["sha256"].(string)
			s.cert, _ = hex.DecodeString(fp)
		}
		if !sent && s.https != "" && s.admin != "" && s.cert != nil && paths != nil {
			sent = true
			ready <- checkBodyPaths(paths, s.ktls)
		}
	}
}

// checkBodyPaths: the start-up line says kTLS is on with all three
// ciphers when mode is auto, off when mode is off.
func checkBodyPaths(m map[string]any, mode string) error {
	on, _ := m["ktls"].(bool)
	switch {
	case mode == "off" && on:
		return fmt.Errorf("body paths %v: kTLS on with -ktls off", m)
	case mode == "off":
		return nil
	case !on:
		return fmt.Errorf("body paths %v: the kernel's kTLS is not available (is tls.ko loaded?)", m)
	}
	const all = "aes-128-gcm,aes-256-gcm,chacha20-poly1305"
	ciphers, _ := m["ktls_ciphers"].(string)
	rx, _ := m["ktls_rx_ciphers"].(string)
	if ciphers != all || rx != all || m["tls_path"] != "ktls" {
		return fmt.Errorf("body paths %v: ktls_ciphers %q, ktls_rx_ciphers %q, tls_path %v; want all three both ways, path ktls", m, ciphers, rx, m["tls_path"])
	}
	return nil
}

func (s *server) readAccess(r io.Reader) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		var a accessLine
		if json.Unmarshal(sc.Bytes(), &a) != nil || a.Method == "" {
			continue
		}
		s.mu.Lock()
		s.access = append(s.access, a)
		s.mu.Unlock()
	}
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.logs, "\n")
}

// logsMatching returns the stderr lines that contain sub.
func (s *server) logsMatching(sub string) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, l := range s.logs {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return out
}

// terminate sends SIGTERM.
func (s *server) terminate() error { return s.cmd.Process.Signal(syscall.SIGTERM) }

// waitExit waits up to d for the process to exit after terminate: it
// must exit 0 and log that it stopped. After d it is killed.
func (s *server) waitExit(d time.Duration) error {
	select {
	case <-s.done:
	case <-time.After(d):
		s.cmd.Process.Kill()
		<-s.done
		return fmt.Errorf("segorigin %s still running %v after SIGTERM (killed)", s.name, d)
	}
	if s.waitErr != nil {
		return fmt.Errorf("segorigin %s exit after SIGTERM: %v\n%s", s.name, s.waitErr, s.logText())
	}
	if len(s.logsMatching(`"msg":"stopped"`)) == 0 {
		return fmt.Errorf("segorigin %s exited without its stopped line", s.name)
	}
	return nil
}

// stop ends a server the run is done with (or gave up on).
func (s *server) stop() error {
	if err := s.terminate(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	return s.waitExit(drainTimeout + 5*time.Second)
}
