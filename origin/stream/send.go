package stream

import (
	"errors"
	"net"
	"sync"
	"syscall"
	"time"

	"segorigin/origin/conn"
	"segorigin/origin/wire"
)

// sender writes a connection's responses: memory parts in one write,
// file spans by sendfile on a plain or kernel-TLS socket or by pread and
// write, paced by a response's rate. It runs on the connection's
// goroutine; wait is the connection's wait for a Resume (a window not
// resident yet).
type sender struct {
	nc   net.Conn
	cfg  *Config
	wait func() bool // false: the connection closed

	wbuf []byte
	iov  [][]byte
	// held: memory parts not written yet, on a connection that takes no
	// sendfile (userspace TLS), to go out in the same write as the first
	// bytes of the file span after them. Written before any wait.
	held []byte
}

// send writes r's parts in order, and those More gives after them.
func (o *sender) send(r *wire.Response) error {
	for {
		if err := o.sendParts(r); err != nil {
			return err
		}
		more, ok := r.Next()
		for !ok {
			if !o.wait() {
				return net.ErrClosed
			}
			more, ok = r.Next()
		}
		if !more {
			return nil
		}
	}
}

// sendParts writes r's parts in order.
func (o *sender) sendParts(r *wire.Response) error {
	plain, _ := o.nc.(*conn.TCP)
	sock := plain
	if sock == nil {
		sock = conn.KernelTLS(o.nc)
	}
	for i := 0; i < len(r.Parts); {
		if r.Parts[i].Mem != nil {
			j := i
			for j < len(r.Parts) && r.Parts[j].Mem != nil {
				j++
			}
			if err := o.sendMem(r, r.Parts[i:j], sock, j < len(r.Parts)); err != nil {
				return err
			}
			i = j
			continue
		}
		if err := o.sendFile(r, &r.Parts[i], sock, plain == nil); err != nil {
			return err
		}
		i++
	}
	return o.flushHeld(r)
}

// flushHeld writes the memory parts held for a file span, before a wait
// or when no span took them.
func (o *sender) flushHeld(r *wire.Response) error {
	if len(o.held) == 0 {
		return nil
	}
	k, err := o.nc.Write(o.held)
	r.Cursor.Sent += int64(k)
	o.held = nil
	return err
}

// sendMem writes memory parts in one send: one writev on a plain socket
// (header and an inline body, nothing copied), one write (over TLS, one
// record) otherwise, with MSG_MORE on a socket when a file span follows.
func (o *sender) sendMem(r *wire.Response, parts []wire.Part, sock *conn.TCP, more bool) error {
	if err := o.flushHeld(r); err != nil { // held bytes may be in wbuf
		return err
	}
	if _, plain := o.nc.(*conn.TCP); plain && !more && len(parts) > 1 {
		o.iov = o.iov[:0]
		for _, p := range parts {
			o.iov = append(o.iov, p.Mem)
		}
		bufs := net.Buffers(o.iov)
		n, err := bufs.WriteTo(o.nc)
		r.Cursor.Sent += n
		clear(o.iov)
		return err
	}
	b := parts[0].Mem
	if len(parts) > 1 {
		o.wbuf = o.wbuf[:0]
		for _, p := range parts {
			o.wbuf = append(o.wbuf, p.Mem...)
		}
		b = o.wbuf
	}
	if len(b) == 0 {
		return nil
	}
	if (sock == nil || r.NoSendfile) && more && len(b) <= copyChunk/4 {
		// No sendfile (userspace TLS, -disable-sendfile): the header waits for the
		// span's first bytes, so both leave in one write.
		o.held = b
		return nil
	}
	var n int64
	var err error
	if sock != nil && more && !r.NoSendfile {
		n, err = sock.WriteMore(b)
	} else {
		var k int
		k, err = o.nc.Write(b)
		n = int64(k)
	}
	r.Cursor.Sent += n
	return err
}

// sendFile sends file part p by windows, asking Ready before each; sock,
// when not nil, takes sendfile (kernelTLS: its records are sealed by the
// kernel).
func (o *sender) sendFile(r *wire.Response, p *wire.Part, sock *conn.TCP, kernelTLS bool) error {
	for off := int64(0); off < p.Len; {
		want := min(p.Len-off, o.cfg.Window, o.pace(r))
		if r.Ready != nil {
			send, ok := r.Ready(p, p.Off+off, want)
			if !ok {
				if err := o.flushHeld(r); err != nil { // not held through a wait
					return err
				}
			}
			for !ok {
				if !o.wait() {
					return net.ErrClosed
				}
				send, ok = r.Ready(p, p.Off+off, want)
			}
			want = min(want, max(send, 1))
		}
		var n int64
		var err error
		if sock != nil && !r.NoSendfile && !r.Copied {
			n, err = sock.Sendfile(p.Fd, p.Off+off, want)
			if errors.Is(err, conn.ErrSendfileUnsupported) {
				r.Copied = true
				if f := o.cfg.SendfileRefused; f != nil {
					f()
				}
				continue
			}
			r.KernelTLS = kernelTLS
		} else {
			r.Copied = true
			n, err = o.copySpan(r, p.Fd, p.Off+off, want)
		}
		r.Cursor.Sent += n
		off += n
		if errors.Is(err, conn.ErrTruncated) {
			err = wire.ErrTruncated
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// pace is how much of a paced response (Response.Rate) may be sent now,
// after waiting on the connection's goroutine, a quantum at a time, for
// its allowance (a timer wait between quanta, not a sleep per write);
// the write timeout counts again from the wait's end. Without a rate,
// no limit.
func (o *sender) pace(r *wire.Response) int64 {
	if r.Rate <= 0 {
		return r.Allowance(0)
	}
	for {
		if n := r.Allowance(time.Now().UnixNano()); n > 0 {
			return n
		}
		// Bounded: a connection closed meanwhile (the drain) fails its
		// next write, a quantum later at most. Nothing held waits (a
		// failed write shows again at the next, which ends the response).
		o.flushHeld(r)
		time.Sleep(wire.PaceQuantum)
		if wt := o.cfg.WriteTimeout; wt > 0 {
			o.nc.SetWriteDeadline(time.Now().Add(wt))
		}
	}
}

// copyPool holds the copy path's buffers, taken for one span, so an idle
// connection holds none.
var copyPool = sync.Pool{New: func() any { b := make([]byte, copyChunk); return &b }}

// copySpan sends n bytes of fd from off by pread and write; memory parts
// held for it go out first, in the same write. It returns the span's
// bytes sent; the held parts' count in r's cursor.
func (o *sender) copySpan(r *wire.Response, fd int, off, n int64) (int64, error) {
	bp := copyPool.Get().(*[]byte)
	defer copyPool.Put(bp)
	buf := *bp
	var sent int64
	for sent < n {
		h := copy(buf, o.held)
		o.held = nil
		k, err := syscall.Pread(fd, buf[h:h+int(min(n-sent, int64(copyChunk-h)))], off+sent)
		if err == nil && k == 0 {
			err = wire.ErrTruncated
		}
		if err != nil {
			if h > 0 {
				m, _ := o.nc.Write(buf[:h])
				r.Cursor.Sent += int64(m)
			}
			return sent, err
		}
		m, err := o.nc.Write(buf[:h+k])
		r.Cursor.Sent += int64(min(m, h))
		sent += int64(max(m-h, 0))
		if err != nil {
			return sent, err
		}
	}
	return sent, nil
}
