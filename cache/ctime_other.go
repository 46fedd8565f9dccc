//go:build !linux

package cache

import "syscall"

// ctimeOf is 0 off Linux, where Stat_t names the field differently: the
// inline consistency check then compares size and mtime only.
func ctimeOf(*syscall.Stat_t) int64 { return 0 }
