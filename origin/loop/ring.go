//go:build linux

package loop

import (
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ring is one io_uring instance: its submission and completion queues
// mapped into memory, and the io_uring_enter that hands the one to the
// kernel and waits on the other.
//
// It is written here on golang.org/x/sys/unix rather than taken from a
// Go io_uring library because the loop needs what none of them gives: a
// wait that is a raw system call (the runtime must not take the thread's
// P for a wait of a few milliseconds, as with epoll_wait), a ring set up
// disabled and enabled on the loop's own locked thread (SINGLE_ISSUER,
// DEFER_TASKRUN), and only the few opcodes the poller uses; the ABI below
// is the kernel's include/uapi/linux/io_uring.h.
type ring struct {
	fd int

	sqHead, sqTail, sqMask *uint32
	sqes                   []sqe
	cqHead, cqTail, cqMask *uint32
	cqes                   []cqe
	tail                   uint32 // the next SQE's index (published to sqTail by flush)

	sqMem, sqeMem []byte
	stats         *Stats
}

// sqe is struct io_uring_sqe (64 bytes), the fields the poller uses.
type sqe struct {
	opcode   uint8
	flags    uint8
	ioprio   uint16
	fd       int32
	off      uint64
	addr     uint64
	len      uint32
	opFlags  uint32 // poll32_events for IORING_OP_POLL_ADD, msg_flags for IORING_OP_RECV
	userData uint64
	bufGroup uint16 // the provided-buffer group a receive picks from (IOSQE_BUFFER_SELECT)
	_        [22]byte
}

// cqe is struct io_uring_cqe.
type cqe struct {
	userData uint64
	res      int32
	flags    uint32
}

// params is struct io_uring_params.
type params struct {
	sqEntries, cqEntries, flags, sqThreadCPU, sqThreadIdle, features, wqFd uint32
	resv                                                                   [3]uint32
	sqOff                                                                  ringOffsets // struct io_sqring_offsets
	cqOff                                                                  ringOffsets // struct io_cqring_offsets
}

// ringOffsets is struct io_sqring_offsets (head, tail, mask, entries,
// flags, dropped, array) or io_cqring_offsets (head, tail, mask, entries,
// overflow, cqes, flags): where each field lies in the mapping.
type ringOffsets struct {
	head, tail, mask, entries, f4, f5, f6, resv1 uint32
	userAddr                                     uint64
}

// getEventsArg is struct io_uring_getevents_arg (IORING_ENTER_EXT_ARG).
type getEventsArg struct {
	sigmask   uint64
	sigmaskSz uint32
	minWait   uint32
	ts        uint64
}

const (
	setupCQSize        = 1 << 3
	setupClamp         = 1 << 4
	setupRDisabled     = 1 << 6
	setupSubmitAll     = 1 << 7
	setupSingleIssuer  = 1 << 12
	setupDeferTaskrun  = 1 << 13
	setupNoSQArray     = 1 << 16
	enterGetEvents     = 1 << 0
	enterExtArg        = 1 << 3
	featSingleMmap     = 1 << 0
	featExtArg         = 1 << 8
	registerEnable     = 12
	offSQRing          = 0
	offSQEs            = 0x10000000
	opPollAdd          = 6
	opPollRemove       = 7
	opNop              = 0
	opSendmsg          = 9
	opAsyncCancel      = 14
	opRecv             = 27
	sqeBufferSelect    = 1 << 5 // IOSQE_BUFFER_SELECT
	recvPollFirst      = 1 << 0 // IORING_RECVSEND_POLL_FIRST, in ioprio
	cqeFBuffer         = 1 << 0 // IORING_CQE_F_BUFFER: the buffer id is in flags>>16
	registerPbufRing   = 22
	ringEntries        = 512
	ringCQEntries      = 4096
	ringSetupFlags     = setupCQSize | setupClamp | setupRDisabled | setupSubmitAll | setupSingleIssuer | setupDeferTaskrun | setupNoSQArray
	ringRequiredFeats  = featSingleMmap | featExtArg
	sizeofGetEventsArg = unsafe.Sizeof(getEventsArg{})
)

// newRing sets up a ring, disabled until enable runs on the thread that
// will submit to it. An error is the kernel's refusal (EPERM under a
// seccomp profile or kernel.io_uring_disabled, ENOSYS, EINVAL where a
// flag is unknown) with context.
func newRing(stats *Stats) (*ring, error) {
	p := params{flags: ringSetupFlags, cqEntries: ringCQEntries}
	fd, _, e := unix.Syscall(unix.SYS_IO_URING_SETUP, ringEntries, uintptr(unsafe.Pointer(&p)), 0)
	if e != 0 {
		return nil, fmt.Errorf("loop: io_uring_setup: %w", e)
	}
	r := &ring{fd: int(fd), stats: stats}
	if p.features&ringRequiredFeats != ringRequiredFeats {
		r.close()
		return nil, fmt.Errorf("loop: io_uring_setup: features %#x lack %#x", p.features, ringRequiredFeats)
	}
	if err := r.mmap(&p); err != nil {
		r.close()
		return nil, err
	}
	return r, nil
}

// mmap maps the rings (one mapping for both, IORING_FEAT_SINGLE_MMAP)
// and the SQE array.
func (r *ring) mmap(p *params) error {
	// sqOff.f6 is the SQ's array, cqOff.f5 the CQEs, cqOff.f6 the CQ's flags.
	size := max(int(p.sqOff.f6)+int(p.sqEntries)*4, int(p.cqOff.f5)+int(p.cqEntries)*int(unsafe.Sizeof(cqe{})))
	mem, err := unix.Mmap(r.fd, offSQRing, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("loop: io_uring rings mmap: %w", err)
	}
	r.sqMem = mem
	sqes, err := unix.Mmap(r.fd, offSQEs, int(p.sqEntries)*int(unsafe.Sizeof(sqe{})), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE)
	if err != nil {
		return fmt.Errorf("loop: io_uring SQEs mmap: %w", err)
	}
	r.sqeMem = sqes
	at := func(off uint32) *uint32 { return (*uint32)(unsafe.Pointer(&mem[off])) }
	r.sqHead, r.sqTail, r.sqMask = at(p.sqOff.head), at(p.sqOff.tail), at(p.sqOff.mask)
	r.cqHead, r.cqTail, r.cqMask = at(p.cqOff.head), at(p.cqOff.tail), at(p.cqOff.mask)
	r.sqes = unsafe.Slice((*sqe)(unsafe.Pointer(&sqes[0])), p.sqEntries)
	r.cqes = unsafe.Slice((*cqe)(unsafe.Pointer(&mem[p.cqOff.f5])), p.cqEntries)
	r.tail = atomic.LoadUint32(r.sqTail)
	return nil
}

// enable starts a ring set up disabled: the calling thread becomes its
// only submitter (SINGLE_ISSUER), the one whose io_uring_enter runs its
// completions (DEFER_TASKRUN).
func (r *ring) enable() error {
	return r.register(registerEnable, nil, 0)
}

func (r *ring) register(op uintptr, arg unsafe.Pointer, n uintptr) error {
	if _, _, e := unix.Syscall6(unix.SYS_IO_URING_REGISTER, uintptr(r.fd), op, uintptr(arg), n, 0, 0); e != 0 {
		return fmt.Errorf("loop: io_uring_register %d: %w", op, e)
	}
	return nil
}

// next returns a cleared SQE to fill; a full queue is submitted first.
func (r *ring) next() (*sqe, error) {
	if r.tail-atomic.LoadUint32(r.sqHead) >= uint32(len(r.sqes)) {
		if err := r.enter(0, 0, -1, false); err != nil {
			return nil, err
		}
	}
	s := &r.sqes[r.tail&*r.sqMask]
	*s = sqe{}
	r.tail++
	return s, nil
}

// at is the index of the SQE next returned last (for submitted and nop).
func (r *ring) at() uint32 { return r.tail - 1 }

// submitted says whether the kernel has taken SQE i.
func (r *ring) submitted(i uint32) bool { return int32(i-atomic.LoadUint32(r.sqHead)) < 0 }

// nop turns SQE i, not yet submitted, into a no-op whose completion is
// dropped (its user data is removeTag).
func (r *ring) nop(i uint32) { r.sqes[i&*r.sqMask] = sqe{opcode: opNop, userData: removeTag} }

// pending is how many SQEs wait for the next enter.
func (r *ring) pending() uint32 { return r.tail - atomic.LoadUint32(r.sqHead) }

// enter submits the pending SQEs and, with getEvents, runs the ring's
// completions, waiting up to wait nanoseconds (-1: for ever) for at
// least min of them. raw: a raw system call, invisible to the runtime's
// scheduler (the wait is short).
func (r *ring) enter(min uint32, flags uintptr, wait int64, raw bool) error {
	atomic.StoreUint32(r.sqTail, r.tail)
	var arg getEventsArg
	var ts unix.Timespec
	if wait >= 0 && min > 0 {
		ts = unix.NsecToTimespec(wait)
		arg.ts = uint64(uintptr(unsafe.Pointer(&ts)))
	}
	before := atomic.LoadUint32(r.sqHead)
	call := unix.Syscall6
	if raw {
		call = unix.RawSyscall6
	}
	_, _, e := call(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(r.tail-before), uintptr(min), flags|enterExtArg, uintptr(unsafe.Pointer(&arg)), sizeofGetEventsArg)
	r.stats.UringEnters.Add(1)
	r.stats.UringSubmissions.Add(int64(atomic.LoadUint32(r.sqHead) - before))
	switch e {
	case 0, unix.ETIME, unix.EBUSY, unix.EAGAIN:
		// EBUSY, EAGAIN: completions overflowed; reaping makes room.
		return nil
	case unix.EINTR:
		return unix.EINTR
	}
	return fmt.Errorf("loop: io_uring_enter: %w", e)
}

// reap calls fn for each completion posted, until fn answers false.
func (r *ring) reap(fn func(userData uint64, res int32, flags uint32) bool) {
	head := atomic.LoadUint32(r.cqHead)
	tail := atomic.LoadUint32(r.cqTail)
	n := 0
	for more := true; head != tail && more; head++ {
		c := &r.cqes[head&*r.cqMask]
		more = fn(c.userData, c.res, c.flags)
		n++
	}
	atomic.StoreUint32(r.cqHead, head)
	r.stats.UringCompletions.Add(int64(n))
}

func (r *ring) close() error {
	if r.sqeMem != nil {
		unix.Munmap(r.sqeMem)
	}
	if r.sqMem != nil {
		unix.Munmap(r.sqMem)
	}
	r.sqeMem, r.sqMem = nil, nil
	return unix.Close(r.fd)
}
