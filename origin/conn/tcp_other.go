//go:build !linux

package conn

// Off Linux there is no sendfile path: every body goes through the copy
// path.

// SendfileAvailable: this platform has the sendfile body path.
const SendfileAvailable = false

func (c *TCP) WriteMore(p []byte) (int64, error) {
	n, err := c.TCPConn.Write(p)
	return int64(n), err
}

func (c *TCP) Sendfile(int, int64, int64) (int64, error) { return 0, ErrSendfileUnsupported }

func (c *TCP) writeMoreOnce(uintptr) bool { return true }
func (c *TCP) sendfileOnce(uintptr) bool  { return true }
