package stream

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"segorigin/origin/wire"
)

// writeCounter is a connection that takes no sendfile (as userspace TLS),
// counting its writes.
type writeCounter struct {
	net.Conn
	writes atomic.Int32
}

func (w *writeCounter) Write(p []byte) (int, error) {
	w.writes.Add(1)
	return w.Conn.Write(p)
}

// sendOver sends r through a sender on a pipe and returns what the peer
// read and the writes it took; wait is called, with the counter, where
// the sender waits.
func sendOver(t *testing.T, r *wire.Response, want int, wait func(*writeCounter) bool) ([]byte, int32) {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	deadline := time.Now().Add(10 * time.Second)
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	wc := &writeCounter{Conn: a}
	o := sender{nc: wc, cfg: &Config{Window: 4 << 20}, wait: func() bool { return wait(wc) }}
	var got []byte
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() { got, rerr = io.ReadAll(io.LimitReader(b, int64(want))) })
	if err := o.send(r); err != nil {
		t.Fatalf("send: %v", err)
	}
	wg.Wait()
	if rerr != nil {
		t.Fatalf("peer read: %v", rerr)
	}
	if r.Cursor.Sent != int64(want) {
		t.Errorf("Cursor.Sent = %d, want %d", r.Cursor.Sent, want)
	}
	return got, wc.writes.Load()
}

func spanFile(t *testing.T, n int) (*os.File, []byte) {
	t.Helper()
	body := bytes.Repeat([]byte("0123456789abcdef"), n/16)
	p := filepath.Join(t.TempDir(), "part.m4s")
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f, body
}

// TestHeaderLeavesWithTheSpan: where a file span takes no sendfile
// (userspace TLS), the header goes out in the same write as the span's
// first bytes: a 48 KiB part in one write, not two, and the peer reads
// header then body, exactly.
func TestHeaderLeavesWithTheSpan(t *testing.T) {
	f, body := spanFile(t, 48<<10)
	hdr := []byte("HTTP/1.1 200 OK\r\nContent-Length: 49152\r\n\r\n")
	r := &wire.Response{Parts: []wire.Part{{Mem: hdr}, {Fd: int(f.Fd()), Len: int64(len(body))}}}
	got, writes := sendOver(t, r, len(hdr)+len(body), func(*writeCounter) bool { return true })
	if want := append(append([]byte{}, hdr...), body...); !bytes.Equal(got, want) {
		t.Fatalf("peer read %d bytes, not the header and the file's %d", len(got), len(body))
	}
	if writes != 1 {
		t.Errorf("%d writes for a header and a 48 KiB span; want 1", writes)
	}
}

// TestHeaderNotHeldThroughAWait: a span whose Ready hook says "not yet"
// (cold storage) does not keep its header back: the header is written
// before the sender waits.
func TestHeaderNotHeldThroughAWait(t *testing.T) {
	f, body := spanFile(t, 16<<10)
	hdr := []byte("HTTP/1.1 200 OK\r\nContent-Length: 16384\r\n\r\n")
	var asked atomic.Int32
	r := &wire.Response{Parts: []wire.Part{{Mem: hdr}, {Fd: int(f.Fd()), Len: int64(len(body))}}}
	r.Ready = func(_ *wire.Part, _, n int64) (int64, bool) {
		return n, asked.Add(1) > 1
	}
	writesAtWait := int32(-1)
	got, writes := sendOver(t, r, len(hdr)+len(body), func(w *writeCounter) bool {
		writesAtWait = w.writes.Load()
		return true
	})
	if want := append(append([]byte{}, hdr...), body...); !bytes.Equal(got, want) {
		t.Fatalf("peer read %d bytes, not the header and the file's %d", len(got), len(body))
	}
	if writesAtWait != 1 || writes != 2 {
		t.Errorf("%d writes before the wait, %d in all; want 1 (the header) and 2", writesAtWait, writes)
	}
}
