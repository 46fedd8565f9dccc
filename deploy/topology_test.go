package deploy_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"segorigin/internal/testproc"
)

// originPort is the port every origin listens on inside its own namespace.
const originPort = 8080

// topology is the test network: a bridge in the root namespace holding
// 10.213.N.1, and one network namespace per origin holding 10.213.N.11,
// .12, ..., each joined to the bridge by a veth pair. Every name carries a
// random id, so two runs on one host do not collide; everything is removed
// by t.Cleanup, on failure too.
type topology struct {
	id      string   // 4 hex digits, in every link and namespace name
	bridge  string   // bridge in the root namespace
	gateway string   // the bridge's address: every connection from the root namespace (the shield) comes from it
	netns   []string // one namespace per origin
	hosts   []string // origin IP addresses, netns[i] holds hosts[i]
}

// ipCmd runs ip(8) with a bounded time and returns its combined output.
func ipCmd(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// mustIP runs ip(8) and fails the test on an error.
func mustIP(t *testing.T, args ...string) {
	t.Helper()
	if _, err := ipCmd(args...); err != nil {
		t.Fatal(err)
	}
}

// freeSubnet returns the third octet of a 10.213.N.0/24 that no interface
// or route of the root namespace uses and no other run of this test holds:
// 0 unless another run has it (the consistent-hash ring, and so which
// origin owns which file, follows the addresses; 0 keeps a lone run's ring
// the same every time). The claim is an flock on a file in the temp
// directory, held until the test ends (the kernel drops it if the test
// process dies).
func freeSubnet(t *testing.T) int {
	t.Helper()
	addrs, err := ipCmd("-4", "-o", "addr", "show")
	if err != nil {
		t.Fatal(err)
	}
	routes, err := ipCmd("-4", "route", "show")
	if err != nil {
		t.Fatal(err)
	}
	for n := 0; n < 16; n++ {
		prefix := fmt.Sprintf("10.213.%d.", n)
		if strings.Contains(addrs, prefix) || strings.Contains(routes, prefix) {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(os.TempDir(), fmt.Sprintf("segorigin-shield-10.213.%d.lock", n)), os.O_CREATE|os.O_RDWR, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			lock.Close()
			continue
		}
		t.Cleanup(func() { lock.Close() })
		return n
	}
	t.Fatalf("10.213.0.0/24 to 10.213.15.0/24 are all in use on this host (leftovers of killed runs? `ip -br link | grep sgb`)")
	return 0
}

// newTopology makes the bridge and n origin namespaces. It fails (never
// skips) when namespaces cannot be made: this test needs root and ip(8).
func newTopology(t *testing.T, n int) *topology {
	t.Helper()
	var b [2]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	tp := &topology{id: hex.EncodeToString(b[:])}
	subnet := freeSubnet(t)
	tp.bridge = "sgb" + tp.id
	if _, err := ipCmd("link", "add", "name", tp.bridge, "type", "bridge"); err != nil {
		t.Fatalf("cannot create a bridge (this test needs root, or CAP_NET_ADMIN, and ip(8)): %v", err)
	}
	t.Cleanup(func() {
		if _, err := ipCmd("link", "del", tp.bridge); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	tp.gateway = fmt.Sprintf("10.213.%d.1", subnet)
	mustIP(t, "addr", "add", tp.gateway+"/24", "dev", tp.bridge)
	mustIP(t, "link", "set", tp.bridge, "up")

	for i := range n {
		ns := fmt.Sprintf("segorigin-%s-%d", tp.id, i+1)
		host := fmt.Sprintf("10.213.%d.%d", subnet, 11+i)
		outer := fmt.Sprintf("sgv%s%d", tp.id, i+1)
		inner := fmt.Sprintf("sgp%s%d", tp.id, i+1)
		if _, err := ipCmd("netns", "add", ns); err != nil {
			t.Fatalf("cannot create a network namespace (this test needs root and `ip netns`): %v", err)
		}
		t.Cleanup(func() {
			// Deleting the namespace destroys the veth pair with it once the
			// origin inside has exited (its cleanup runs before this one).
			if _, err := ipCmd("netns", "del", ns); err != nil {
				t.Errorf("cleanup: %v", err)
			}
			ipCmd("link", "del", outer) // usually gone already
		})
		mustIP(t, "link", "add", outer, "type", "veth", "peer", "name", inner)
		mustIP(t, "link", "set", inner, "netns", ns)
		mustIP(t, "link", "set", outer, "master", tp.bridge, "up")
		mustIP(t, "-n", ns, "link", "set", inner, "name", "eth0")
		mustIP(t, "-n", ns, "addr", "add", host+"/24", "dev", "eth0")
		mustIP(t, "-n", ns, "link", "set", "eth0", "up")
		mustIP(t, "-n", ns, "link", "set", "lo", "up")
		tp.netns = append(tp.netns, ns)
		tp.hosts = append(tp.hosts, host)
	}
	return tp
}

// origin is one segorigin process inside its namespace. It may be killed
// and started again on the same address and root.
type origin struct {
	name  string // "o1", "o2", ...
	bin   string
	ns    string
	addr  string // host:port inside ns, reachable from the root namespace
	root  string
	args  []string   // extra flags
	owner testing.TB // the test the origin lives for (nil: the one starting it)

	proc   *testproc.Proc // the current process; nil before the first start
	starts int
}

// start runs segorigin in o.ns and waits for its listening line. `ip netns
// exec` execs the binary, so the child's PID is segorigin's own (checked
// against the pid= it logs): kill and the cleanup signal exactly that
// process.
// The process lives until o.owner ends, even when a subtest restarts it;
// then it is stopped with SIGTERM (SIGKILL, and an error, after 5 s).
func (o *origin) start(t *testing.T) {
	t.Helper()
	// -settle 0: the tests copy their media a moment before they serve
	// it, complete; a test of the settle rule sets it again in o.args.
	args := append([]string{"netns", "exec", o.ns, o.bin,
		"-listen", o.addr, "-root", o.root, "-settle", "0", "-drain-timeout", "2s"}, o.args...)
	cmd := exec.Command("ip", args...)
	owner := o.owner
	if owner == nil {
		owner = t
	}
	o.proc = testproc.Start(t, cmd, testproc.Name(o.name), testproc.Timeout(10*time.Second),
		testproc.Grace(5*time.Second), testproc.Owner(owner))
	o.starts++
	if pid := o.proc.PID(); pid != cmd.Process.Pid {
		o.kill(t)
		t.Fatalf("%s logged pid=%d but the child is %d: `ip netns exec` did not exec segorigin", o.name, pid, cmd.Process.Pid)
	}
}

// running reports whether the current process has not exited.
func (o *origin) running() bool {
	if o.proc == nil {
		return false
	}
	select {
	case <-o.proc.Done():
		return false
	default:
		return true
	}
}

// kill sends SIGKILL to the origin's PID (a crash) and waits for it.
func (o *origin) kill(t *testing.T) {
	t.Helper()
	if !o.running() {
		return
	}
	if err := o.proc.Kill(); err != nil {
		t.Errorf("kill %s pid %d: %v", o.name, o.proc.PID(), err)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) int { return testproc.FreePort(t) }
