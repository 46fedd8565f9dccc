//go:build !linux

package origin

import (
	"net"
	"sync"
)

// startTLSLoops: without event loops, HTTPS stays with fasthttp.
func (eng *engines) startTLSLoops(*handler, []net.Listener, *sync.WaitGroup, chan<- error) {}
