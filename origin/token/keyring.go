package token

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"strings"
	"sync"
)

// MinSecretLen is the shortest secret accepted, in bytes (32 hex digits).
// Shorter keys make guessing the key offline from one captured token
// feasible.
const MinSecretLen = 16

// maxKeyIDLen bounds a key id; ids appear in every token that names one.
const maxKeyIDLen = 64

// Key is one signing secret.
type Key struct {
	// ID names the key in the key file and in tokens (kid=).
	ID string
	// Secret is the raw HMAC-SHA256 key. The key file holds it in hex,
	// as EdgeAuth generators take it.
	Secret []byte
}

// Keyring is an immutable set of keys, safe for concurrent use. Build it
// with ParseKeyFile or NewKeyring.
type Keyring struct {
	keys []*keyEntry          // in file order: tried in turn when a token has no kid
	byID map[string]*keyEntry // the same entries by Key.ID
}

// keyEntry is one key and its pool of keyed MACs, so that Verify neither
// allocates nor re-derives the HMAC pads per request.
type keyEntry struct {
	key  Key
	macs sync.Pool // of hash.Hash: HMAC-SHA256 keyed with key.Secret
}

func (e *keyEntry) getMAC() hash.Hash {
	h := e.macs.Get().(hash.Hash)
	h.Reset()
	return h
}

// ParseKeyFile reads a key file: one key a line, "<key-id> <secret hex>",
// separated by blanks; blank lines and lines whose first non-blank byte is
// '#' are ignored. Ids are 1-64 bytes of [A-Za-z0-9._-]; secrets are at
// least MinSecretLen bytes. A duplicate id, a bad line or a file without
// keys is an error naming the line; errors never quote a secret.
func ParseKeyFile(r io.Reader) (*Keyring, error) {
	sc := bufio.NewScanner(r)
	var keys []Key
	seen := make(map[string]int) // key id -> line it was defined on
	line := 0
	for sc.Scan() {
		line++
		text := sc.Text()
		if line == 1 {
			text = strings.TrimPrefix(text, "\ufeff") // editors on some systems add a BOM
		}
		text = strings.TrimSpace(text)
		if text == "" || text[0] == '#' {
			continue
		}
		k, err := parseKeyLine(text)
		if err != nil {
			return nil, fmt.Errorf("token: key file line %d: %w", line, err)
		}
		if prev, dup := seen[k.ID]; dup {
			return nil, fmt.Errorf("token: key file line %d: key id %q already defined on line %d", line, k.ID, prev)
		}
		seen[k.ID] = line
		keys = append(keys, k)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("token: key file line %d: %w", line+1, err)
	}
	if len(keys) == 0 {
		return nil, errors.New("token: key file holds no keys")
	}
	return newKeyring(keys), nil
}

func parseKeyLine(text string) (Key, error) {
	f := strings.Fields(text)
	if len(f) != 2 {
		return Key{}, fmt.Errorf("want \"<key-id> <secret hex>\", found %d fields", len(f))
	}
	if err := checkKeyID(f[0]); err != nil {
		return Key{}, err
	}
	// hex.DecodeString's error quotes the offending byte: keep it out.
	secret, err := hex.DecodeString(f[1])
	if err != nil {
		return Key{}, fmt.Errorf("secret of key %q is not an even number of hex digits", f[0])
	}
	if err := checkSecret(f[0], secret); err != nil {
		return Key{}, err
	}
	return Key{ID: f[0], Secret: secret}, nil
}

// NewKeyring builds a keyring from keys, checked as ParseKeyFile checks
// them. The secrets are copied.
func NewKeyring(keys ...Key) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("token: no keys")
	}
	seen := make(map[string]bool, len(keys))
	own := make([]Key, len(keys))
	for i, k := range keys {
		if err := checkKeyID(k.ID); err != nil {
			return nil, fmt.Errorf("token: key %d: %w", i, err)
		}
		if err := checkSecret(k.ID, k.Secret); err != nil {
			return nil, fmt.Errorf("token: key %d: %w", i, err)
		}
		if seen[k.ID] {
			return nil, fmt.Errorf("token: key %d: duplicate key id %q", i, k.ID)
		}
		seen[k.ID] = true
		own[i] = Key{ID: k.ID, Secret: bytes.Clone(k.Secret)}
	}
	return newKeyring(own), nil
}

// newKeyring wraps already checked keys it may keep.
func newKeyring(keys []Key) *Keyring {
	kr := &Keyring{byID: make(map[string]*keyEntry, len(keys))}
	for _, k := range keys {
		e := &keyEntry{key: k}
		e.macs.New = func() any { return hmac.New(sha256.New, e.key.Secret) }
		kr.keys = append(kr.keys, e)
		kr.byID[k.ID] = e
	}
	return kr
}

func checkKeyID(id string) error {
	if id == "" || len(id) > maxKeyIDLen {
		return fmt.Errorf("key id must be 1-%d bytes", maxKeyIDLen)
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return fmt.Errorf("key id %q has a byte outside [A-Za-z0-9._-]", id)
		}
	}
	return nil
}

func checkSecret(id string, secret []byte) error {
	if len(secret) < MinSecretLen {
		return fmt.Errorf("secret of key %q is %d bytes, want at least %d (%d hex digits)",
			id, len(secret), MinSecretLen, 2*MinSecretLen)
	}
	return nil
}

func isAlnum(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
}

// Key returns the key named id, with a copy of its secret.
func (k *Keyring) Key(id string) (Key, bool) {
	e, ok := k.byID[id]
	if !ok {
		return Key{}, false
	}
	return Key{ID: e.key.ID, Secret: bytes.Clone(e.key.Secret)}, true
}

// Len returns the number of keys.
func (k *Keyring) Len() int { return len(k.keys) }

// IDs returns the key ids in file order, for start-up logs.
func (k *Keyring) IDs() []string {
	ids := make([]string, len(k.keys))
	for i, e := range k.keys {
		ids[i] = e.key.ID
	}
	return ids
}
