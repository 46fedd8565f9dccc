package token

import (
	"bytes"
	"strings"
	"testing"
)

const (
	hex16 = "000102030405060708090a0b0c0d0e0f"
	hex32 = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
)

func TestParseKeyFile(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		ids     []string // nil: an error is wanted
		errPart string   // a substring of the error
	}{
		{"one key", "k1 " + hex32 + "\n", []string{"k1"}, ""},
		{"no final newline", "k1 " + hex32, []string{"k1"}, ""},
		{"comments and blanks", "# keys\n\n  # indented comment\nk1 " + hex32 + "\n\t\nk2\t" + hex16 + "\n", []string{"k1", "k2"}, ""},
		{"CRLF", "k1 " + hex32 + "\r\nk2 " + hex16 + "\r\n", []string{"k1", "k2"}, ""},
		{"BOM", "\ufeffk1 " + hex32 + "\n", []string{"k1"}, ""},
		{"uppercase hex", "k1 " + strings.ToUpper(hex32) + "\n", []string{"k1"}, ""},
		{"id charset", "Key-2024.01_a " + hex16 + "\n", []string{"Key-2024.01_a"}, ""},
		{"surrounding blanks", "   k1    " + hex16 + "   \n", []string{"k1"}, ""},

		{"empty", "", nil, "no keys"},
		{"only comments", "# nothing\n\n", nil, "no keys"},
		{"one field", "# c\nk1\n", nil, "line 2"},
		{"three fields", "k1 " + hex16 + " extra\n", nil, "line 1"},
		{"inline comment", "k1 " + hex16 + " # note\n", nil, "line 1"},
		{"odd hex", "k1 " + hex16 + "0\n", nil, "line 1"},
		{"not hex", "k1 " + strings.Repeat("zz", 16) + "\n", nil, "not an even number of hex"},
		{"short secret", "k1 " + hex16[:30] + "\n", nil, "at least 16"},
		{"bad id", "k/1 " + hex16 + "\n", nil, "outside"},
		{"long id", strings.Repeat("a", 65) + " " + hex16 + "\n", nil, "1-64"},
		{"duplicate", "k1 " + hex16 + "\nk2 " + hex16 + "\nk1 " + hex32 + "\n", nil, "line 3: key id \"k1\" already defined on line 1"},
		{"long line", "k1 " + strings.Repeat("0", 70000) + "\n", nil, "line 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kr, err := ParseKeyFile(strings.NewReader(tt.file))
			if tt.ids == nil {
				if err == nil || !strings.Contains(err.Error(), tt.errPart) {
					t.Fatalf("ParseKeyFile(%.40q) = %v, want error containing %q", tt.file, err, tt.errPart)
				}
				if strings.Contains(err.Error(), "zzzz") || strings.Contains(err.Error(), hex16[:30]) {
					t.Errorf("ParseKeyFile(%.40q) error %q quotes the secret", tt.file, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("ParseKeyFile(%.40q) = %v, want ids %q", tt.file, err, tt.ids)
			}
			if got := kr.IDs(); strings.Join(got, ",") != strings.Join(tt.ids, ",") || kr.Len() != len(tt.ids) {
				t.Errorf("ParseKeyFile(%.40q) ids = %q (Len %d), want %q", tt.file, got, kr.Len(), tt.ids)
			}
		})
	}
}

func TestKeyringKey(t *testing.T) {
	kr, err := ParseKeyFile(strings.NewReader("k1 " + hex32 + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	k, ok := kr.Key("k1")
	if !ok || k.ID != "k1" || !bytes.Equal(k.Secret, key1.Secret) {
		t.Fatalf("Key(k1) = %v, %v, want %v", k, ok, key1)
	}
	k.Secret[0] ^= 0xff // the caller's copy: the keyring must not change
	if k2, _ := kr.Key("k1"); !bytes.Equal(k2.Secret, key1.Secret) {
		t.Errorf("Key(k1) after caller edit = %x, want %x", k2.Secret, key1.Secret)
	}
	if _, ok := kr.Key("k9"); ok {
		t.Errorf("Key(k9) found, want missing")
	}
	// A key file key signs tokens the verifier accepts.
	v, err := NewVerifier(VerifierConfig{Keys: kr, Skew: DefaultSkew})
	if err != nil {
		t.Fatal(err)
	}
	k, _ = kr.Key("k1")
	tok := mustSign(t, k, Claims{Expiry: tExp, ACL: []string{"/vod/*"}, KeyID: k.ID})
	if err := v.Verify(tok, "/vod/a.ts", "", t0); err != nil {
		t.Errorf("Verify(%q) = %v, want <nil>", tok, err)
	}
}

func TestNewKeyring(t *testing.T) {
	tests := []struct {
		name string
		keys []Key
		ok   bool
	}{
		{"two", []Key{key1, key2}, true},
		{"none", nil, false},
		{"duplicate", []Key{key1, {ID: "k1", Secret: key2.Secret}}, false},
		{"short secret", []Key{{ID: "k", Secret: make([]byte, MinSecretLen-1)}}, false},
		{"empty id", []Key{{Secret: key1.Secret}}, false},
		{"id with tilde", []Key{{ID: "a~b", Secret: key1.Secret}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewKeyring(tt.keys...)
			if (err == nil) != tt.ok {
				t.Errorf("NewKeyring(%d keys) = %v, want ok=%v", len(tt.keys), err, tt.ok)
			}
		})
	}
	secret := bytes.Clone(key1.Secret)
	kr := testKeyring(t, Key{ID: "k1", Secret: secret})
	secret[0] ^= 0xff
	if k, _ := kr.Key("k1"); !bytes.Equal(k.Secret, key1.Secret) {
		t.Errorf("NewKeyring kept the caller's slice: Key(k1) = %x, want %x", k.Secret, key1.Secret)
	}
}
