package origin_test

import (
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// The playlists the query-token tests serve: a master naming its own
// title's renditions, a key, another title and two other hosts, and a
// manifest with a BaseURL and a template.
const (
	qrMaster = "#EXTM3U\r\n" +
		"#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key.bin\"\r\n" +
		"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x\",URI=\"audio/index.m3u8?lang=en\"\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1\r\n" +
		"v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=2\r\n" +
		"../title43/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=3\r\n" +
		"http://elsewhere.example/vod/title42/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=4\r\n" +
		"http://cdn.example/vod/title42/v2/index.m3u8\r\n"
	qrMPD = `<?xml version="1.0"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011"><!-- v1/ -->
 <Period><BaseURL>v1/</BaseURL><AdaptationSet>
  <SegmentTemplate initialization="init-$RepresentationID$.mp4" media="seg$Number$.ts"/>
  <Representation id="a"><SegmentList><SegmentURL media="../../title43/v1/seg1.ts"/></SegmentList></Representation>
 </AdaptationSet></Period>
</MPD>
`
)

// qrServer is authServer with the query-token documents, cdn.example
// listed as one of this origin's hosts, and mod applied.
func (mode serverMode) qrServer(t *testing.T, now time.Time, mod func(*origin.AuthConfig)) (*testServer, map[string]token.Key) {
	ts, keys := mode.authServer(t, now, func(a *origin.AuthConfig) {
		a.QueryRewriteHosts = []string{"cdn.example"}
		if mod != nil {
			mod(a)
		}
	})
	writeFile(t, ts.root, "vod/title42/master.m3u8", qrMaster)
	writeFile(t, ts.root, "vod/title42/manifest.mpd", qrMPD)
	writeFile(t, ts.root, "vod/title42/v1/index.m3u8", "#EXTM3U\n#EXTINF:2,\nseg1.ts\n")
	writeFile(t, ts.root, "vod/title43/v1/index.m3u8", "#EXTM3U\n#EXTINF:2,\nseg1.ts\n")
	return ts, keys
}

// TestQueryTokenRewritesPlaylists: a playlist and a manifest answered to a
// query token list every URI of the token's scope with the token, on this
// host and the listed one; other titles, other hosts and other schemes
// keep their URIs; the body's ETag is its own, stable, and revalidates;
// Cache-Control is capped at the token's life; a path token gets the file.
func TestQueryTokenRewritesPlaylists(t *testing.T) { everyMode(t, testQueryTokenRewrites) }

func testQueryTokenRewrites(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.qrServer(t, now, nil)
	tok := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(90 * time.Second), ACL: []string{"/vod/title42/*"}, KeyID: "k1"})
	q := "token=" + tok // a token's bytes are all valid in a query as they are

	wantMaster := "#EXTM3U\r\n" +
		"#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key.bin?" + q + "\"\r\n" +
		"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x\",URI=\"audio/index.m3u8?lang=en&" + q + "\"\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1\r\n" +
		"v1/index.m3u8?" + q + "\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=2\r\n" +
		"../title43/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=3\r\n" +
		"http://elsewhere.example/vod/title42/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=4\r\n" +
		"http://cdn.example/vod/title42/v2/index.m3u8?" + q + "\r\n"
	r := ts.get("/vod/title42/master.m3u8?" + url.QueryEscape("token") + "=" + url.QueryEscape(tok))
	mustStatus(t, r, 200, "master with a query token")
	if string(r.body) != wantMaster {
		t.Fatalf("master with a query token: body\n%s\nwant\n%s", r.body, wantMaster)
	}
	mustHeader(t, r, "Content-Length", fmt.Sprint(len(wantMaster)), "master with a query token")
	mustHeader(t, r, "Content-Type", "application/vnd.apple.mpegurl", "master with a query token")
	// RFC 9111 §5.2.2.1: no cache may keep it past the token's expiry.
	mustHeader(t, r, "Cache-Control", "public, max-age=10", "master, token valid 90 s, playlist max-age 10")
	short := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(5 * time.Second), ACL: []string{"/vod/title42/*"}, KeyID: "k1"})
	mustHeader(t, ts.get("/vod/title42/master.m3u8?token="+short), "Cache-Control", "public, max-age=5", "master, token valid 5 s")

	// The file itself, through a path token: its own bytes and ETag.
	file := ts.get("/t/" + token.PathSegment(tok) + "/vod/title42/master.m3u8")
	mustStatus(t, file, 200, "master with a path token")
	mustBody(t, file, []byte(qrMaster), "master with a path token")
	etag := r.header("ETag")
	if etag == "" || etag == file.header("ETag") {
		t.Errorf("rewritten master ETag %q, file's %q: want a different, non-empty tag", etag, file.header("ETag"))
	}
	if again := ts.get("/vod/title42/master.m3u8?" + q); again.header("ETag") != etag || string(again.body) != wantMaster {
		t.Errorf("second GET: ETag %q, want %q (same file and token), body equal %v", again.header("ETag"), etag, string(again.body) == wantMaster)
	}
	// RFC 9110 §13.1.2: If-None-Match with the current tag is 304.
	mustStatus(t, ts.get("/vod/title42/master.m3u8?"+q, "If-None-Match: "+etag), 304, "If-None-Match of the rewritten ETag")
	mustStatus(t, ts.get("/vod/title42/master.m3u8?"+q, "If-None-Match: "+file.header("ETag")), 200, "If-None-Match of the file's ETag")
	other := mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/*"}, KeyID: "k1"})
	if r2 := ts.get("/vod/title42/master.m3u8?token=" + other); r2.header("ETag") == etag {
		t.Errorf("another token: same ETag %q; want one per body", etag)
	}
	// HEAD: the same header, no body (RFC 9110 §9.3.2).
	h := ts.do("HEAD", "/vod/title42/master.m3u8?"+q)
	mustStatus(t, h, 200, "HEAD of the master")
	mustHeader(t, h, "Content-Length", fmt.Sprint(len(wantMaster)), "HEAD of the master")
	mustHeader(t, h, "ETag", etag, "HEAD of the master")
	// A Range request gets the whole rewritten body (RFC 9110 §14.2: a
	// server MAY ignore Range).
	rg := ts.get("/vod/title42/master.m3u8?"+q, "Range: bytes=0-3")
	mustStatus(t, rg, 200, "Range on the rewritten master")
	mustBody(t, rg, []byte(wantMaster), "Range on the rewritten master")

	// What a player then asks for: the rewritten URI opens, the one to
	// another title was left without the token and is refused, and the
	// token cannot be carried there by hand either.
	mustBody(t, ts.get("/vod/title42/v1/index.m3u8?"+q), []byte("#EXTM3U\n#EXTINF:2,\nseg1.ts?"+q+"\n"), "media playlist through the rewritten URI")
	mustStatus(t, ts.get("/vod/title42/v1/seg1.ts?"+q), 200, "segment through the rewritten URI")
	mustStatus(t, ts.get("/vod/title43/v1/index.m3u8"), 401, "another title's URI, left without the token")
	mustStatus(t, ts.get("/vod/title43/v1/index.m3u8?"+q), 403, "another title with the token added by hand")

	wantMPD := strings.NewReplacer(
		"<BaseURL>v1/</BaseURL>", "<BaseURL>v1/?"+q+"</BaseURL>",
		`"init-$RepresentationID$.mp4"`, `"init-$RepresentationID$.mp4?`+q+`"`,
		`"seg$Number$.ts"`, `"seg$Number$.ts?`+q+`"`,
	).Replace(qrMPD)
	m := ts.get("/vod/title42/manifest.mpd?" + q)
	mustStatus(t, m, 200, "manifest with a query token")
	mustBody(t, m, []byte(wantMPD), "manifest with a query token")
	mustHeader(t, m, "Content-Type", "application/dash+xml", "manifest with a query token")
	if st := ts.srv.Stats().Rewrite; st.Rewritten < 5 || st.TooLarge != 0 || st.Failed != 0 {
		t.Errorf("rewrite stats %+v: want at least 5 rewritten, none too large or failed", st)
	}
}

// TestQueryTokenRewriteLimits: over the size limit, or with the rewrite
// off, the file is served as it is; a playlist too large to be inlined is
// rewritten too (read off the event loop).
func TestQueryTokenRewriteLimits(t *testing.T) { everyMode(t, testQueryTokenRewriteLimits) }

func testQueryTokenRewriteLimits(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.qrServer(t, now, func(a *origin.AuthConfig) { a.QueryRewriteMaxBytes = 256 << 10 })
	q := "token=" + mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/*"}})
	var big, bigWant strings.Builder
	big.WriteString("#EXTM3U\n")
	bigWant.WriteString("#EXTM3U\n")
	for i := 0; i < 1000; i++ { // about 23 KiB: over -inline-max
		fmt.Fprintf(&big, "#EXTINF:2,\nseg%05d.ts\n", i)
		fmt.Fprintf(&bigWant, "#EXTINF:2,\nseg%05d.ts?%s\n", i, q)
	}
	writeFile(t, ts.root, "vod/title42/big.m3u8", big.String())
	mustBody(t, ts.get("/vod/title42/big.m3u8?"+q), []byte(bigWant.String()), "a playlist over -inline-max")
	huge := strings.Repeat("#EXTINF:2,\nseg.ts\n", 16000) // 288 KiB: over the limit
	writeFile(t, ts.root, "vod/title42/huge.m3u8", "#EXTM3U\n"+huge)
	mustBody(t, ts.get("/vod/title42/huge.m3u8?"+q), []byte("#EXTM3U\n"+huge), "a playlist over the rewrite limit")
	if st := ts.srv.Stats().Rewrite; st.TooLarge != 1 || st.Rewritten != 1 {
		t.Errorf("rewrite stats %+v: want 1 rewritten, 1 too large", st)
	}

	off, keys := mode.qrServer(t, now, func(a *origin.AuthConfig) { a.QueryRewrite = false })
	q = "token=" + mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/*"}})
	mustBody(t, off.get("/vod/title42/master.m3u8?"+q), []byte(qrMaster), "-auth-query-rewrite=false")
}

// TestQueryTokenSecureLink: with secure_link, each URI under the
// manifest's directory gets its own md5= and expires= (the request's
// expiry), which the server then accepts; URIs elsewhere get none.
func TestQueryTokenSecureLink(t *testing.T) { everyMode(t, testQueryTokenSecureLink) }

func testQueryTokenSecureLink(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	const expr = "$expires$uri$remote_addr $secret"
	ts, _ := mode.qrServer(t, now, func(a *origin.AuthConfig) {
		a.Keys = nil
		a.SecureLinkSecret = "s3cret"
	})
	sign := func(uri string) string {
		hash, exp, err := token.SignSecureLink("s3cret", expr, uri, "127.0.0.1", now.Add(time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return "md5=" + hash + "&expires=" + exp
	}
	r := ts.get("/vod/title42/master.m3u8?" + sign("/vod/title42/master.m3u8"))
	mustStatus(t, r, 200, "master with secure_link")
	want := "#EXTM3U\r\n" +
		"#EXT-X-SESSION-KEY:METHOD=AES-128,URI=\"key.bin?" + sign("/vod/title42/key.bin") + "\"\r\n" +
		"#EXT-X-MEDIA:TYPE=AUDIO,GROUP-ID=\"a\",NAME=\"x\",URI=\"audio/index.m3u8?lang=en&" + sign("/vod/title42/audio/index.m3u8") + "\"\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=1\r\n" +
		"v1/index.m3u8?" + sign("/vod/title42/v1/index.m3u8") + "\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=2\r\n" +
		"../title43/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=3\r\n" +
		"http://elsewhere.example/vod/title42/v1/index.m3u8\r\n" +
		"#EXT-X-STREAM-INF:BANDWIDTH=4\r\n" +
		"http://cdn.example/vod/title42/v2/index.m3u8?" + sign("/vod/title42/v2/index.m3u8") + "\r\n"
	mustBody(t, r, []byte(want), "master with secure_link")
	mustStatus(t, ts.get("/vod/title42/v1/index.m3u8?"+sign("/vod/title42/v1/index.m3u8")), 200, "the URI's own secure_link")
}

// TestQueryTokenRewriteIgnoresHost: the request's Host is the client's
// to choose, so it never makes a URI ours. With Host: evil.example (in
// the field, or as an absolute-form target's authority, RFC 9112
// §3.2.2), a playlist's //evil.example/... and https://evil.example/...
// come back as they are, while relative URIs and the listed
// cdn.example's get the token; a URI naming the Host the client sent by
// default (test) is not listed either, and keeps none.
func TestQueryTokenRewriteIgnoresHost(t *testing.T) { everyMode(t, testQueryTokenRewriteIgnoresHost) }

func testQueryTokenRewriteIgnoresHost(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.qrServer(t, now, nil)
	q := "token=" + mustSign(t, keys["k1"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{"/vod/title42/*"}})
	const playlist = "#EXTM3U\n" +
		"#EXT-X-MAP:URI=\"//evil.example/vod/title42/init.mp4\"\n" +
		"#EXTINF:2,\n//evil.example/x.ts\n" +
		"#EXTINF:2,\nhttps://evil.example/y.ts\n" +
		"#EXTINF:2,\nHTTPS://Evil.Example:443/vod/title42/v1/seg1.ts\n" +
		"#EXTINF:2,\n//test/vod/title42/v1/seg1.ts\n" +
		"#EXTINF:2,\nv1/seg1.ts\n" +
		"#EXTINF:2,\n/vod/title42/v1/seg1.ts\n" +
		"#EXTINF:2,\nhttps://cdn.example/vod/title42/v1/seg1.ts\n"
	want := strings.NewReplacer(
		"\nv1/seg1.ts\n", "\nv1/seg1.ts?"+q+"\n",
		"\n/vod/title42/v1/seg1.ts\n", "\n/vod/title42/v1/seg1.ts?"+q+"\n",
		"https://cdn.example/vod/title42/v1/seg1.ts\n", "https://cdn.example/vod/title42/v1/seg1.ts?"+q+"\n",
	).Replace(playlist)
	writeFile(t, ts.root, "vod/title42/hosts.m3u8", playlist)
	target := "/vod/title42/hosts.m3u8?" + q

	c := ts.dial()
	if _, err := fmt.Fprintf(c.conn, "GET %s HTTP/1.1\r\nHost: evil.example\r\n\r\n", target); err != nil {
		t.Fatal(err)
	}
	evil := c.read("GET")
	mustStatus(t, evil, 200, "Host: evil.example")
	mustBody(t, evil, []byte(want), "Host: evil.example")

	abs := ts.get("http://evil.example" + target)
	mustStatus(t, abs, 200, "absolute-form target on evil.example")
	mustBody(t, abs, []byte(want), "absolute-form target on evil.example")

	own := ts.get(target)
	mustBody(t, own, []byte(want), "Host: test")
	// The same body whatever the Host, so the same ETag (RFC 9110 §8.8.1).
	if e, o := evil.header("ETag"), own.header("ETag"); e != o {
		t.Errorf("ETag with Host: evil.example %q, with Host: test %q; want one tag for one body", e, o)
	}
}
