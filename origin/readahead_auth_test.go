package origin_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"segorigin/internal/slowfs"
	"segorigin/origin"
	"segorigin/origin/token"
)

// TestReadAheadObeysAuthorization: a CMCD hint may make the server read
// only what the request carrying it could have fetched. A token scoped to
// /vod/hls/ naming a private file, a hidden one, a path above the root or
// a symlink out of the root or to a hidden file in nor reads none of them
// (slowfs sees no read, readahead_bytes_total stays 0) and each drop is
// counted by its reason; a hint inside the scope is read, once, however
// its nrr varies.
func TestReadAheadObeysAuthorization(t *testing.T) { everyMode(t, testReadAheadObeysAuthorization) }

func testReadAheadObeysAuthorization(t *testing.T, mode serverMode) {
	const segSize, nextSize, bigSize = 64 << 10, 1 << 20, 2 << 20
	backing, outside := t.TempDir(), t.TempDir()
	writeSynth(t, backing, "vod/hls/index0.ts", segSize)
	writeSynth(t, backing, "vod/hls/index1.ts", nextSize)
	writeSynth(t, backing, "private/big.m4s", bigSize)
	writeSynth(t, backing, ".hidden/secret.m4s", bigSize)
	writeSynth(t, outside, "x.m4s", bigSize)
	for link, target := range map[string]string{
		"vod/hls/to-hidden.m4s":  "../../.hidden/secret.m4s",
		"vod/hls/to-outside.m4s": filepath.Join(outside, "x.m4s"),
	} {
		if err := os.Symlink(target, filepath.Join(backing, link)); err != nil {
			t.Fatal(err)
		}
	}
	f := slowfs.MountT(t, backing, 0)
	key := token.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")}
	ring, err := token.NewKeyring(key)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	ts := mode.start(t, f.Dir(), func(c *origin.Config) {
		c.Watch = false
		c.Now = func() time.Time { return now }
		c.Auth.Keys = ring
		c.ReadAhead.Template = false
	})
	tok := mustSign(t, key, token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/hls/*"}})
	target := "/t/" + token.PathSegment(tok) + "/vod/hls/index0.ts"
	ra := func() origin.ReadAheadStats { return ts.srv.Stats().ReadAhead }
	c := ts.dial()
	get := func(hint string) {
		t.Helper()
		r := c.do("GET", target, "Range: bytes=0-99", "CMCD-Request: "+hint)
		mustBody(t, r, synthBytes("index0.ts", 0, 100), "index0.ts with "+hint)
	}
	get(`bl=1000`) // the segment itself is now resident: later reads are the hints'
	reads := f.Reads()

	refused := []struct {
		hint, reason string
		index        int
	}{
		{`nor="/private/big.m4s"`, "unauthorized", 2},
		{`nor="../../private/big.m4s",nrr="0-"`, "unauthorized", 2},
		{`nor="/.hidden/secret.m4s"`, "hidden", 1},
		{`nor="../../../etc/passwd"`, "outside_root", 0},
		{`nor="to-hidden.m4s"`, "symlink", 3},
		{`nor="to-outside.m4s"`, "symlink", 3},
	}
	want := [5]int64{}
	for _, tt := range refused {
		if got := origin.ReadAheadRefusal(tt.index); got != tt.reason {
			t.Fatalf("ReadAheadRefusal(%d) = %q, want %q", tt.index, got, tt.reason)
		}
		get(tt.hint)
		want[tt.index]++
		// Symlinks are refused by the open, on a cold reader.
		waitFor(t, 10*time.Second, fmt.Sprintf("%s counted as %s", tt.hint, tt.reason), func() bool {
			return ra().Refused[tt.index] == want[tt.index]
		})
	}
	if st := ra(); st.Bytes != 0 || st.Issued != 0 || f.Reads() != reads {
		t.Errorf("after refused hints: readahead bytes %d, issued %d, storage reads %d; want 0, 0, %d",
			st.Bytes, st.Issued, f.Reads(), reads)
	}

	// Inside the scope: read once, and a varying nrr reads it no more.
	get(`nor="index1.ts",nrr="0-"`)
	waitFor(t, 10*time.Second, "index1.ts read ahead", func() bool { return ra().Issued == 1 })
	for i := 1; i <= 9; i++ {
		get(fmt.Sprintf(`nor="index1.ts",nrr="%d-"`, i*1000))
	}
	st := ra()
	if st.Bytes != nextSize || st.Issued != 1 || st.Refused[4] != 9 {
		t.Errorf("hints inside the scope, nrr varied: readahead bytes %d, issued %d, refused repeated %d; want %d, 1, 9",
			st.Bytes, st.Issued, st.Refused[4], nextSize)
	}
}
