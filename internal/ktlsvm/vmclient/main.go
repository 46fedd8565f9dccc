// Command vmclient runs inside the ktlsvm guest as the initramfs's client:
// it writes the media, starts segorigin (the real binary, as deployed),
// runs every case of its plan against it over TLS, checks the server's
// metrics, access log and exit, and the kernel's /proc/net/tls_stat, and
// prints the result of each on the console in the protocol of package
// ktlsvm. It is built and booted by that package's test; run on a host it
// would test the host's kernel the same way (given -plan).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"strings"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/ktlsvm"
)

// defaultWatchdog bounds the whole plan inside the guest when the kernel
// command line gives no ktlsvm.watchdog= (the host sets it below its own
// timeout), so that a hang is reported as a failure with what had run.
const defaultWatchdog = 200 * time.Second

// mediaDir is where the client writes the files the server serves.
const mediaDir = "/tmp/media"

// The files served. Sizes are not multiples of the 16 KiB record size,
// and big is larger than the guest's socket buffers together (see
// tuneSockets), so a reader that stops makes sendfile wait.
var mediaFiles = map[string]int64{
	"seg.m4s":   100_003,
	"big.ts":    200_009,
	"play.m3u8": 1_001,
}

func main() {
	plan := flag.String("plan", "", "plan to run: full, ktls, smp2, conformance, measure or probe (default: ktlsvm.plan= of /proc/cmdline)")
	server := flag.String("server", ktlsvm.ServerPath, "the segorigin binary")
	flag.Parse()
	watchdog := defaultWatchdog
	if *plan == "" {
		*plan = cmdline("ktlsvm.plan")
		if d, err := time.ParseDuration(cmdline("ktlsvm.watchdog")); err == nil {
			watchdog = d
		}
	}
	rep := ktlsvm.NewReporter(os.Stdout)
	rep.Info("plan %s, %d CPUs, %s", *plan, runtime.NumCPU(), runtime.Version())
	if *plan == ktlsvm.PlanProbe { // the host only asks whether the guest boots
		rep.Info("probe")
		fmt.Printf("%sDONE PASS\n", ktlsvm.Prefix)
		return
	}
	timer := time.AfterFunc(watchdog, func() {
		rep.Result("watchdog", fmt.Errorf("plan %s still running after %v", *plan, watchdog))
		rep.Done(*plan)
		os.Exit(1)
	})
	defer timer.Stop()

	env, err := prepare(*server, rep)
	if err != nil {
		rep.Result("setup", err)
		rep.Done(*plan)
		os.Exit(1)
	}
	if *plan == ktlsvm.PlanFull || *plan == ktlsvm.PlanKTLS {
		rep.Result(ktlsvm.CheckNoModule, env.checkNoModule())
	}
	rep.Result(ktlsvm.CheckModulesLoad, env.modulesLoad())
	switch *plan {
	case ktlsvm.PlanFull, ktlsvm.PlanKTLS:
		for _, run := range ktlsvm.Runs(*plan) {
			env.runFull(run)
		}
	case ktlsvm.PlanSMP:
		env.runSMP()
	case ktlsvm.PlanConformance:
		env.conformance()
		if !rep.Done(*plan) {
			os.Exit(1)
		}
		return
	case ktlsvm.PlanMeasure:
		env.measure()
		if !rep.Done(*plan) {
			os.Exit(1)
		}
		return
	default:
		rep.Result("setup", fmt.Errorf("unknown plan %q", *plan))
	}
	rep.Result("tls-stat", env.checkTLSStat())
	if !rep.Done(*plan) {
		os.Exit(1)
	}
}

// cmdline reads key= from the kernel command line.
func cmdline(key string) string {
	b, _ := os.ReadFile("/proc/cmdline")
	for _, f := range strings.Fields(string(b)) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// env is what every run shares.
type env struct {
	rep    *ktlsvm.Reporter
	server string            // the segorigin binary
	media  map[string][]byte // file name -> its bytes, read back from disk

	// What the kernel's tls_stat must add up to (see checkTLSStat).
	offloaded  int64 // connections handed over on -ktls auto servers
	autoStarts int64 // -ktls auto server starts (each probes every cipher)
	rekeysRX   int64 // KeyUpdates the kernel followed, on -ktls auto servers
	rekeysTX   int64 // of those, update_requested
}

// prepare writes the media and reads it back (bodies are compared with
// the bytes on disk), and tunes the guest's sockets.
func prepare(server string, rep *ktlsvm.Reporter) (*env, error) {
	e := &env{rep: rep, server: server, media: map[string][]byte{}}
	for name, size := range mediaFiles {
		p := mediaDir + "/" + name
		if err := synth.WriteFile(p, name, size); err != nil {
			return nil, err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		e.media[name] = b
	}
	return e, tuneSockets(rep)
}

// tuneSockets caps TCP buffers at 64 KiB, so that big.ts cannot sit
// whole in the server's send buffer and the client's receive buffer: a
// slow or stopped reader then really makes sendfile on the kTLS socket
// return short and wait (and the write timeout fire).
func tuneSockets(rep *ktlsvm.Reporter) error {
	for _, name := range []string{"tcp_wmem", "tcp_rmem"} {
		p := "/proc/sys/net/ipv4/" + name
		if err := os.WriteFile(p, []byte("4096 16384 65536\n"), 0o644); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
	}
	rep.Info("net.ipv4.tcp_wmem and tcp_rmem: 4096 16384 65536")
	return nil
}
