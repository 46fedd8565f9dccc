package conn

import (
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countingConn counts the writes that reach the socket and, once failing
// is set, fails them.
type countingConn struct {
	net.Conn
	writes  atomic.Int32
	failing atomic.Bool
	tried   atomic.Int32 // writes attempted while failing
}

var errTestWrite = errors.New("test: write refused")

func (c *countingConn) Write(p []byte) (int, error) {
	if c.failing.Load() {
		c.tried.Add(1)
		return 0, errTestWrite
	}
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// userspaceTLS returns a server connection over one end of a pipe (the
// development certificate, no kTLS) after the handshake with a client on
// the other end, the counter under it, and the client.
func userspaceTLS(t *testing.T) (*tlsConn, *countingConn, *tls.Conn) {
	t.Helper()
	st, err := NewTLS(TLSParams{Config: TLSConfig{Dev: true, KTLS: KTLSOff}})
	if err != nil {
		t.Fatal(err)
	}
	a, b := net.Pipe()
	deadline := time.Now().Add(10 * time.Second)
	a.SetDeadline(deadline)
	b.SetDeadline(deadline)
	cc := &countingConn{Conn: a}
	srv := st.newTLSConn(cc)
	cli := tls.Client(b, &tls.Config{InsecureSkipVerify: true})
	t.Cleanup(func() { a.Close(); b.Close() })
	var wg sync.WaitGroup
	var cerr error
	wg.Go(func() { cerr = cli.Handshake() })
	if err := srv.Handshake(); err != nil {
		t.Fatalf("server handshake: %v", err)
	}
	wg.Wait()
	if cerr != nil {
		t.Fatalf("client handshake: %v", cerr)
	}
	return srv, cc, cli
}

// TestUserspaceTLSGathersRecords: a body written over userspace TLS in
// one Write leaves in one socket write per 64 KiB (four full records),
// not one per record, and the client reads exactly the bytes written.
func TestUserspaceTLSGathersRecords(t *testing.T) {
	srv, cc, cli := userspaceTLS(t)
	body := bytes.Repeat([]byte("0123456789abcdef"), 200<<10/16) // 200 KiB
	var got []byte
	var rerr error
	var wg sync.WaitGroup
	wg.Go(func() { got, rerr = io.ReadAll(io.LimitReader(cli, int64(len(body)))) })
	before := cc.writes.Load()
	n, err := srv.Write(body)
	wg.Wait()
	if err != nil || n != len(body) {
		t.Fatalf("Write = %d, %v; want %d", n, err, len(body))
	}
	if rerr != nil || !bytes.Equal(got, body) {
		t.Fatalf("client read %d bytes (%v), equal %v; want the %d written", len(got), rerr, bytes.Equal(got, body), len(body))
	}
	want := int32((len(body) + gatherSize - 1) / gatherSize)
	if w := cc.writes.Load() - before; w != want {
		t.Errorf("%d socket writes for %d bytes; want %d (one per %d bytes)", w, len(body), want, gatherSize)
	}
}

// TestUserspaceTLSFailedWriteNoCloseNotify: after a write of records
// fails, Close writes nothing more: a close_notify after a record cut
// short is garbage to the client, and to a peer that stopped reading it
// would hold the close for crypto/tls's 5 s.
func TestUserspaceTLSFailedWriteNoCloseNotify(t *testing.T) {
	for _, size := range []int{1 << 10, 100 << 10} {
		srv, cc, _ := userspaceTLS(t)
		cc.failing.Store(true)
		if _, err := srv.Write(make([]byte, size)); !errors.Is(err, errTestWrite) {
			t.Fatalf("Write of %d bytes: %v; want the socket's error", size, err)
		}
		tried := cc.tried.Load()
		srv.Close()
		if n := cc.tried.Load() - tried; n != 0 {
			t.Errorf("Close after a failed %d-byte write tried %d more writes (close_notify); want none", size, n)
		}
	}
}
