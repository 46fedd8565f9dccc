package testproc

import (
	"bytes"
	"io"
	"net"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// DefaultTimeout bounds the waits for a listening line and for the exit
// after Stop's SIGTERM, unless Timeout says otherwise.
const DefaultTimeout = 30 * time.Second

// maxLogBytes caps what Logs keeps of a long-running server's stderr.
const maxLogBytes = 4 << 20

var (
	listeningRE = regexp.MustCompile(`msg=listening proto=(\S+) addr=(\S+)`)
	pidRE       = regexp.MustCompile(`\bpid=(\d+)`)
)

// An Option changes how Start runs and cleans up a process.
type Option func(*Proc)

// Name names the process in failure messages (default: its command line).
func Name(name string) Option { return func(p *Proc) { p.name = name } }

// Timeout bounds the waits for listening lines (Start, Addr) and for the
// exit after Stop's SIGTERM (default DefaultTimeout).
func Timeout(d time.Duration) Option { return func(p *Proc) { p.timeout = d } }

// Grace makes the end-of-test cleanup stop a process still running with
// SIGTERM first; one still running d later is killed and reported as a
// test error. Without Grace the cleanup kills at once.
func Grace(d time.Duration) Option { return func(p *Proc) { p.grace = d } }

// Owner registers the end-of-test cleanup on tb instead of the t given to
// Start: for a process a subtest starts that outlives the subtest (a
// restart), tb being the test that owns it.
func Owner(tb testing.TB) Option { return func(p *Proc) { p.owner = tb } }

// Proc is a server started by Start.
type Proc struct {
	t       testing.TB // Start's, for Addr's failures
	owner   testing.TB // the cleanup's
	cmd     *exec.Cmd
	name    string
	timeout time.Duration
	grace   time.Duration

	mu        sync.Mutex // protects the fields below
	logs      bytes.Buffer
	truncated bool
	partial   []byte            // a line not yet ended
	addrs     map[string]string // proto -> addr, from its first listening line
	pid       int               // from the first listening line that has one
	seen      chan struct{}     // closed, and replaced, at each new proto
	killed    bool              // SIGKILL sent by Kill, Terminate or the cleanup
	err       error             // cmd.Wait's, once done is closed

	done chan struct{} // closed once cmd.Wait has returned
}

// Start starts cmd, which must not have been started, with its stderr
// going to the Proc (and to cmd.Stderr, if set), and waits for its first
// listening line. It fails the test if cmd cannot start, exits first, or
// logs no listening line within the timeout. A cleanup kills the process
// if it is still running when the test ends (see Grace and Owner).
//
// cmd.WaitDelay, if zero, is set to 10 s: a wrapper's child that keeps
// stderr open cannot hold the Proc up for longer.
//
// cmd.Env, if nil, is ServerEnv: this process's environment without
// SEGORIGIN_* variables, which would otherwise override the flags the
// test gives (but the poller make test asks for); a test that means to
// pass some sets cmd.Env itself.
func Start(t testing.TB, cmd *exec.Cmd, opts ...Option) *Proc {
	t.Helper()
	p := &Proc{
		t: t, owner: t, cmd: cmd, name: strings.Join(cmd.Args, " "), timeout: DefaultTimeout,
		addrs: map[string]string{}, seen: make(chan struct{}), done: make(chan struct{}),
	}
	for _, o := range opts {
		o(p)
	}
	if cmd.Stderr != nil {
		cmd.Stderr = io.MultiWriter(cmd.Stderr, stderrWriter{p})
	} else {
		cmd.Stderr = stderrWriter{p}
	}
	if cmd.WaitDelay == 0 {
		cmd.WaitDelay = 10 * time.Second
	}
	if cmd.Env == nil {
		cmd.Env = ServerEnv()
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", p.name, err)
	}
	go func() { // ends when the process has exited and its stderr is read
		err := cmd.Wait()
		p.mu.Lock()
		if len(p.partial) > 0 {
			p.line(string(p.partial))
			p.partial = nil
		}
		p.err = err
		p.mu.Unlock()
		close(p.done)
	}()
	p.owner.Cleanup(p.cleanup)
	switch p.await(func() bool { return len(p.addrs) > 0 }) {
	case exited:
		t.Fatalf("%s exited before listening: %v\n%s", p.name, p.Err(), p.Logs())
	case timedOut:
		p.kill()
		t.Fatalf("%s: no listening line within %v\n%s", p.name, p.timeout, p.Logs())
	}
	return p
}

// Addr is the addr= of proto's first listening line ("http", "https",
// "admin"), waiting for it up to the timeout. It fails the test given to
// Start, so it must be called from that test's goroutine.
func (p *Proc) Addr(proto string) string {
	p.t.Helper()
	var addr string
	switch p.await(func() bool { addr = p.addrs[proto]; return addr != "" }) {
	case exited:
		p.t.Fatalf("%s exited before listening on %s: %v\n%s", p.name, proto, p.Err(), p.Logs())
	case timedOut:
		p.t.Fatalf("%s: no listening line for %s within %v\n%s", p.name, proto, p.timeout, p.Logs())
	}
	return addr
}

// PID is the pid= the server logged: its own, which is not cmd.Process.Pid
// when a wrapper forks it (strace, sh without exec). A server that logs no
// pid= is taken to be cmd's process.
func (p *Proc) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.pid != 0 {
		return p.pid
	}
	return p.cmd.Process.Pid
}

// Logs is the stderr read so far, line by line (the first 4 MiB).
func (p *Proc) Logs() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.truncated {
		return p.logs.String() + "[testproc: log truncated]\n"
	}
	return p.logs.String()
}

// Done is closed once the process has exited (the started command, that
// is: the wrapper, if any) and its stderr has been read.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Err is the command's exit error (nil for status 0), once Done is closed;
// nil before.
func (p *Proc) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// Signal sends sig to the server's PID (see PID), unless it has exited.
func (p *Proc) Signal(sig syscall.Signal) error {
	select {
	case <-p.done:
		return nil
	default:
	}
	return syscall.Kill(p.PID(), sig)
}

// Stop sends SIGTERM to the server and waits, up to the timeout, for the
// command to exit; it fails the test if it does not, or exits non-zero. A
// process already killed (Kill, Terminate) passes.
func (p *Proc) Stop(t testing.TB) {
	t.Helper()
	if err := p.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-p.done:
		p.mu.Lock()
		killed, err := p.killed, p.err
		p.mu.Unlock()
		if err != nil && !killed {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, p.Logs())
		}
	case <-time.After(p.timeout):
		t.Fatalf("no exit within %v of SIGTERM", p.timeout)
	}
}

// Terminate sends SIGTERM to the server and waits up to grace for the
// command to exit; if it has not, it kills it as Kill does. It reports
// whether the process exited within grace, whatever its status.
func (p *Proc) Terminate(grace time.Duration) bool {
	p.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
		return true
	case <-time.After(grace):
		p.kill()
		return false
	}
}

// Kill sends SIGKILL to the server (and to the started command, if that
// is another process) and waits for the command to exit. Stop and the
// cleanup do not count the kill's exit status as a failure.
func (p *Proc) Kill() error {
	return p.kill()
}

func (p *Proc) kill() error {
	select {
	case <-p.done:
		return nil
	default:
	}
	p.mu.Lock()
	p.killed = true
	p.mu.Unlock()
	err := syscall.Kill(p.PID(), syscall.SIGKILL)
	if pid := p.cmd.Process.Pid; pid != p.PID() {
		p.cmd.Process.Kill()
	}
	select {
	case <-p.done:
	case <-time.After(p.timeout):
	}
	return err
}

func (p *Proc) cleanup() {
	select {
	case <-p.done:
		return
	default:
	}
	if p.grace > 0 {
		if !p.Terminate(p.grace) {
			p.owner.Errorf("%s pid %d still running %v after SIGTERM; killing it", p.name, p.PID(), p.grace)
		}
		return
	}
	p.kill()
}

type waitResult int

const (
	found waitResult = iota
	exited
	timedOut
)

// await waits, up to the timeout, until cond (called with p.mu held)
// holds or the process has exited.
func (p *Proc) await(cond func() bool) waitResult {
	timer := time.NewTimer(p.timeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		ok, seen := cond(), p.seen
		p.mu.Unlock()
		if ok {
			return found
		}
		select {
		case <-seen:
		case <-p.done:
			p.mu.Lock()
			ok := cond()
			p.mu.Unlock()
			if ok {
				return found
			}
			return exited
		case <-timer.C:
			return timedOut
		}
	}
}

// stderrWriter splits the process's stderr into lines for the Proc.
type stderrWriter struct{ p *Proc }

func (w stderrWriter) Write(b []byte) (int, error) {
	p := w.p
	p.mu.Lock()
	defer p.mu.Unlock()
	p.partial = append(p.partial, b...)
	for {
		i := bytes.IndexByte(p.partial, '\n')
		if i < 0 {
			break
		}
		p.line(string(p.partial[:i]))
		p.partial = p.partial[i+1:]
	}
	if len(p.partial) > maxLogBytes { // no newline in sight: log it as it is
		p.line(string(p.partial))
		p.partial = nil
	}
	return len(b), nil
}

// line records one line; p.mu is held.
func (p *Proc) line(s string) {
	if p.logs.Len()+len(s)+1 <= maxLogBytes {
		p.logs.WriteString(s)
		p.logs.WriteByte('\n')
	} else {
		p.truncated = true
	}
	m := listeningRE.FindStringSubmatch(s)
	if m == nil {
		return
	}
	if p.pid == 0 {
		if pm := pidRE.FindStringSubmatch(s); pm != nil {
			p.pid, _ = strconv.Atoi(pm[1])
		}
	}
	if _, ok := p.addrs[m[1]]; !ok {
		p.addrs[m[1]] = m[2]
		close(p.seen)
		p.seen = make(chan struct{})
	}
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for a program (nginx) that cannot be told to listen on port 0 and say
// which port it got.
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
