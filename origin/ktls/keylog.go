package ktls

import (
	"bytes"
	"encoding/hex"
	"errors"
	"sync"
)

// KeyLog collects the secrets crypto/tls writes to Config.KeyLogWriter,
// for one connection. crypto/tls calls Write from the handshake; the
// connection reads the secrets once Handshake has returned.
type KeyLog struct {
	mu           sync.Mutex // protects the fields below
	clientRandom [32]byte
	master       secret // CLIENT_RANDOM (TLS 1.2)
	serverApp    secret // SERVER_TRAFFIC_SECRET_0 (TLS 1.3)
	clientApp    secret // CLIENT_TRAFFIC_SECRET_0 (TLS 1.3)
}

// secret holds up to a SHA-384 sized secret.
type secret struct {
	b [48]byte
	n int
}

// errKeyLogLine: a line not in the NSS key log format.
var errKeyLogLine = errors.New("ktls: malformed key log line")

// Write records one key log line ("LABEL <client random hex> <secret
// hex>\n"). Labels other than the three above are ignored.
func (k *KeyLog) Write(line []byte) (int, error) {
	label, rest, ok1 := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte{' '})
	cr, sec, ok2 := bytes.Cut(rest, []byte{' '})
	if !ok1 || !ok2 || hex.DecodedLen(len(cr)) != 32 || hex.DecodedLen(len(sec)) > 48 || len(sec)%2 != 0 {
		return 0, errKeyLogLine
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	var dst *secret
	switch string(label) { // no allocation: the compiler compares in place
	case "CLIENT_RANDOM":
		dst = &k.master
	case "SERVER_TRAFFIC_SECRET_0":
		dst = &k.serverApp
	case "CLIENT_TRAFFIC_SECRET_0":
		dst = &k.clientApp
	default:
		return len(line), nil
	}
	if _, err := hex.Decode(k.clientRandom[:], cr); err != nil {
		return 0, errKeyLogLine
	}
	n, err := hex.Decode(dst.b[:], sec)
	if err != nil {
		return 0, errKeyLogLine
	}
	dst.n = n
	return len(line), nil
}

// ClientRandom returns the client hello random of the logged lines.
func (k *KeyLog) ClientRandom() []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	return clone(k.clientRandom[:])
}

// MasterSecret returns the TLS 1.2 master secret, or nil.
func (k *KeyLog) MasterSecret() []byte { return k.get(&k.master) }

// ServerTrafficSecret returns the TLS 1.3 server_application_traffic_secret_0, or nil.
func (k *KeyLog) ServerTrafficSecret() []byte { return k.get(&k.serverApp) }

// ClientTrafficSecret returns the TLS 1.3 client_application_traffic_secret_0, or nil.
func (k *KeyLog) ClientTrafficSecret() []byte { return k.get(&k.clientApp) }

func (k *KeyLog) get(s *secret) []byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	if s.n == 0 {
		return nil
	}
	return clone(s.b[:s.n])
}

// Clear zeroes every secret held.
func (k *KeyLog) Clear() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.clientRandom = [32]byte{}
	k.master, k.serverApp, k.clientApp = secret{}, secret{}, secret{}
}
