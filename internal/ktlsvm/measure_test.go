package ktlsvm

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testreq"
)

// BenchmarkKTLSMeasure boots the kTLS kernel with the measure plan
// (PlanMeasure): the server's resident memory per idle connection at
// 10,000 connections, and its system calls per request (strace -c), plain
// HTTP against HTTPS on the event loops, both in one boot so that the
// emulated CPU cancels out of the ratios. It logs what the guest
// measured and fails when an idle HTTPS connection costs over 1.5 KiB
// more than a plain one. Minutes of emulated CPU, so not in the suite:
//
//	flock /tmp/segorigin-bench.lock go test -run '^$' -bench KTLSMeasure -benchtime 1x ./internal/ktlsvm
func BenchmarkKTLSMeasure(b *testing.B) {
	testreq.Tool(b, "strace", "the guest counts system calls with the host's strace")
	testreq.Tool(b, "ldd", "the host's strace goes into the guest with its libraries")
	extra, err := straceFiles()
	if err != nil {
		b.Fatal(err)
	}
	k, initrd, accel := prepareGuest(b, "", extra)
	for range b.N {
		start := time.Now()
		// The console as it comes: the plan takes minutes.
		console, err := Boot(context.Background(), BootConfig{Kernel: k, Initrd: initrd, Accel: accel, CPUs: 2, Memory: "3072",
			Plan: PlanMeasure, Timeout: 20 * time.Minute, Log: os.Stderr})
		problems := Parse(console).Problems(PlanMeasure)
		problems = append(problems, KernelTrouble(console)...)
		if err != nil {
			problems = append([]string{err.Error()}, problems...)
		}
		if len(problems) > 0 {
			b.Fatalf("plan %s (%s): %d problems:\n%s\n\n--- console ---\n%s", PlanMeasure, accel, len(problems), strings.Join(problems, "\n"), console)
		}
		b.Logf("plan %s (%s, 2 vCPU, %.1f s)", PlanMeasure, accel, time.Since(start).Seconds())
		for _, l := range strings.Split(console, "\n") {
			if strings.Contains(l, Prefix+"INFO ") && strings.Contains(l, "measure") {
				b.Log(strings.TrimSpace(l))
			}
		}
	}
}

// straceFiles are the host's strace and the shared libraries it loads
// (as ldd lists them), each at its own path in the guest.
func straceFiles() ([]InitramfsFile, error) {
	bin, err := exec.LookPath("strace")
	if err != nil {
		return nil, err
	}
	out, err := exec.Command("ldd", bin).Output()
	if err != nil {
		return nil, err
	}
	files := []InitramfsFile{{Path: "/usr/bin/strace", Src: bin, Mode: 0o755}}
	for _, l := range strings.Split(string(out), "\n") {
		f := strings.Fields(l)
		var lib string
		switch {
		case len(f) >= 3 && f[1] == "=>" && strings.HasPrefix(f[2], "/"):
			lib = f[2]
		case len(f) >= 1 && strings.HasPrefix(f[0], "/"):
			lib = f[0] // the dynamic loader
		default:
			continue
		}
		files = append(files, InitramfsFile{Path: lib, Src: lib, Mode: 0o755})
	}
	return files, nil
}
