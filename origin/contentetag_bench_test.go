package origin_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"segorigin/origin"
	"segorigin/origin/etag"
)

// BenchmarkFirstRequestContentETag is the latency of a file's first
// request under -etag content (a 1-byte range, so the body's transfer does
// not count), for a 2 MiB and a 1 GiB file in the page cache: without the
// extended attribute (the request waits for the hash) and with it (one
// fgetxattr). The cache is off, so every request is a file's first.
func BenchmarkFirstRequestContentETag(b *testing.B) {
	for _, size := range []int64{2 << 20, 1 << 30} {
		root := b.TempDir()
		p := writeSynth(b, root, "f.mp4", size)
		ts := startServer(b, root, func(c *origin.Config) {
			c.ETag = origin.ETagContent
			c.CacheFiles = 0
			c.Watch = false
			c.ColdDeadline = time.Minute
		})
		c := ts.httpClient()
		get := func(b *testing.B) {
			req, _ := http.NewRequest("GET", "http://"+ts.addr+"/f.mp4", nil)
			req.Header.Set("Range", "bytes=0-0")
			resp, err := c.Do(req)
			if err != nil {
				b.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 206 {
				b.Fatalf("status %d", resp.StatusCode)
			}
		}
		for _, attr := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dMiB/attr=%v", size>>20, attr), func(b *testing.B) {
				get(b) // stores the attribute; brings the file into the page cache
				for b.Loop() {
					if !attr {
						b.StopTimer()
						if err := unix.Removexattr(p, etag.Attr); err != nil {
							b.Fatal(err)
						}
						b.StartTimer()
					}
					get(b)
				}
			})
		}
	}
}
