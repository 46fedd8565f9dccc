//go:build linux

package origin

import (
	"bytes"
	"testing"

	"github.com/valyala/fasthttp"
)

// FuzzParkedFields: a parked request's response fields come back as they
// were (appendFields, setFields), whatever the values, and setFields never
// panics on bytes it did not write.
func FuzzParkedFields(f *testing.F) {
	f.Add("Access-Control-Allow-Origin", "*", []byte("Vary\x00Origin\x00"))
	f.Add("X-Content-Type-Options", "nosniff", []byte("a\x00"))
	f.Add("Vary", "Accept-Encoding, Origin", []byte{})
	f.Fuzz(func(t *testing.T, k, v string, junk []byte) {
		var h fasthttp.ResponseHeader
		h.SetNoDefaultContentType(true)
		if bytes.ContainsAny([]byte(k+v), "\x00\r\n") || !validFieldName(k) {
			return
		}
		h.Set(k, v)
		b := appendFields(nil, &h)
		var got fasthttp.ResponseHeader
		got.SetNoDefaultContentType(true)
		if err := setFields(&got, b); err != nil {
			t.Fatalf("setFields(%q): %v", b, err)
		}
		if again := appendFields(nil, &got); !bytes.Equal(again, b) {
			t.Fatalf("fields %q came back as %q", b, again)
		}
		var other fasthttp.ResponseHeader
		_ = setFields(&other, junk)
	})
}

// validFieldName: a token (RFC 9110 §5.6.2), as a field name is.
func validFieldName(k string) bool {
	if k == "" {
		return false
	}
	for _, c := range []byte(k) {
		if c <= ' ' || c >= 0x7f || bytes.IndexByte([]byte(`"(),/:;<=>?@[\]{}`), c) >= 0 {
			return false
		}
	}
	return true
}
