package origin

import (
	"fmt"
	"reflect"
	"sync/atomic"

	"segorigin/origin/conn"
	"segorigin/origin/loop"
)

// Stats is a snapshot of the server's counters, as Server.Stats returns
// it: Counters with plain integers, copied from the live atomics; call
// Server.Stats again to see new counts. Counters only grow; ConnsOpen is a
// level.
type Stats Counters[int64]

// The snapshots of each part of Counters, by the names callers use.
type (
	ListenerStats  = conn.ListenerCounters[int64]
	TransportStats = TransportCounters[int64]
	AuthStats      = AuthCounters[int64]
	RewriteStats   = RewriteCounters[int64]
	TLSStats       = conn.TLSCounters[int64]
	ColdStats      = ColdCounters[int64]
	ReadAheadStats = ReadAheadCounters[int64]
	LoopStats      = loop.Counters[int64]
	ContentStats   = ContentCounters[int64]
	CMCDStats      = CMCDCounters[int64]
	GrowStats      = GrowCounters[int64]
)

// Stats returns a snapshot of the server's counters; call it again to see
// new counts. The fields are read one by one, so a snapshot taken under
// load is not a single instant.
func (s *Server) Stats() Stats {
	var st Stats
	loadCounters(reflect.ValueOf(&st).Elem(), reflect.ValueOf(&s.stats).Elem())
	return st
}

// loadCounters copies each counter of live (Counters[atomic.Int64], or a
// part of it) into snap (the same part of Counters[int64]). Both are one
// declaration, so their fields match one for one, and a counter added to
// Counters is in the snapshot with no line here. A field that is neither
// a counter nor made of counters is a mistake in the declaration, which
// any call finds at once.
func loadCounters(snap, live reflect.Value) {
	switch {
	case live.Type() == reflect.TypeFor[atomic.Int64]():
		snap.SetInt(live.Addr().Interface().(*atomic.Int64).Load())
	case live.Kind() == reflect.Struct:
		for i := range live.NumField() {
			loadCounters(snap.Field(i), live.Field(i))
		}
	case live.Kind() == reflect.Array:
		for i := range live.Len() {
			loadCounters(snap.Index(i), live.Index(i))
		}
	default:
		panic(fmt.Sprintf("origin: %v in Counters is not a counter", live.Type()))
	}
}
