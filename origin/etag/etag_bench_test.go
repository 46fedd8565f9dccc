package etag

import (
	"crypto/sha256"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkSum hashes a 256 MiB file in the page cache (read with pread
// into a 1 MiB buffer, as the server does), beside crypto/sha256 over the
// same reads as a baseline: MB/s is what a file costs to hash once.
func BenchmarkSum(b *testing.B) {
	const size = 256 << 20
	p := filepath.Join(b.TempDir(), "f")
	data := make([]byte, size)
	r := rand.NewChaCha8([32]byte{})
	r.Read(data)
	if err := os.WriteFile(p, data, 0o644); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(p)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	b.Run("xxh3-128", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			if _, err := Sum(f, size, buf); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("sha256", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			h := sha256.New()
			if _, err := io.CopyBuffer(h, io.NewSectionReader(f, 0, size), buf); err != nil {
				b.Fatal(err)
			}
			h.Sum(nil)
		}
	})
}
