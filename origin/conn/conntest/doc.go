// Package conntest holds helpers for tests of origin/conn and of the
// servers built on it: self-signed certificates a TLS listener loads and a
// client trusts. It is imported only by tests; it never serves and never
// touches a socket option. (The kernel's kTLS stand-in is
// internal/ktlstest.)
package conntest
