// Package testreq is how a test says what it needs from the machine: a
// tool on PATH, a file a package installs, root, or more time than the
// contributor loop (`go test -short ./...`) allows.
//
// The rule it keeps: under -short, a test whose need is not met skips and
// says why (what is missing and which Debian package, or which make
// target, provides it); without -short, the same test fails with that
// message, never skips, so `make test` (which installs everything through
// .ci/deps) cannot pass with a part of the suite quietly left out. [Slow]
// skips under -short whatever is installed: the test is too slow, or
// needs too much of the machine, for the contributor loop.
//
// It is for tests only, and holds no state.
package testreq
