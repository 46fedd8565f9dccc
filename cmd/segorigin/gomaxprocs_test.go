package main

import (
	"runtime"
	"testing"

	"segorigin/origin"
)

// TestReserveLoopP: the loop engine runs with one P per loop, and one
// more when HTTPS connections are goroutines beside it (-ktls tx);
// the fasthttp engine and an operator's GOMAXPROCS are left alone.
func TestReserveLoopP(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	for _, tc := range []struct {
		name   string
		engine origin.Engine
		env    string
		tls    bool
		want   int
	}{
		{"loops only", origin.EngineLoop, "", false, 3},
		{"loops and HTTPS on goroutines", origin.EngineLoop, "", true, 4},
		{"GOMAXPROCS set", origin.EngineLoop, "5", true, 7},
		{"fasthttp engine", origin.EngineFastHTTP, "", true, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMAXPROCS", tc.env)
			runtime.GOMAXPROCS(7)
			cfg := origin.Config{Engine: tc.engine, Loops: 3}
			reserveLoopP(&cfg, tc.tls)
			if got := runtime.GOMAXPROCS(0); got != tc.want {
				t.Errorf("GOMAXPROCS %d, want %d", got, tc.want)
			}
		})
	}
}
