// Package loadtest holds segorigin's load and comparison tools; the Go code
// is in its subpackages and commands:
//
//   - verify: checks bodies and Content-Range against synth, playlist or
//     on-disk content (importable by any test);
//   - load: Run, the verified player-like load engine;
//   - client: the command around load.Run;
//   - peers/nethttp, peers/fasthttpfs: the Go servers compared with;
//   - wrk/: wrk Lua scripts for the workloads W1-W5 of ARCHITECTURE.md;
//   - compare.sh, syscalls.sh: the side-by-side runs.
//
// This package itself has only the smoke test (smoke_test.go), which runs
// every script and tool briefly against the real server binary so that none
// of them rots. See README.md.
package loadtest
