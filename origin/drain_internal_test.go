package origin

import (
	"context"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// orderServer records what a drain asks of it, and when.
type orderServer struct {
	mu    sync.Mutex
	calls []string
}

func (o *orderServer) record(s string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.calls = append(o.calls, s)
}

func (o *orderServer) serve(net.Listener) error       { return nil }
func (o *orderServer) shutdown(context.Context) error { o.record("shutdown"); return nil }
func (o *orderServer) stopAccepting()                 { o.record("stopAccepting") }

// TestDrainStopsAcceptingFirst: the drain closes the stream transport's
// listeners (HTTPS's among them) on its own goroutine before it starts
// any engine's drain, which the loops begin by closing idle connections:
// a client that sees its idle connection closed must find every listener
// closed (TestDrainClosesListenersFirst sees it from outside).
func TestDrainStopsAcceptingFirst(t *testing.T) {
	o := &orderServer{}
	eng := &engines{conns: o}
	eng.drain(slog.New(slog.NewTextHandler(io.Discard, nil)), time.Second)
	if want := []string{"stopAccepting", "shutdown"}; !slices.Equal(o.calls, want) {
		t.Errorf("the drain asked %v, want %v", o.calls, want)
	}
}
