//go:build linux

package cache

import "syscall"

// ctimeOf is st_ctime in nanoseconds.
func ctimeOf(st *syscall.Stat_t) int64 {
	return st.Ctim.Sec*1e9 + st.Ctim.Nsec
}
