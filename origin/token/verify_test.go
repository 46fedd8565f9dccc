package token

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// signRaw appends a valid hmac for key to signed, whatever signed holds,
// to build tokens Sign refuses to make.
func signRaw(k Key, signed string) string {
	m := hmac.New(sha256.New, k.Secret)
	m.Write([]byte(signed))
	return signed + "~hmac=" + hex.EncodeToString(m.Sum(nil))
}

// signURL returns an EdgeAuth URL-form token for path: the MAC covers
// "~url=<path>", which the token does not carry.
func signURL(k Key, fields, path string) string {
	full := signRaw(k, fields+"~url="+path)
	return fields + full[len(full)-len(hmacTag)-hexMACLen:]
}

func TestSignMatchesOpenSSL(t *testing.T) {
	got := mustSign(t, key1, Claims{Start: t0, Expiry: tExp, ACL: []string{"/vod/title42/*"}, KeyID: "k1"})
	if got != opensslToken {
		t.Errorf("Sign = %q, want %q", got, opensslToken)
	}
	if got := signURL(key1, "exp=1700003600", "/vod/title42/master.m3u8"); got != opensslURLToken {
		t.Errorf("signURL = %q, want %q", got, opensslURLToken)
	}
}

// verifyCase is one Verify call and its expected outcome, for a verifier
// holding key1 and key2 with the default skew.
type verifyCase struct {
	name string
	tok  string
	path string
	ip   string
	now  time.Time
	want error
}

// verifyCases is the Verify table; the fuzz targets seed from it.
func verifyCases(t testing.TB) []verifyCase {
	during := t0.Add(time.Minute)
	acl := func(k Key, kid string, patterns ...string) string {
		return mustSign(t, k, Claims{Start: t0, Expiry: tExp, ACL: patterns, KeyID: kid})
	}
	ipTok := func(ip string) string {
		return mustSign(t, key1, Claims{Expiry: tExp, ACL: []string{"/*"}, IP: ip, KeyID: "k1"})
	}
	const (
		master = "/vod/title42/master.m3u8"
		hexMAC = "0000000000000000000000000000000000000000000000000000000000000000"
	)
	long := signRaw(key1, "exp=1700003600~acl=/"+strings.Repeat("a", MaxTokenLen))
	return []verifyCase{
		// Validity and time.
		{"valid", opensslToken, master, "", during, nil},
		{"valid segment", opensslToken, "/vod/title42/1080p/seg-00001.m4s", "", during, nil},
		{"valid at start", opensslToken, master, "", t0, nil},
		{"valid at expiry", opensslToken, master, "", tExp, nil},
		{"expired", opensslToken, master, "", tExp.Add(31 * time.Second), ErrExpired},
		{"expiry skew edge", opensslToken, master, "", tExp.Add(30 * time.Second), nil},
		{"expiry skew edge+1ns", opensslToken, master, "", tExp.Add(30*time.Second + 1), ErrExpired},
		{"early", opensslToken, master, "", t0.Add(-31 * time.Second), ErrNotYetValid},
		{"start skew edge", opensslToken, master, "", t0.Add(-30 * time.Second), nil},
		{"start skew edge-1ns", opensslToken, master, "", t0.Add(-30*time.Second - 1), ErrNotYetValid},
		{"no start", mustSign(t, key1, Claims{Expiry: tExp, ACL: []string{"/*"}}), master, "", time.Unix(1, 0), nil},

		// Scope.
		{"wrong title", opensslToken, "/vod/title43/master.m3u8", "", during, ErrScope},
		{"prefix without slash", opensslToken, "/vod/title42", "", during, ErrScope},
		{"prefix neighbour", opensslToken, "/vod/title420/master.m3u8", "", during, ErrScope},
		{"prefix itself", opensslToken, "/vod/title42/", "", during, nil},
		{"cleaned escape", opensslToken, "/vod/title43/x", "", during, ErrScope},
		{"raw dotdot", opensslToken, "/vod/title42/../title43/x", "", during, ErrScope},
		{"raw dotdot end", opensslToken, "/vod/title42/..", "", during, ErrScope},
		{"raw dot", opensslToken, "/vod/title42/./x", "", during, ErrScope},
		{"raw dot end", opensslToken, "/vod/title42/.", "", during, ErrScope},
		{"raw double slash", opensslToken, "/vod/title42//x", "", during, ErrScope},
		{"raw leading double slash", opensslToken, "//vod/title42/x", "", during, ErrScope},
		{"relative path", opensslToken, "vod/title42/x", "", during, ErrScope},
		{"empty path", opensslToken, "", "", during, ErrScope},
		{"dots in names", opensslToken, "/vod/title42/a..b/.x/..y", "", during, nil},
		{"exact acl", acl(key1, "", master), master, "", during, nil},
		{"exact acl longer path", acl(key1, "", master), master + "x", "", during, ErrScope},
		{"exact acl shorter path", acl(key1, "", master), "/vod/title42/master", "", during, ErrScope},
		{"multi acl first", acl(key1, "", "/vod/title42/*", "/vod/title43/*", "/live/x.m3u8"), master, "", during, nil},
		{"multi acl second", acl(key1, "", "/vod/title42/*", "/vod/title43/*", "/live/x.m3u8"), "/vod/title43/a.ts", "", during, nil},
		{"multi acl exact", acl(key1, "", "/vod/title42/*", "/vod/title43/*", "/live/x.m3u8"), "/live/x.m3u8", "", during, nil},
		{"multi acl none", acl(key1, "", "/vod/title42/*", "/vod/title43/*", "/live/x.m3u8"), "/live/y.m3u8", "", during, ErrScope},
		{"inner glob", acl(key1, "", "/vod/*/master.m3u8"), "/vod/a/b/master.m3u8", "", during, nil},
		{"inner glob miss", acl(key1, "", "/vod/*/master.m3u8"), "/vod/a/index.m3u8", "", during, ErrScope},
		{"star acl", acl(key1, "", "*"), "/anything/at/all", "", during, nil},

		// Address binding.
		{"ip match", ipTok("192.0.2.1"), master, "192.0.2.1", during, nil},
		{"ip mismatch", ipTok("192.0.2.1"), master, "192.0.2.2", during, ErrIP},
		{"ip unknown client", ipTok("192.0.2.1"), master, "", during, ErrIP},
		{"ip garbage client", ipTok("192.0.2.1"), master, "192.0.2.1:4000", during, ErrIP},
		{"ip mapped client", ipTok("192.0.2.1"), master, "::ffff:192.0.2.1", during, nil},
		{"ip6 other spelling", ipTok("2001:db8::1"), master, "2001:0db8:0::1", during, nil},
		{"ip6 escaped", signRaw(key1, "ip=2001%3adb8%3a%3a1~exp=1700003600~acl=/*"), master, "2001:db8::1", during, nil},
		{"ip6 escaped mismatch", signRaw(key1, "ip=2001%3adb8%3a%3a2~exp=1700003600~acl=/*"), master, "2001:db8::1", during, ErrIP},
		{"ip bad escape", signRaw(key1, "ip=2001%3gdb8~exp=1700003600~acl=/*"), master, "2001:db8::1", during, ErrIP},

		// Keys.
		{"kid k2", acl(key2, "k2", "/vod/*"), master, "", during, nil},
		{"no kid tries k1", acl(key1, "", "/vod/*"), master, "", during, nil},
		{"no kid tries k2", acl(key2, "", "/vod/*"), master, "", during, nil},
		{"kid names the other key", signRaw(key1, "exp=1700003600~acl=/*~kid=k2"), master, "", during, ErrSignature},
		{"unknown kid", signRaw(key3, "exp=1700003600~acl=/*~kid=k3"), master, "", during, ErrUnknownKey},
		{"key not in ring", acl(key3, "", "/vod/*"), master, "", during, ErrSignature},
		{"forged mac", "exp=1700003600~acl=/*~hmac=" + hexMAC, master, "", during, ErrSignature},

		// EdgeAuth URL form and extra fields.
		{"url form", opensslURLToken, master, "", during, nil},
		{"url form other path", opensslURLToken, "/vod/title42/other.m3u8", "", during, ErrSignature},
		{"url form long path", signURL(key2, "exp=1700003600", "/"+strings.Repeat("x/", 300)), "/" + strings.Repeat("x/", 300), "", during, nil},
		{"unknown fields signed", signRaw(key1, "exp=1700003600~acl=/*~id=s1~data=a=b~x-y_z=1"), master, "", during, nil},
		{"edgeauth order", signRaw(key1, "ip=192.0.2.1~st=1700000000~exp=1700003600~acl=/vod/*~id=s1~data=p"), master, "192.0.2.1", during, nil},
		{"any field order", signRaw(key1, "acl=/vod/*~exp=1700003600~kid=k1~st=1700000000"), master, "", during, nil},

		// Malformed shapes: each would otherwise verify where it has a MAC.
		{"empty", "", master, "", during, ErrMalformed},
		{"no hmac", "exp=1700003600~acl=/*", master, "", during, ErrMalformed},
		{"hmac only", "hmac=" + hexMAC, master, "", during, ErrMalformed},
		{"hmac only with tilde", "~hmac=" + hexMAC, master, "", during, ErrMalformed},
		{"bare mac", (opensslToken[len(opensslToken)-64:]), master, "", during, ErrMalformed},
		{"hmac upper hex", opensslToken[:len(opensslToken)-64] + strings.ToUpper(opensslToken[len(opensslToken)-64:]), master, "", during, ErrMalformed},
		{"hmac short", opensslToken[:len(opensslToken)-1], master, "", during, ErrMalformed},
		{"hmac long", opensslToken + "0", master, "", during, ErrMalformed},
		{"hmac not last", opensslToken + "~x=1", master, "", during, ErrMalformed},
		{"empty field", signRaw(key1, "exp=1700003600~~acl=/*"), master, "", during, ErrMalformed},
		{"leading tilde", signRaw(key1, "~exp=1700003600~acl=/*"), master, "", during, ErrMalformed},
		{"field without =", signRaw(key1, "exp=1700003600~acl"), master, "", during, ErrMalformed},
		{"empty name", signRaw(key1, "exp=1700003600~acl=/*~=x"), master, "", during, ErrMalformed},
		{"bad name", signRaw(key1, "exp=1700003600~acl=/*~a.b=x"), master, "", during, ErrMalformed},
		{"long name", signRaw(key1, "exp=1700003600~acl=/*~abcdefghijklmnopq=x"), master, "", during, ErrMalformed},
		{"empty value", signRaw(key1, "exp=1700003600~acl=/*~id="), master, "", during, ErrMalformed},
		{"space in value", signRaw(key1, "exp=1700003600~acl=/a b"), "/a b", "", during, ErrMalformed},
		{"DEL in value", signRaw(key1, "exp=1700003600~acl=/a\x7f"), master, "", during, ErrMalformed},
		{"non-ASCII value", signRaw(key1, "exp=1700003600~acl=/é"), master, "", during, ErrMalformed},
		{"duplicate exp", signRaw(key1, "exp=1700003600~exp=1800000000~acl=/*"), master, "", during, ErrMalformed},
		{"duplicate acl", signRaw(key1, "exp=1700003600~acl=/x~acl=/*"), master, "", during, ErrMalformed},
		{"duplicate unknown", signRaw(key1, "exp=1700003600~acl=/*~x=1~x=2"), master, "", during, ErrMalformed},
		{"hmac before hmac", signRaw(key1, "hmac=1~exp=1700003600~acl=/*"), master, "", during, ErrMalformed},
		{"url carried", signRaw(key1, "exp=1700003600~url="+master), master, "", during, ErrMalformed},
		{"salt carried", signRaw(key1, "exp=1700003600~acl=/*~salt=x"), master, "", during, ErrMalformed},
		{"no exp", signRaw(key1, "st=1700000000~acl=/*"), master, "", during, ErrMalformed},
		{"start after exp", signRaw(key1, "st=1700003601~exp=1700003600~acl=/*"), master, "", during, ErrMalformed},
		{"signed exp", signRaw(key1, "exp=+1700003600~acl=/*"), master, "", during, ErrMalformed},
		{"hex exp", signRaw(key1, "exp=0x6553f100~acl=/*"), master, "", during, ErrMalformed},
		{"19 digit exp", signRaw(key1, "exp=1000000000000000000~acl=/*"), master, "", during, ErrMalformed},
		{"bad st", signRaw(key1, "st=now~exp=1700003600~acl=/*"), master, "", during, ErrMalformed},
		{"acl double bang", signRaw(key1, "exp=1700003600~acl=/a!!/vod/*"), master, "", during, ErrMalformed},
		{"acl leading bang", signRaw(key1, "exp=1700003600~acl=!/vod/*"), master, "", during, ErrMalformed},
		{"acl trailing bang", signRaw(key1, "exp=1700003600~acl=/vod/*!"), master, "", during, ErrMalformed},
		{"17 fields", signRaw(key1, "exp=1700003600~acl=/*~b=1~c=1~d=1~e=1~f=1~g=1~h=1~i=1~j=1~k=1~l=1~m=1~n=1~o=1~p=1"), master, "", during, ErrMalformed},
		{"too long", long, "/" + strings.Repeat("a", MaxTokenLen), "", during, ErrMalformed},
	}
}

func TestVerify(t *testing.T) {
	v := testVerifier(t, key1, key2)
	for _, tt := range verifyCases(t) {
		t.Run(tt.name, func(t *testing.T) {
			err := v.Verify(tt.tok, tt.path, tt.ip, tt.now)
			if !sameErr(err, tt.want) {
				t.Errorf("Verify(%q, %q, %q) = %v, want %v", tt.tok, tt.path, tt.ip, err, tt.want)
			}
			if err := v.VerifyBytes([]byte(tt.tok), tt.path, tt.ip, tt.now); !sameErr(err, tt.want) {
				t.Errorf("VerifyBytes(%q) = %v, want %v", tt.tok, err, tt.want)
			}
			if tt.tok == "" {
				return // an empty segment is a different shape
			}
			if err := v.VerifySegment(PathSegment(tt.tok), tt.path, tt.ip, tt.now); !sameErr(err, tt.want) {
				t.Errorf("VerifySegment(PathSegment(%q)) = %v, want %v", tt.tok, err, tt.want)
			}
		})
	}
}

func sameErr(err, want error) bool {
	if want == nil {
		return err == nil
	}
	return errors.Is(err, want)
}

func TestVerifyFieldCount(t *testing.T) {
	v := testVerifier(t, key1)
	fields := []string{"exp=1700003600", "acl=/*"}
	for i := 0; len(fields) < maxFields; i++ {
		fields = append(fields, string(rune('a'+i))+"=1")
	}
	tok := signRaw(key1, strings.Join(fields, "~"))
	if err := v.Verify(tok, "/x", "", t0); err != nil {
		t.Errorf("Verify(%d fields) = %v, want <nil>", maxFields, err)
	}
	tok = signRaw(key1, strings.Join(append(fields, "z=1"), "~"))
	if err := v.Verify(tok, "/x", "", t0); !errors.Is(err, ErrMalformed) {
		t.Errorf("Verify(%d fields) = %v, want %v", maxFields+1, err, ErrMalformed)
	}
}

// TestVerifyTruncated: no proper prefix of a valid token verifies.
func TestVerifyTruncated(t *testing.T) {
	v := testVerifier(t, key1)
	for n := range len(opensslToken) {
		tok := opensslToken[:n]
		if err := v.Verify(tok, "/vod/title42/a.ts", "", t0); err == nil {
			t.Errorf("Verify(%q) = <nil>, want an error", tok)
		}
	}
}

// TestVerifyBitFlips: every single-bit change of a valid token fails,
// whether the bit is in a name, a value, a delimiter or the MAC.
func TestVerifyBitFlips(t *testing.T) {
	v := testVerifier(t, key1, key2)
	for _, tok := range []string{
		opensslToken,
		opensslURLToken,
		mustSign(t, key2, Claims{Start: t0, Expiry: tExp, ACL: []string{"/vod/*", "/live/*"}, IP: "192.0.2.1"}),
	} {
		path, ip := "/vod/title42/master.m3u8", "192.0.2.1"
		if err := v.Verify(tok, path, ip, t0); err != nil {
			t.Fatalf("Verify(%q) = %v, want <nil>", tok, err)
		}
		b := []byte(tok)
		for i := range b {
			for bit := range 8 {
				b[i] ^= 1 << bit
				if err := v.VerifyBytes(b, path, ip, t0); err == nil {
					t.Errorf("Verify(%q) = <nil>, want an error (byte %d bit %d flipped)", b, i, bit)
				}
				b[i] ^= 1 << bit
			}
		}
	}
}

func TestVerifyAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under the race detector")
	}
	v := testVerifier(t, key1, key2)
	master := "/vod/title42/master.m3u8"
	noKid := mustSign(t, key2, Claims{Start: t0, Expiry: tExp, ACL: []string{"/live/*", "/vod/*/master.m3u8"}, IP: "192.0.2.1"})
	// Arguments are built here: inside the measured closures they would
	// allocate themselves.
	tokBytes := []byte(opensslToken)
	seg := PathSegment(opensslToken)
	forged := opensslToken[:len(opensslToken)-1] + "0"
	late := tExp.Add(time.Hour)
	cases := []struct {
		name string
		run  func() error
	}{
		{"Verify", func() error { return v.Verify(opensslToken, master, "", t0) }},
		{"VerifyBytes", func() error { return v.VerifyBytes(tokBytes, master, "", t0) }},
		{"VerifySegment", func() error { return v.VerifySegment(seg, master, "", t0) }},
		{"no kid, second key, ip", func() error { return v.Verify(noKid, master, "192.0.2.1", t0) }},
		{"url form", func() error { return v.Verify(opensslURLToken, master, "", t0) }},
		{"expired", func() error { return v.Verify(opensslToken, master, "", late) }},
		{"forged", func() error { return v.Verify(forged, master, "", t0) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_ = c.run() // warm the pools
			if got := testing.AllocsPerRun(200, func() { _ = c.run() }); got != 0 {
				t.Errorf("AllocsPerRun(%s) = %v, want 0", c.name, got)
			}
		})
	}
}

func TestNewVerifier(t *testing.T) {
	kr := testKeyring(t, key1)
	tests := []struct {
		name string
		cfg  VerifierConfig
		ok   bool
	}{
		{"no skew", VerifierConfig{Keys: kr}, true},
		{"explicit skew", VerifierConfig{Keys: kr, Skew: time.Second}, true},
		{"no keys", VerifierConfig{}, false},
		{"empty keyring", VerifierConfig{Keys: &Keyring{}}, false},
		{"negative skew", VerifierConfig{Keys: kr, Skew: -time.Second}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewVerifier(tt.cfg)
			if (err == nil) != tt.ok {
				t.Errorf("NewVerifier(%+v) = %v, want ok=%v", tt.cfg, err, tt.ok)
			}
		})
	}
	v, _ := NewVerifier(VerifierConfig{Keys: kr, Skew: time.Second})
	if err := v.Verify(opensslToken, "/vod/title42/a", "", tExp.Add(2*time.Second)); !errors.Is(err, ErrExpired) {
		t.Errorf("Verify(skew 1s, exp+2s) = %v, want %v", err, ErrExpired)
	}
}

// TestVerifyConcurrent shares one Verifier (its scratch and MAC pools)
// across goroutines verifying different tokens; run it with -race.
func TestVerifyConcurrent(t *testing.T) {
	v := testVerifier(t, key1, key2)
	cases := verifyCases(t)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Go(func() {
			for i := range 200 {
				tt := cases[(i*7+w)%len(cases)]
				if err := v.Verify(tt.tok, tt.path, tt.ip, tt.now); !sameErr(err, tt.want) {
					t.Errorf("Verify(%q) = %v, want %v", tt.tok, err, tt.want)
					return
				}
			}
		})
	}
	wg.Wait()
}

// TestVerifyUntil: a valid token's exp= comes back, so that the origin can
// cap how long a response it authorises is cached; a refused one gives
// the zero time.
func TestVerifyUntil(t *testing.T) {
	v := testVerifier(t, key1)
	master := "/vod/title42/master.m3u8"
	if got, err := v.VerifySegmentUntil(PathSegment(opensslToken), master, "", t0); err != nil || !got.Equal(tExp) {
		t.Errorf("VerifySegmentUntil = %v, %v; want %v, nil", got, err, tExp)
	}
	if got, err := v.VerifyBytesUntil([]byte(opensslToken), master, "", t0); err != nil || !got.Equal(tExp) {
		t.Errorf("VerifyBytesUntil = %v, %v; want %v, nil", got, err, tExp)
	}
	late := tExp.Add(time.Hour)
	if got, err := v.VerifyBytesUntil([]byte(opensslToken), master, "", late); !errors.Is(err, ErrExpired) || !got.IsZero() {
		t.Errorf("VerifyBytesUntil(expired) = %v, %v; want zero time, ErrExpired", got, err)
	}
}
