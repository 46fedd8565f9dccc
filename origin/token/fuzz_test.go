package token

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: Verify never panics, always gives a known reason, agrees
// across its three entry points, and accepts no token but those a key in
// the ring signed (the valid seeds).
func FuzzVerify(f *testing.F) {
	cases := verifyCases(f)
	signed := make(map[string]bool)
	for _, c := range cases {
		// A token a key really signed may be refused by its case only for
		// its time, address or scope; another path, address or clock can
		// make it valid, so it counts as signed. Tampered, malformed and
		// unknown-key tokens never may.
		if c.want == nil || errors.Is(c.want, ErrExpired) || errors.Is(c.want, ErrNotYetValid) ||
			errors.Is(c.want, ErrIP) || errors.Is(c.want, ErrScope) {
			signed[c.tok] = true
		}
		f.Add(c.tok, c.path, c.ip, c.now.Unix())
	}
	v := testVerifier(f, key1, key2)
	red := NewRedactor("t", "token")
	f.Fuzz(func(t *testing.T, tok, path, ip string, now int64) {
		at := time.Unix(now, 0)
		err := v.Verify(tok, path, ip, at)
		if !isSentinel(err) {
			t.Fatalf("Verify(%q) = %v, want nil or one of the Err* sentinels", tok, err)
		}
		if err == nil && !signed[tok] {
			t.Fatalf("Verify(%q, %q, %q, %d) = <nil>, want an error: not a signed token", tok, path, ip, now)
		}
		if err == nil && strings.Contains(red.String(tok), tok[len(tok)-hexMACLen:]) {
			t.Fatalf("Redactor.String(%q) = %q, want the MAC elided", tok, red.String(tok))
		}
		if errB := v.VerifyBytes([]byte(tok), path, ip, at); errB != err {
			t.Fatalf("VerifyBytes(%q) = %v, want %v as Verify", tok, errB, err)
		}
		if tok == "" || len(tok) > MaxTokenLen {
			return
		}
		if errS := v.VerifySegment(PathSegment(tok), path, ip, at); errS != err {
			t.Fatalf("VerifySegment(PathSegment(%q)) = %v, want %v as Verify", tok, errS, err)
		}
	})
}

// FuzzParseKeyFile: ParseKeyFile never panics, and a keyring it returns
// holds checked, unique keys that survive writing out and reading back.
func FuzzParseKeyFile(f *testing.F) {
	for _, seed := range []string{
		"k1 " + hex32 + "\n",
		"# keys\n\n  # c\nk1 " + hex32 + "\n\t\nk2\t" + hex16 + "\n",
		"k1 " + hex32 + "\r\nk2 " + hex16 + "\r\n",
		"\ufeffk1 " + hex32,
		"",
		"k1\n",
		"k1 " + hex16 + " extra\n",
		"k1 " + hex16 + "0\n",
		"k/1 " + hex16 + "\n",
		"k1 " + hex16 + "\nk1 " + hex32 + "\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, file string) {
		kr, err := ParseKeyFile(strings.NewReader(file))
		if err != nil {
			if kr != nil {
				t.Fatalf("ParseKeyFile(%q) = %v with a keyring, want nil", file, err)
			}
			return
		}
		ids := kr.IDs()
		if kr.Len() == 0 || len(ids) != kr.Len() {
			t.Fatalf("ParseKeyFile(%q): Len %d, IDs %q", file, kr.Len(), ids)
		}
		var out strings.Builder
		seen := make(map[string]bool)
		for _, id := range ids {
			k, ok := kr.Key(id)
			if !ok || seen[id] || len(k.Secret) < MinSecretLen || checkKeyID(id) != nil {
				t.Fatalf("ParseKeyFile(%q): key %q = %v, %v (seen %v)", file, id, k, ok, seen[id])
			}
			seen[id] = true
			fmt.Fprintf(&out, "%s %x\n", id, k.Secret)
		}
		again, err := ParseKeyFile(strings.NewReader(out.String()))
		if err != nil {
			t.Fatalf("ParseKeyFile(written back %q) = %v, want the same keys", out.String(), err)
		}
		for _, id := range ids {
			a, _ := kr.Key(id)
			b, ok := again.Key(id)
			if !ok || !bytes.Equal(a.Secret, b.Secret) {
				t.Fatalf("key %q after round trip = %x, %v, want %x", id, b.Secret, ok, a.Secret)
			}
		}
	})
}

// FuzzParseSegment: a segment decodes only if it is the one canonical
// encoding of what it decodes to.
func FuzzParseSegment(f *testing.F) {
	for _, seed := range []string{PathSegment(opensslToken), "YWJjZA", "YWJjZB", "YWJjZ", "", "a+b/", "YW\nJj"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seg string) {
		tok, err := ParseSegment(seg)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("ParseSegment(%q) = %v, want %v", seg, err, ErrMalformed)
			}
			return
		}
		if again := PathSegment(tok); again != seg {
			t.Fatalf("PathSegment(ParseSegment(%q)) = %q, want the input", seg, again)
		}
	})
}
