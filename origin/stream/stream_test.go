package stream_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/origin/stream"
	"segorigin/origin/wire"
)

// lineHandler answers each line: "park" later from another goroutine,
// "file N" with the first N bytes of its file, anything else echoed.
type lineHandler struct {
	file   *os.File
	resp   wire.Response
	closed chan struct{}
	done   []error
}

func (h *lineHandler) Accept(*stream.Conn) bool { return true }
func (h *lineHandler) Closed(*stream.Conn)      { close(h.closed) }

func (h *lineHandler) Timeout(c *stream.Conn, reading bool) {
	if reading {
		h.resp = wire.Response{Parts: []wire.Part{{Mem: []byte("timeout\n")}}, Close: true}
		c.Send(&h.resp)
	}
}

func (h *lineHandler) Data(c *stream.Conn, in []byte, full bool) int {
	i := bytes.IndexByte(in, '\n')
	if i < 0 {
		return 0
	}
	line := string(in[:i])
	h.resp = wire.Response{Done: func(_ int64, err error) { h.done = append(h.done, err) }}
	switch {
	case line == "park":
		c.Park()
		go func() {
			time.Sleep(10 * time.Millisecond)
			c.Post(func() {
				h.resp.Parts = []wire.Part{{Mem: []byte("parked\n")}}
				c.Send(&h.resp)
			})
		}()
	case strings.HasPrefix(line, "file "):
		n, _ := strconv.Atoi(line[5:])
		h.resp.Parts = []wire.Part{{Mem: []byte("file:")}, {Fd: int(h.file.Fd()), Off: 0, Len: int64(n)}}
		c.Send(&h.resp)
	default:
		h.resp.Parts = []wire.Part{{Mem: []byte(line)}, {Mem: []byte("\n")}}
		c.Send(&h.resp)
	}
	return i + 1
}

func serve(t *testing.T, cfg stream.Config) (*stream.Server, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := stream.New(cfg)
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }() // ends when Shutdown closes ln
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return s, ln.Addr().String()
}

func newHandler(t *testing.T, content string) *lineHandler {
	t.Helper()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return &lineHandler{file: f, closed: make(chan struct{})}
}

// TestPipelinedInOrder: requests sent at once are answered in order, a
// parked one included, and a file span follows its header.
func TestPipelinedInOrder(t *testing.T) {
	h := newHandler(t, "0123456789")
	_, addr := serve(t, stream.Config{Handler: h, ReadBuffer: 64})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "a\npark\nfile 4\nb\n")
	want := "a\nparked\nfile:0123b\n"
	got := make([]byte, len(want))
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(c, got); err != nil || string(got) != want {
		t.Fatalf("answers %q, %v; want %q", got, err, want)
	}
}

// TestReadTimeoutAnswers: a request that does not end within the read
// timeout gets the Handler's answer, then the connection closes.
func TestReadTimeoutAnswers(t *testing.T) {
	h := newHandler(t, "")
	_, addr := serve(t, stream.Config{Handler: h, ReadTimeout: 100 * time.Millisecond})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "no end of line")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, err := io.ReadAll(c)
	if err != nil || string(b) != "timeout\n" {
		t.Fatalf("read %q, %v; want the timeout answer, then EOF", b, err)
	}
}

// TestTruncatedSpanCloses: a file shorter than its span ends the
// connection with ErrTruncated, never a short answer on a kept one.
func TestTruncatedSpanCloses(t *testing.T) {
	h := newHandler(t, "0123")
	_, addr := serve(t, stream.Config{Handler: h})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "file 10\n")
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	b, _ := io.ReadAll(c)
	if string(b) != "file:0123" {
		t.Fatalf("read %q, want the 4 bytes there were, then the close", b)
	}
	<-h.closed
	if len(h.done) != 1 || h.done[0] != wire.ErrTruncated {
		t.Fatalf("Done errors %v, want [ErrTruncated]", h.done)
	}
}

// TestShutdownClosesIdle: Shutdown ends an idle connection at once and
// returns.
func TestShutdownClosesIdle(t *testing.T) {
	h := newHandler(t, "")
	s, addr := serve(t, stream.Config{Handler: h})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	io.WriteString(c, "x\n")
	br := bufio.NewReader(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if line, err := br.ReadString('\n'); line != "x\n" {
		t.Fatalf("read %q, %v", line, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Fatalf("after Shutdown: read %v, want EOF", err)
	}
}
