package origin

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// tcpConn is every plain TCP connection the server accepts. It keeps the
// *net.TCPConn reachable for sendfile (fasthttp's own MaxConnsPerIP wrapper
// would hide it), remembers its RawConn (so the hot path does not allocate
// one per response), and can give the next Write MSG_MORE so a response
// header and the first body bytes leave in one TCP segment.
type tcpConn struct {
	*net.TCPConn
	raw  syscall.RawConn
	ln   *listener
	ip   string // client IP, for the per-IP limit
	once sync.Once

	// more: the next Write is a response header a file body follows; send
	// it with MSG_MORE. Touched only by the connection's goroutine.
	more bool

	// Per-call state of the RawConn callbacks, kept here so the callbacks
	// can be method values bound once at accept (no closure per call).
	op       ioOp
	writeFn  func(fd uintptr) bool
	sendfnFn func(fd uintptr) bool
}

// ioOp is the argument and result block of one RawConn callback.
type ioOp struct {
	buf    []byte // writeMore: bytes to send
	src    int    // sendfile: file descriptor
	off    int64  // sendfile: file offset (advanced by the kernel)
	remain int64  // sendfile: bytes still to send
	n      int64  // bytes sent so far in this operation
	err    error
}

// Close releases the connection's place in the listener's limits once.
func (c *tcpConn) Close() error {
	err := c.TCPConn.Close()
	c.once.Do(func() { c.ln.release(c.ip) })
	return err
}

// listener wraps a TCP listener: it yields *tcpConn and enforces the
// connection limits (total and per client IP) by closing what is over them
// at once, before fasthttp spends anything on it.
type listener struct {
	net.Listener
	srv      *Server
	maxConns int
	maxPerIP int

	mu    sync.Mutex     // protects conns and perIP
	conns int            // open connections
	perIP map[string]int // open connections per client IP
}

// wrapListener wraps ln for the server. Listeners that do not yield TCP
// connections (TLS listeners wrap theirs) are wrapped by their own layer.
func (s *Server) wrapListener(ln net.Listener) net.Listener {
	return &listener{Listener: ln, srv: s, maxConns: s.cfg.MaxConns, maxPerIP: s.cfg.MaxConnsPerIP, perIP: map[string]int{}}
}

func (l *listener) Accept() (net.Conn, error) {
	var backoff time.Duration
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			if !retryableAccept(err) {
				return nil, err
			}
			// Out of descriptors (or a connection aborted before we took
			// it): fasthttp would treat this as permanent and stop
			// serving. Give the cache's idle fds back, wait, retry, as
			// net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			l.srv.onFDPressure(err)
			time.Sleep(backoff)
			continue
		}
		backoff = 0
		tc, ok := c.(*net.TCPConn)
		if !ok {
			return c, nil
		}
		ip := ""
		if a, ok := tc.RemoteAddr().(*net.TCPAddr); ok {
			ip = a.IP.String()
		}
		if !l.admit(ip) {
			l.srv.stats.ConnsRefused.Add(1)
			if l.srv.limitLog.allow() {
				l.srv.log.Warn("connection limit reached: closing new connection", "client", ip,
					"max_conns", l.maxConns, "max_conns_per_ip", l.maxPerIP)
			}
			tc.SetLinger(0)
			tc.Close()
			continue
		}
		conn, err := newTCPConn(tc, l, ip)
		if err != nil {
			l.release(ip)
			tc.Close()
			l.srv.log.Warn("accepted connection unusable", "err", err)
			continue
		}
		return conn, nil
	}
}

func newTCPConn(tc *net.TCPConn, l *listener, ip string) (*tcpConn, error) {
	raw, err := tc.SyscallConn()
	if err != nil {
		return nil, err
	}
	c := &tcpConn{TCPConn: tc, raw: raw, ln: l, ip: ip}
	c.writeFn = c.writeMoreOnce
	c.sendfnFn = c.sendfileOnce
	return c, nil
}

// admit counts a new connection in, or refuses it when over a limit.
func (l *listener) admit(ip string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.maxConns > 0 && l.conns >= l.maxConns {
		return false
	}
	if l.maxPerIP > 0 && l.perIP[ip] >= l.maxPerIP {
		return false
	}
	l.conns++
	l.perIP[ip]++
	l.srv.stats.ConnsOpen.Add(1)
	return true
}

func (l *listener) release(ip string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.conns--
	if l.perIP[ip]--; l.perIP[ip] <= 0 {
		delete(l.perIP, ip)
	}
	l.srv.stats.ConnsOpen.Add(-1)
}

// retryableAccept reports errors after which accepting may succeed later.
func retryableAccept(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout() ||
		errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) ||
		errors.Is(err, syscall.ENOBUFS) || errors.Is(err, syscall.ENOMEM) ||
		errors.Is(err, syscall.ECONNABORTED)
}

// onFDPressure sheds the file cache's idle descriptors and logs, once per
// interval, that the process ran out of them.
func (s *Server) onFDPressure(err error) {
	if errors.Is(err, syscall.EMFILE) || errors.Is(err, syscall.ENFILE) {
		s.cache.Shed()
		s.stats.AcceptEMFILE.Add(1)
		if s.emfileLog.allow() {
			s.log.Error("out of file descriptors: accept failed; shedding the file cache and retrying", "err", err)
		}
	}
}
