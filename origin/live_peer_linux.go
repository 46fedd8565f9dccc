//go:build linux

package origin

import "segorigin/origin/stream"

// peerGone reports whether the client of c has closed its side while its
// response waits for bytes that are not there yet (a stream of a growing
// file between chunks): the transports that read nothing meanwhile (the
// stream transport's goroutine) say so on asking; the event loops see it
// themselves and close the connection. As nginx does for a request
// waiting on its upstream (ngx_http_test_reading), the client's FIN counts
// as the client gone.
func peerGone(c h1Conn) bool {
	sc, ok := c.(*stream.Conn)
	return ok && stream.PeerClosed(sc.Underlying())
}
