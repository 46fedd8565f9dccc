package ktls

import (
	"crypto/tls"
	"fmt"
)

// Kind is what a control record (any record but application data) read
// from a kTLS receive direction asks of the server.
type Kind int

const (
	// KindCloseNotify: the alert close_notify (RFC 8446 §6.1): the client
	// sends no more; close cleanly.
	KindCloseNotify Kind = iota + 1
	// KindAlert: any other alert; in TLS 1.3 all but user_canceled are
	// fatal (§6.2), and none leaves anything to serve: close.
	KindAlert
	// KindKeyUpdate: a TLS 1.3 KeyUpdate (§4.6.3): the client's next
	// record is sealed with its next traffic secret.
	KindKeyUpdate
	// KindHandshake: any other handshake message (a TLS 1.2
	// renegotiation's ClientHello, a malformed KeyUpdate): close.
	KindHandshake
	// KindOther: a record of a type that has no place after the handshake.
	KindOther
)

// Kinds lists every Kind, in the order metrics show them.
var Kinds = []Kind{KindCloseNotify, KindAlert, KindKeyUpdate, KindHandshake, KindOther}

func (k Kind) String() string {
	switch k {
	case KindCloseNotify:
		return "close_notify"
	case KindAlert:
		return "alert"
	case KindKeyUpdate:
		return "key_update"
	case KindHandshake:
		return "handshake"
	}
	return "other"
}

// Control is a control record as the server acts on it.
type Control struct {
	Kind            Kind
	Alert           uint8 // KindAlert: the description (RFC 8446 §6)
	UpdateRequested bool  // KindKeyUpdate: the client asks for the server's next keys too
}

// handshakeKeyUpdate is HandshakeType key_update (RFC 8446 §4).
const handshakeKeyUpdate = 24

// ParseControl reads a record of type typ and plaintext body, as recvmsg
// returns it from a kTLS receive direction. A KeyUpdate must be the whole
// record: RFC 8446 §5.1 forbids a handshake message that spans a key
// change, so nothing may follow it, and one split across records would
// leave the kernel opening the rest with the wrong keys.
func ParseControl(typ uint8, body []byte) (Control, error) {
	switch typ {
	case RecordAlert:
		if len(body) != 2 {
			return Control{Kind: KindAlert}, fmt.Errorf("ktls: alert record of %d bytes, want 2", len(body))
		}
		if body[1] == 0 { // close_notify
			return Control{Kind: KindCloseNotify}, nil
		}
		return Control{Kind: KindAlert, Alert: body[1]}, nil
	case RecordHandshake:
		if len(body) != 5 || body[0] != handshakeKeyUpdate || body[1] != 0 || body[2] != 0 || body[3] != 1 || body[4] > 1 {
			return Control{Kind: KindHandshake}, fmt.Errorf("ktls: handshake record %x is not one KeyUpdate", body[:min(len(body), 8)])
		}
		return Control{Kind: KindKeyUpdate, UpdateRequested: body[4] == 1}, nil
	}
	return Control{Kind: KindOther}, fmt.Errorf("ktls: record type %d after the handshake", typ)
}

// KeyUpdateMessage is the handshake message that answers a KeyUpdate with
// update_requested: key_update, length 1, update_not_requested (§4.6.3).
var KeyUpdateMessage = []byte{handshakeKeyUpdate, 0, 0, 1, 0}

// NextTrafficSecret is application_traffic_secret_N+1 (RFC 8446 §7.2):
// HKDF-Expand-Label(secret, "traffic upd", "", Hash.length), with the
// hash of a TLS 1.3 cipher suite.
func NextTrafficSecret(cipherSuite uint16, secret []byte) ([]byte, error) {
	c, ok := CipherOf(tls.VersionTLS13, cipherSuite)
	if !ok {
		return nil, ErrUnsupported
	}
	h := suites[cipherSuite].hash
	if n := h().Size(); len(secret) != n {
		return nil, fmt.Errorf("ktls: %v traffic secret of %d bytes, want %d", c, len(secret), n)
	}
	return expandLabel(h, secret, "traffic upd", len(secret))
}
