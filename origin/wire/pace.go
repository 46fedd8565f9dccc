package wire

import "time"

// PaceQuantum is how long a paced response waits when it has sent all
// its allowance (Response.Rate): the transport sleeps on its timer (the
// loops: a timeout list; the stream transport: its connection's
// goroutine) and sends the next quantum's worth at once, so a paced
// response costs a send and a wake-up per quantum, not a sleep per write.
const PaceQuantum = 100 * time.Millisecond

// Allowance is how many more bytes r may send at now (Unix nanoseconds),
// as nginx's limit_rate and limit_rate_after count them: without a Rate,
// no limit; otherwise RateAfter bytes at full speed, then Rate bytes a
// second from Cursor.Began, the first quantum's worth at once, less what
// has been sent (Cursor.Sent, header included). It is 0 or less when r
// must wait.
func (r *Response) Allowance(now int64) int64 {
	if r.Rate <= 0 {
		return 1<<63 - 1
	}
	// In float64: Rate times the elapsed nanoseconds overflows int64
	// within hours at a few MB/s.
	elapsed := float64(max(now-r.Cursor.Began, 0) + int64(PaceQuantum))
	allowed := float64(r.RateAfter) + float64(r.Rate)*elapsed/float64(time.Second)
	return int64(allowed) - r.Cursor.Sent
}
