//go:build linux

package loop

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// recvBufs is a ring's provided buffers (IORING_REGISTER_PBUF_RING): the
// kernel picks one when a receive has bytes to deliver, so a connection
// waiting for its next request holds no buffer, as with epoll, and the
// loop's reads cost no system call. A buffer goes back to the ring once
// the loop has copied its bytes into the connection's read buffer.
//
// The entries (struct io_uring_buf) and the buffers are one anonymous
// mapping, outside Go's heap: the kernel writes into the buffers at any
// time between a receive's submission and its completion.
type recvBufs struct {
	mem     []byte
	entries []bufEntry
	tail    uint16 // the next entry to fill (published by give)
	bufs    []byte
}

// bufEntry is struct io_uring_buf. The ring's tail (a __u16) aliases the
// last field of its first entry.
type bufEntry struct {
	addr uint64
	len  uint32
	bid  uint16
	resv uint16
}

// bufReg is struct io_uring_buf_reg.
type bufReg struct {
	ringAddr    uint64
	ringEntries uint32
	bgid        uint16
	flags       uint16
	resv        [3]uint64
}

const (
	// recvBufCount buffers of recvBufSize bytes per loop: a buffer is
	// held from a receive's completion to the loop's read of it, in the
	// same iteration but for a connection whose response is in flight,
	// so a few dozen serve thousands of connections. When none is free
	// a receive ends with ENOBUFS and the loop reads the socket itself.
	recvBufCount = 128
	recvBufSize  = 4 << 10
	recvBufGroup = 0
)

// newRecvBufs maps the buffers, registers them with r (before it is
// enabled: a SINGLE_ISSUER ring takes registrations from its submitter
// only once it runs), and gives them all to the kernel.
func newRecvBufs(r *ring) (*recvBufs, error) {
	ringBytes := (recvBufCount*int(unsafe.Sizeof(bufEntry{})) + pageSize - 1) &^ (pageSize - 1)
	mem, err := unix.Mmap(-1, 0, ringBytes+recvBufCount*recvBufSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, fmt.Errorf("loop: receive buffers mmap: %w", err)
	}
	b := &recvBufs{
		mem:     mem,
		entries: unsafe.Slice((*bufEntry)(unsafe.Pointer(&mem[0])), recvBufCount),
		bufs:    mem[ringBytes:],
	}
	reg := bufReg{ringAddr: uint64(uintptr(unsafe.Pointer(&mem[0]))), ringEntries: recvBufCount, bgid: recvBufGroup}
	if err := r.register(registerPbufRing, unsafe.Pointer(&reg), 1); err != nil {
		unix.Munmap(mem)
		return nil, fmt.Errorf("loop: io_uring provided buffers: %w", err)
	}
	for bid := range recvBufCount {
		b.put(uint16(bid))
	}
	b.publish()
	return b, nil
}

var pageSize = unix.Getpagesize()

// buf is buffer bid's memory.
func (b *recvBufs) buf(bid uint16) []byte {
	off := int(bid) * recvBufSize
	return b.bufs[off : off+recvBufSize : off+recvBufSize]
}

// give hands buffer bid back to the kernel.
func (b *recvBufs) give(bid uint16) {
	b.put(bid)
	b.publish()
}

func (b *recvBufs) put(bid uint16) {
	e := &b.entries[b.tail&(recvBufCount-1)]
	e.addr = uint64(uintptr(unsafe.Pointer(&b.buf(bid)[0])))
	e.len = recvBufSize
	e.bid = bid
	b.tail++
}

// publish stores the tail with release semantics, as liburing's
// io_uring_buf_ring_advance does: the entry's fields are visible to the
// kernel before the tail that covers it. Go has no 16-bit atomic store,
// so the 32-bit word holding the first entry's bid (which the loop alone
// writes) and the tail is stored whole.
func (b *recvBufs) publish() {
	first := &b.entries[0]
	pair := [2]uint16{first.bid, b.tail} // the word's layout in memory, whatever the byte order
	atomic.StoreUint32((*uint32)(unsafe.Pointer(&first.bid)), *(*uint32)(unsafe.Pointer(&pair)))
}

func (b *recvBufs) close() {
	if b.mem != nil {
		unix.Munmap(b.mem)
		b.mem = nil
	}
}
