//go:build linux

package conn_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"segorigin/origin/conn"
)

// tcpPair returns both ends of one loopback connection: the server's as
// a gate's listener accepts it, and the client's.
func tcpPair(t *testing.T) (*conn.TCP, net.Conn) {
	t.Helper()
	l, addr := gateListener(t)
	client := dialFrom(t, "127.0.0.1", addr)
	c, err := l.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	client.SetDeadline(time.Now().Add(10 * time.Second))
	return c.(*conn.TCP), client
}

// readAll reads what the server sends until it closes, in the background.
func readAll(c net.Conn) <-chan []byte {
	ch := make(chan []byte, 1)
	go func() { // ends at EOF or the deadline
		b, _ := io.ReadAll(c)
		ch <- b
	}()
	return ch
}

// pattern is n bytes no two nearby of which repeat, so a misplaced span
// shows.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	return b
}

func fileOf(t *testing.T, content []byte) *os.File {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, content, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// TestHeaderThenSendfileSpans: a response as the sendfile body path writes
// it (the header with MSG_MORE, a sendfile span, framing with MSG_MORE, a
// second span, a plain trailer) arrives as exactly those bytes, in order.
func TestHeaderThenSendfileSpans(t *testing.T) {
	content := pattern(300_000)
	f := fileOf(t, content)
	c, client := tcpPair(t)
	got := readAll(client)
	if conn.Socket(c) != c {
		t.Fatalf("Socket(TCP) is not the connection itself")
	}

	header := []byte("HTTP/1.1 206 Partial Content\r\nContent-Length: 250010\r\n\r\n")
	framing, trailer := []byte("\r\n--b\r\n"), []byte("\r\n--b--\r\n")
	if n, err := c.WriteMore(header); err != nil || n != int64(len(header)) {
		t.Fatalf("WriteMore(header) = %d, %v", n, err)
	}
	if n, err := c.Sendfile(int(f.Fd()), 1000, 200_000); err != nil || n != 200_000 {
		t.Fatalf("Sendfile(1000, 200000) = %d, %v", n, err)
	}
	if n, err := c.WriteMore(framing); err != nil || n != int64(len(framing)) {
		t.Fatalf("WriteMore(framing) = %d, %v", n, err)
	}
	if n, err := c.Sendfile(int(f.Fd()), 250_000, 50_000); err != nil || n != 50_000 {
		t.Fatalf("Sendfile(250000, 50000) = %d, %v", n, err)
	}
	if n, err := c.Write(trailer); err != nil || n != len(trailer) {
		t.Fatalf("Write(trailer) = %d, %v", n, err)
	}
	c.Close()

	want := bytes.Join([][]byte{header, content[1000:201_000], framing, content[250_000:300_000], trailer}, nil)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("client read %d bytes, want %d; first difference at %d", len(b), len(want), firstDiff(b, want))
	}
	// The file's shared offset is never used.
	if off, err := f.Seek(0, io.SeekCurrent); err != nil || off != 0 {
		t.Errorf("file offset after Sendfile = %d, %v; want 0", off, err)
	}
}

// TestSendfileShortFile: a span past the end of a file that shrank sends
// what there is and reports ErrTruncated, never padding.
func TestSendfileShortFile(t *testing.T) {
	content := pattern(1000)
	f := fileOf(t, content)
	c, client := tcpPair(t)
	got := readAll(client)
	n, err := c.Sendfile(int(f.Fd()), 500, 1000)
	if !errors.Is(err, conn.ErrTruncated) || n != 500 {
		t.Fatalf("Sendfile(500, 1000) of a 1000-byte file = %d, %v; want 500, ErrTruncated", n, err)
	}
	c.Close()
	if b := <-got; !bytes.Equal(b, content[500:]) {
		t.Fatalf("client read %d bytes, want the file's last 500; first difference at %d", len(b), firstDiff(b, content[500:]))
	}
}

// TestCopySpan: the userspace path sends the same bytes as sendfile, in
// buffer-sized writes, and a file that ends first is ErrTruncated after
// what it had.
func TestCopySpan(t *testing.T) {
	content := pattern(200_000)
	f := fileOf(t, content)
	c, client := tcpPair(t)
	got := readAll(client)
	buf := make([]byte, 64<<10)
	if n, err := conn.CopySpan(c, f, 7, 150_000, buf); err != nil || n != 150_000 {
		t.Fatalf("CopySpan(7, 150000) = %d, %v", n, err)
	}
	n, err := conn.CopySpan(c, f, 190_000, 20_000, buf)
	if !errors.Is(err, conn.ErrTruncated) || n != 10_000 {
		t.Fatalf("CopySpan past the end = %d, %v; want 10000, ErrTruncated", n, err)
	}
	c.Close()
	want := append(append([]byte(nil), content[7:150_007]...), content[190_000:]...)
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("client read %d bytes, want %d; first difference at %d", len(b), len(want), firstDiff(b, want))
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// TestSendfileUnsupported: a descriptor sendfile refuses before sending
// anything (EINVAL: here a directory, as some file systems refuse) is
// ErrSendfileUnsupported, so the caller serves the span by copy; nothing
// reached the socket.
func TestSendfileUnsupported(t *testing.T) {
	dir, err := os.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer dir.Close()
	c, client := tcpPair(t)
	got := readAll(client)
	if n, err := c.Sendfile(int(dir.Fd()), 0, 10); !errors.Is(err, conn.ErrSendfileUnsupported) || n != 0 {
		t.Fatalf("Sendfile from a directory = %d, %v; want 0, ErrSendfileUnsupported", n, err)
	}
	c.Close()
	if b := <-got; len(b) != 0 {
		t.Fatalf("client read %q, want nothing", b)
	}
}
