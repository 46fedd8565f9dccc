package conn

import (
	"errors"
	"io"
	"net"
)

// TLSRecordSize is one full TLS record of plaintext. A TLS connection
// writes what it is given past that in one write of several records.
const TLSRecordSize = 16 << 10

// CopySpan is the userspace body path: it sends n bytes of f from off to
// c, pread into buf then write (over TLS, buf's records leave in one
// write). A file that ends first returns ErrTruncated after what it had.
func CopySpan(c net.Conn, f io.ReaderAt, off, n int64, buf []byte) (int64, error) {
	var sent int64
	for sent < n {
		chunk := buf[:min(int64(len(buf)), n-sent)]
		r, rerr := f.ReadAt(chunk, off+sent)
		if r > 0 {
			k, err := c.Write(chunk[:r])
			sent += int64(k)
			if err != nil {
				return sent, err
			}
		}
		if rerr != nil {
			if errors.Is(rerr, io.EOF) {
				return sent, ErrTruncated
			}
			return sent, rerr
		}
	}
	return sent, nil
}
