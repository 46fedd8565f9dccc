// Package testproc builds the repository's commands and runs them as
// servers under test.
//
// [Build] compiles a main package of the module once per test binary and
// hands each test its own copy in t.TempDir() ([BuildStatic]: without cgo,
// for a machine without this one's libc). [Start] starts an
// *exec.Cmd the caller has prepared (so it may wrap the server in
// `ip netns exec`, strace or `sh -c 'ulimit ...; exec ...'`), collects its
// stderr, and waits for the server's first
//
//	msg=listening proto=P addr=A ... pid=N
//
// line. The returned [Proc] gives the address of each proto it logs
// ([Proc.Addr]), the PID it logs ([Proc.PID], the server's own, which is not
// cmd.Process.Pid under a wrapper that forks), its log ([Proc.Logs]), and
// stops it with SIGTERM to that PID ([Proc.Stop], [Proc.Terminate]) or
// SIGKILL ([Proc.Kill]). A cleanup kills whatever is still running when the
// test ends.
//
// The package is for tests only and is Unix-only: it signals by PID.
package testproc
