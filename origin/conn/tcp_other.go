//go:build !linux

package conn

// Off Linux there is no sendfile path: every body goes through the copy
// path, and the header is not corked.

// SendfileAvailable: this platform has the sendfile body path.
const SendfileAvailable = false

func (c *TCP) CorkHeader() {}

// SetTail sets nothing off Linux: the caller writes the body itself.
func (c *TCP) SetTail([]byte, int) bool { return false }

func (c *TCP) TakeTail() (int64, bool, error) { return 0, false, nil }
func (c *TCP) UncorkHeader()                  {}

func (c *TCP) WriteMore(p []byte) (int64, error) {
	n, err := c.TCPConn.Write(p)
	return int64(n), err
}

func (c *TCP) Sendfile(int, int64, int64) (int64, error) { return 0, ErrSendfileUnsupported }

func (c *TCP) writeMoreOnce(uintptr) bool { return true }
func (c *TCP) sendfileOnce(uintptr) bool  { return true }
