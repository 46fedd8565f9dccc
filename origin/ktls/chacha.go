package ktls

import (
	"crypto/subtle"
	"encoding/binary"
	"errors"
	"math/big"
	"math/bits"
)

// chachaPoly is ChaCha20-Poly1305 (RFC 8439 §2.8) for the test Sealer only:
// the standard library keeps its implementation internal and this module
// does not depend on golang.org/x/crypto. It is written for obviousness,
// not speed (Poly1305 in math/big), and is checked against RFC 8439's
// vectors and by stock TLS clients decrypting its records.
type chachaPoly struct{ key [32]byte }

func newChaChaPoly(key []byte) (*chachaPoly, error) {
	if len(key) != 32 {
		return nil, errors.New("ktls: chacha20-poly1305 key must be 32 bytes")
	}
	c := &chachaPoly{}
	copy(c.key[:], key)
	return c, nil
}

func (c *chachaPoly) NonceSize() int { return 12 }
func (c *chachaPoly) Overhead() int  { return 16 }

func (c *chachaPoly) Seal(dst, nonce, plaintext, aad []byte) []byte {
	ct := make([]byte, len(plaintext))
	chacha20XOR(&c.key, nonce, 1, ct, plaintext)
	tag := c.tag(nonce, aad, ct)
	return append(append(dst, ct...), tag[:]...)
}

func (c *chachaPoly) Open(dst, nonce, ciphertext, aad []byte) ([]byte, error) {
	if len(ciphertext) < 16 {
		return nil, errors.New("ktls: message authentication failed")
	}
	ct, tag := ciphertext[:len(ciphertext)-16], ciphertext[len(ciphertext)-16:]
	want := c.tag(nonce, aad, ct)
	if subtle.ConstantTimeCompare(want[:], tag) != 1 {
		return nil, errors.New("ktls: message authentication failed")
	}
	pt := make([]byte, len(ct))
	chacha20XOR(&c.key, nonce, 1, pt, ct)
	return append(dst, pt...), nil
}

// tag is the Poly1305 tag over aad and ct (RFC 8439 §2.8), keyed by the
// first 32 bytes of the ChaCha20 block with counter 0.
func (c *chachaPoly) tag(nonce, aad, ct []byte) [16]byte {
	var otk [64]byte
	chacha20XOR(&c.key, nonce, 0, otk[:], otk[:])
	var msg []byte
	msg = append(msg, aad...)
	msg = append(msg, make([]byte, (16-len(aad)%16)%16)...)
	msg = append(msg, ct...)
	msg = append(msg, make([]byte, (16-len(ct)%16)%16)...)
	msg = binary.LittleEndian.AppendUint64(msg, uint64(len(aad)))
	msg = binary.LittleEndian.AppendUint64(msg, uint64(len(ct)))
	return poly1305(otk[:32], msg)
}

// poly1305 is RFC 8439 §2.5.
func poly1305(key, msg []byte) [16]byte {
	rb := append([]byte{}, key[:16]...)
	for _, i := range []int{3, 7, 11, 15} {
		rb[i] &= 15
	}
	for _, i := range []int{4, 8, 12} {
		rb[i] &= 252
	}
	r, s := leInt(rb), leInt(key[16:32])
	p := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 130), big.NewInt(5))
	h := new(big.Int)
	for len(msg) > 0 {
		blk := msg[:min(16, len(msg))]
		msg = msg[len(blk):]
		n := leInt(append(append([]byte{}, blk...), 1))
		h.Add(h, n)
		h.Mul(h, r)
		h.Mod(h, p)
	}
	h.Add(h, s)
	var out [16]byte
	b := h.Bytes() // big-endian
	for i := 0; i < 16 && i < len(b); i++ {
		out[i] = b[len(b)-1-i]
	}
	return out
}

func leInt(le []byte) *big.Int {
	be := make([]byte, len(le))
	for i, v := range le {
		be[len(le)-1-i] = v
	}
	return new(big.Int).SetBytes(be)
}

// chacha20XOR XORs src with the ChaCha20 key stream (RFC 8439 §2.4) from
// block counter ctr into dst.
func chacha20XOR(key *[32]byte, nonce []byte, ctr uint32, dst, src []byte) {
	var in [16]uint32
	in[0], in[1], in[2], in[3] = 0x61707865, 0x3320646e, 0x79622d32, 0x6b206574
	for i := range 8 {
		in[4+i] = binary.LittleEndian.Uint32(key[4*i:])
	}
	for i := range 3 {
		in[13+i] = binary.LittleEndian.Uint32(nonce[4*i:])
	}
	var ks [64]byte
	for off := 0; off < len(src); off += 64 {
		in[12] = ctr
		ctr++
		x := in
		for range 10 {
			qr(&x, 0, 4, 8, 12)
			qr(&x, 1, 5, 9, 13)
			qr(&x, 2, 6, 10, 14)
			qr(&x, 3, 7, 11, 15)
			qr(&x, 0, 5, 10, 15)
			qr(&x, 1, 6, 11, 12)
			qr(&x, 2, 7, 8, 13)
			qr(&x, 3, 4, 9, 14)
		}
		for i := range 16 {
			binary.LittleEndian.PutUint32(ks[4*i:], x[i]+in[i])
		}
		for i := off; i < len(src) && i < off+64; i++ {
			dst[i] = src[i] ^ ks[i-off]
		}
	}
}

func qr(x *[16]uint32, a, b, c, d int) {
	x[a] += x[b]
	x[d] = bits.RotateLeft32(x[d]^x[a], 16)
	x[c] += x[d]
	x[b] = bits.RotateLeft32(x[b]^x[c], 12)
	x[a] += x[b]
	x[d] = bits.RotateLeft32(x[d]^x[a], 8)
	x[c] += x[d]
	x[b] = bits.RotateLeft32(x[b]^x[c], 7)
}
