package ktls

// HandshakeScanner watches the bytes a TLS server writes during the
// handshake (record headers are in the clear) and learns what crypto/tls
// does not expose: the ServerHello random, and how many records the server
// sealed after its ChangeCipherSpec (TLS 1.2: the sequence number of the
// next record). Feed it every byte written, in order, until hand-over.
type HandshakeScanner struct {
	prefix  [43]byte // the stream's first bytes: record header (5), handshake header (4), version (2), random (32)
	nprefix int
	frame   Framer

	afterCCS bool   // a ChangeCipherSpec record has been written
	sinceCCS uint64 // records begun after it
}

// Write feeds p; it never fails.
func (s *HandshakeScanner) Write(p []byte) (int, error) {
	n := len(p)
	if s.nprefix < len(s.prefix) {
		s.nprefix += copy(s.prefix[s.nprefix:], p)
	}
	for len(p) > 0 {
		k, header := s.frame.Advance(p)
		p = p[k:]
		if !header {
			continue
		}
		if s.afterCCS {
			s.sinceCCS++
		}
		if s.frame.Header()[0] == RecordChangeCipherSpec {
			s.afterCCS = true
		}
	}
	return n, nil
}

// ServerRandom returns the random of the ServerHello the server wrote
// first, or nil if the stream did not begin with one. (TLS 1.2 has no
// HelloRetryRequest, so the first ServerHello is the one.)
func (s *HandshakeScanner) ServerRandom() []byte {
	p := s.prefix[:s.nprefix]
	if len(p) < len(s.prefix) || p[0] != RecordHandshake || p[5] != 2 /* server_hello */ {
		return nil
	}
	return clone(p[11:43])
}

// RecordsAfterCCS reports whether a ChangeCipherSpec was written and how
// many records followed it: in TLS 1.2, the sequence number of the next
// record under the new keys (the Finished is 0).
func (s *HandshakeScanner) RecordsAfterCCS() (uint64, bool) {
	return s.sinceCCS, s.afterCCS
}

// Complete reports whether the stream ends on a record boundary.
func (s *HandshakeScanner) Complete() bool { return s.frame.Boundary() }
