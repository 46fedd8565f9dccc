package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"segorigin/internal/ktlsvm"
)

// originTestTimeout bounds one run of origin's test binary.
const originTestTimeout = 150 * time.Second

// conformance runs origin's test binary once per pattern the host wrote
// (ktlsvm.OriginTestRun), each a result "conformance/N": its servers'
// HTTPS connections go to the event loops on this kernel, and the tests
// check so (checkTLSTransport) besides every byte they check anyway.
func (e *env) conformance() {
	b, err := os.ReadFile(ktlsvm.OriginTestRun)
	if err != nil {
		e.rep.Result(ktlsvm.PlanConformance+"/1", err)
		return
	}
	for i, pattern := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		e.rep.Result(fmt.Sprintf("%s/%d", ktlsvm.PlanConformance, i+1), e.originTests(pattern))
	}
}

// originTests runs the tests pattern names; an error carries the output
// of a run that failed.
func (e *env) originTests(pattern string) error {
	start := time.Now()
	cmd := exec.Command(ktlsvm.OriginTestDir+"/origin.test", "-test.run", pattern, "-test.count=1", "-test.v",
		"-test.timeout", originTestTimeout.String())
	cmd.Dir = ktlsvm.OriginTestDir
	cmd.Env = append(os.Environ(), "TMPDIR=/tmp")
	out, err := cmd.CombinedOutput()
	passed := bytes.Count(out, []byte("--- PASS"))
	e.rep.Info("origin.test -test.run %s: %d passed, %.1f s", pattern, passed, time.Since(start).Seconds())
	if err != nil {
		return fmt.Errorf("origin.test -test.run %s: %v\n%s", pattern, err, failures(out))
	}
	if passed == 0 {
		return fmt.Errorf("origin.test -test.run %s: no test ran", pattern)
	}
	return nil
}

// failures is what a failed run printed about its failures: the lines
// of failed tests and their messages, or its tail.
func failures(out []byte) string {
	var keep []string
	message := false // in a failure message's continuation lines
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.Contains(l, "--- FAIL") || strings.Contains(l, "_test.go:") || strings.HasPrefix(l, "panic"):
			keep, message = append(keep, l), strings.Contains(l, "_test.go:")
		case message && strings.HasPrefix(l, "        "):
			keep = append(keep, l)
		default:
			message = false
		}
	}
	if len(keep) == 0 {
		return string(out[max(0, len(out)-4000):])
	}
	return strings.Join(keep[:min(len(keep), 120)], "\n")
}
