package ktlsvm

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestReporterRoundTrip: what a Reporter prints, Parse reads back, and
// Problems judges: a plan fully passed has none; a failure, a result
// never reported, one reported twice, an unknown one or a missing verdict
// are each a problem.
func TestReporterRoundTrip(t *testing.T) {
	all := Expected(PlanSMP)
	tests := []struct {
		name  string
		print func(r *Reporter, w *bytes.Buffer)
		want  []string // substrings, one per problem
	}{
		{"all pass", func(r *Reporter, _ *bytes.Buffer) {
			for _, n := range all {
				r.Result(n, nil)
			}
			r.Done(PlanSMP)
		}, nil},
		{"one fails", func(r *Reporter, _ *bytes.Buffer) {
			for _, n := range all {
				r.Result(n, nil)
			}
			r.Result(all[0], errors.New("bad\nbytes"))
			r.Done(PlanSMP)
		}, []string{`verdict "FAIL 1"`, all[0] + `: FAIL: bad\nbytes`}},
		{"one never run", func(r *Reporter, _ *bytes.Buffer) {
			for _, n := range all[1:] {
				r.Result(n, nil)
			}
			r.Done(PlanSMP)
		}, []string{`verdict "FAIL 1"`, all[0] + ": FAIL: not run"}},
		{"no verdict", func(r *Reporter, _ *bytes.Buffer) {
			for _, n := range all {
				r.Result(n, nil)
			}
		}, []string{`verdict "", want PASS`}},
		{"unknown and garbled", func(r *Reporter, w *bytes.Buffer) {
			for _, n := range all {
				r.Result(n, nil)
			}
			r.Result("extra", nil)
			w.WriteString("[   1.0] kernel line\r\n" + Prefix + "WHAT\n")
			r.Done(PlanSMP)
		}, []string{"extra: not an expected result", "unparsed protocol line: " + Prefix + "WHAT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var w bytes.Buffer
			r := NewReporter(&w)
			tt.print(r, &w)
			got := Parse(w.String()).Problems(PlanSMP)
			if len(got) != len(tt.want) {
				t.Fatalf("Problems = %q, want %d matching %q\nconsole:\n%s", got, len(tt.want), tt.want, w.String())
			}
			for _, sub := range tt.want {
				if !slices.ContainsFunc(got, func(p string) bool { return strings.Contains(p, sub) }) {
					t.Errorf("Problems = %q, want one containing %q", got, sub)
				}
			}
		})
	}
}

// TestExpected: TLS 1.2 has no KeyUpdate or HelloRetryRequest case, every
// name is unique, and each plan ends with the kernel's counters.
func TestExpected(t *testing.T) {
	for _, plan := range []string{PlanFull, PlanKTLS, PlanSMP} {
		names := Expected(plan)
		seen := map[string]bool{}
		for _, n := range names {
			if seen[n] {
				t.Errorf("Expected(%s): %s twice", plan, n)
			}
			seen[n] = true
			if strings.Contains(n, "tls1.2") && (strings.Contains(n, "keyupdate") || strings.HasSuffix(n, "/hrr") ||
				strings.HasSuffix(n, "/pipelined-finished") || strings.HasSuffix(n, "/resumption")) {
				t.Errorf("Expected(%s): %s is a TLS 1.3 case", plan, n)
			}
		}
		if names[len(names)-1] != "tls-stat" {
			t.Errorf("Expected(%s) ends with %s, want tls-stat", plan, names[len(names)-1])
		}
	}
	// no-module and modules-load, 2 runs x (3 TLS 1.2 combos x 19 cases
	// + 3 TLS 1.3 combos x 24 + 5 checks), tls-stat.
	if got, want := len(Expected(PlanFull)), 2+2*(3*19+3*24+5)+1; got != want {
		t.Errorf("len(Expected(full)) = %d, want %d", got, want)
	}
	// The same with the kTLS run alone.
	if got, want := len(Expected(PlanKTLS)), 2+(3*19+3*24+5)+1; got != want {
		t.Errorf("len(Expected(ktls)) = %d, want %d", got, want)
	}
	if got := Expected(PlanSMP)[0]; got != CheckModulesLoad {
		t.Errorf("Expected(smp2) starts with %s, want %s: tls must be loaded first", got, CheckModulesLoad)
	}
	if Expected("nonsense") != nil {
		t.Error("Expected(nonsense) != nil")
	}
}
