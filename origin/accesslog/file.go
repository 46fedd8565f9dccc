package accesslog

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// File is an access log that can be re-opened by name after logrotate
// moved it. Writes are one write(2) each on an O_APPEND descriptor, so
// lines from concurrent responses never interleave, and they take no
// lock: Reopen swaps the descriptor, and a write that raced with the
// swap onto the old, now closed, one is retried on the new one.
//
// Opened with a Buffer, lines gather in memory instead and go out
// together, whole lines only (see Buffer).
type File struct {
	path string
	w    atomic.Pointer[os.File] // the current descriptor
	mu   sync.Mutex              // serialises Reopen and Close
	std  bool                    // standard output: never closed or reopened
	buf  *buffer                 // nil: a write(2) per line
}

// Buffer is nginx's access_log buffer= and flush=: lines gather in
// memory and are written together when the next would not fit in Size
// bytes, when the first of them has waited Flush, at Reopen (to the file
// they were logged to) and at Close. A busy server then makes one
// write(2) per Size bytes of log instead of one per response, and fills
// whole pages (a line-sized append also has the kernel zero the rest of
// each page it starts). A line longer than Size is written on its own.
type Buffer struct {
	Size  int           // bytes; 0: no buffering, a write(2) per line
	Flush time.Duration // the longest a line waits; 0: until Size fills
}

// buffer is a File's gathered lines.
type buffer struct {
	Buffer
	mu     sync.Mutex
	lines  []byte      // whole lines not written yet
	timer  *time.Timer // runs flushLate Flush after the first line gathered; nil when Flush is 0
	late   error       // flushLate's write error, returned by the next Write
	closed bool
}

// Open opens path for appending (creating it, mode 0644), or returns
// standard output for "-".
func Open(path string) (*File, error) { return OpenBuffered(path, Buffer{}) }

// OpenBuffered is Open, with lines buffered as b says.
func OpenBuffered(path string, b Buffer) (*File, error) {
	if b.Size < 0 || b.Flush < 0 {
		return nil, fmt.Errorf("access log buffer %d bytes, flush %v: want >= 0", b.Size, b.Flush)
	}
	f := &File{path: path}
	if path == "-" {
		f.std = true
		f.w.Store(os.Stdout)
	} else {
		fd, err := openAppend(path)
		if err != nil {
			return nil, err
		}
		f.w.Store(fd)
	}
	if b.Size > 0 {
		f.buf = &buffer{Buffer: b, lines: make([]byte, 0, b.Size)}
		if b.Flush > 0 {
			f.buf.timer = time.AfterFunc(b.Flush, f.flushLate)
			f.buf.timer.Stop()
		}
	}
	return f, nil
}

func openAppend(path string) (*os.File, error) {
	fd, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("access log: %w", err)
	}
	return fd, nil
}

// Write writes p, one line: with a single write(2), or into the buffer.
// An error may be an earlier buffered write's, which lost the lines it
// held.
func (f *File) Write(p []byte) (int, error) {
	b := f.buf
	if b == nil {
		return f.write(p)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return 0, os.ErrClosed
	}
	err := b.late
	b.late = nil
	if len(b.lines)+len(p) > b.Size {
		err = errors.Join(err, f.flushLocked())
	}
	if len(p) > b.Size {
		_, werr := f.write(p)
		return len(p), errors.Join(err, werr)
	}
	if len(b.lines) == 0 && b.timer != nil {
		b.timer.Reset(b.Flush)
	}
	b.lines = append(b.lines, p...)
	return len(p), err
}

// write writes p with one write(2).
func (f *File) write(p []byte) (int, error) {
	for {
		fd := f.w.Load()
		if fd == nil {
			return 0, os.ErrClosed
		}
		n, err := fd.Write(p)
		if errors.Is(err, os.ErrClosed) && n == 0 && f.w.Load() != fd {
			continue // Reopen closed fd under us: the line goes to the new file
		}
		return n, err
	}
}

// flushLocked writes the gathered lines (f.buf.mu held).
func (f *File) flushLocked() error {
	b := f.buf
	if len(b.lines) == 0 {
		return nil
	}
	_, err := f.write(b.lines)
	b.lines = b.lines[:0]
	return err
}

// flushLate is the timer's: the first gathered line has waited Flush.
// Its goroutine is the runtime's timer's, and ends here.
func (f *File) flushLate() {
	b := f.buf
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if err := f.flushLocked(); err != nil {
		b.late = errors.Join(b.late, err)
	}
}

// Flush writes the lines gathered so far, if any.
func (f *File) Flush() error {
	b := f.buf
	if b == nil {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	err := b.late
	b.late = nil
	return errors.Join(err, f.flushLocked())
}

// Reopen opens the path anew and moves writes to it, then closes the old
// descriptor: what logrotate's "create" mode wants after it renamed the
// file. If the open fails, writes stay on the old descriptor.
func (f *File) Reopen() error {
	if f.std {
		return nil
	}
	ferr := f.Flush() // the lines logged so far belong to the file moved away
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.w.Load() == nil {
		return os.ErrClosed
	}
	fd, err := openAppend(f.path)
	if err != nil {
		return errors.Join(ferr, err)
	}
	return errors.Join(ferr, f.w.Swap(fd).Close())
}

// Close writes the gathered lines and closes the file; later writes fail
// with os.ErrClosed.
func (f *File) Close() error {
	var err error
	if b := f.buf; b != nil {
		b.mu.Lock()
		if !b.closed {
			b.closed = true
			if b.timer != nil {
				b.timer.Stop()
			}
			err = errors.Join(b.late, f.flushLocked())
		}
		b.mu.Unlock()
	}
	if f.std {
		return err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if fd := f.w.Swap(nil); fd != nil {
		return errors.Join(err, fd.Close())
	}
	return err
}

// Path returns the name Open was given.
func (f *File) Path() string { return f.path }

var _ io.Writer = (*File)(nil)
