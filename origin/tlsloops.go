package origin

import "context"

// shutdownConns drains the connections the stream transport serves, then
// the HTTPS connections it handed to loops of their own (those it hands
// over while it drains go to loops still serving; loops shared with a
// plain listener drain beside it), then waits for each of those
// listeners' gates to see every connection closed: an HTTPS connection
// sends close_notify in its close, and the process must not exit between
// the two and end a connection with a bare FIN.
func (eng *engines) shutdownConns(ctx context.Context) error {
	err := eng.conns.shutdown(ctx)
	if eng.tlsLoops != nil && err == nil {
		err = eng.tlsLoops.shutdown(ctx)
	}
	for _, g := range eng.connGates {
		if err == nil {
			err = g.WaitClosed(ctx)
		}
	}
	return err
}
