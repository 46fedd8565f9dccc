package origin

import "segorigin/internal/ktlstest"

// KTLSEmulator is the kernel's stand-in in emulated kTLS test modes.
type KTLSEmulator = ktlstest.KTLSEmulator

// EmulateKTLS makes s hand its HTTPS connections to an emulator instead of
// the kernel. Call it before Run, on a server with TLS and KTLSAlways.
func EmulateKTLS(s *Server) *KTLSEmulator { return ktlstest.EmulateKTLS(s.tls) }

// RaceEnabled says the race detector is on, under which allocation budgets
// do not hold (sync.Pool drops items at random).
const RaceEnabled = raceEnabled

// LiveWaiters is how many blocking playlist reloads s holds parked now.
func LiveWaiters(s *Server) int { return s.live.waiters() }

// LiveChanges counts the watcher's invalidations s's held requests have
// seen (each may wake some).
func LiveChanges(s *Server) uint64 { return s.live.changes.Load() }

// ColdReadersBusy is how many of s's cold readers are reading now.
func ColdReadersBusy(s *Server) int {
	if st := s.cold.poolStats(); st != nil {
		return int(st.Running.Load())
	}
	return 0
}
