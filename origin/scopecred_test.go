package origin_test

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"segorigin/origin"
	"segorigin/origin/token"
)

// A title laid out as packagers write it: a DASH SegmentTemplate
// presentation and an AES-128 HLS one whose key sits in the title's
// directory, above the playlist's (../enc.key).
const (
	scMPD = `<?xml version="1.0" encoding="utf-8"?>
<MPD xmlns="urn:mpeg:dash:schema:mpd:2011" type="static" mediaPresentationDuration="PT8S">
 <Period><AdaptationSet>
  <Representation id="0" bandwidth="1">
   <SegmentTemplate timescale="1" initialization="init-$RepresentationID$.m4s" media="chunk-$RepresentationID$-$Number%05d$.m4s" startNumber="1" duration="2"/>
  </Representation>
 </AdaptationSet></Period>
</MPD>
`
	scHLS = "#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:2\n" +
		"#EXT-X-KEY:METHOD=AES-128,URI=\"../enc.key\",IV=0x00000000000000000000000000000001\n" +
		"#EXTINF:2,\nseg0.ts\n#EXTINF:2,\nseg1.ts\n#EXT-X-ENDLIST\n"
	scChunks = 4
)

// scTitles writes title42 and title43, each with the DASH and HLS
// presentations; every file's body names its title and path.
func scTitles(t *testing.T, root string) {
	for _, title := range []string{"title42", "title43"} {
		dir := "vod/" + title + "/"
		writeFile(t, root, dir+"dash/manifest.mpd", scMPD)
		writeFile(t, root, dir+"dash/init-0.m4s", dir+"dash/init-0.m4s")
		for n := 1; n <= scChunks; n++ {
			p := fmt.Sprintf("%sdash/chunk-0-%05d.m4s", dir, n)
			writeFile(t, root, p, p)
		}
		writeFile(t, root, dir+"hls/index.m3u8", scHLS)
		writeFile(t, root, dir+"hls/seg0.ts", dir+"hls/seg0.ts")
		writeFile(t, root, dir+"hls/seg1.ts", dir+"hls/seg1.ts")
		writeFile(t, root, dir+"enc.key", dir+"enc.key")
	}
}

var (
	mpdTemplateRE = regexp.MustCompile(`(media|initialization)="([^"]*)"`)
	hlsKeyRE      = regexp.MustCompile(`#EXT-X-KEY:.*URI="([^"]*)"`)
)

// playTemplate does what a DASH player does with the rewritten manifest
// at target: reads each SegmentTemplate attribute (XML-unescaped),
// substitutes $RepresentationID$ and $Number%05d$ (ISO/IEC 23009-1
// §5.3.9.4.4) for the init section and chunks 1..scChunks, resolves
// each against the manifest's URL (RFC 3986 §5.2) and fetches it. Every
// request must be 200 with the file's bytes. It returns the chunk URLs.
func playTemplate(t *testing.T, ts *testServer, target string) []string {
	t.Helper()
	r := ts.get(target)
	mustStatus(t, r, 200, "GET "+target)
	base, _ := url.Parse("http://test" + target)
	var chunks []string
	for _, m := range mpdTemplateRE.FindAllStringSubmatch(string(r.body), -1) {
		tmpl := strings.ReplaceAll(m[2], "&amp;", "&")
		tmpl = strings.ReplaceAll(tmpl, "$RepresentationID$", "0")
		numbers := []int{0}
		if m[1] == "media" {
			numbers = []int{1, 2, 3, scChunks}
		}
		for _, n := range numbers {
			ref, err := url.Parse(strings.ReplaceAll(tmpl, "$Number%05d$", fmt.Sprintf("%05d", n)))
			if err != nil {
				t.Fatalf("template %q: %v", m[2], err)
			}
			u := base.ResolveReference(ref)
			got := ts.get(u.RequestURI())
			mustStatus(t, got, 200, fmt.Sprintf("%s of the template %q", u.RequestURI(), m[2]))
			if string(got.body) != strings.TrimPrefix(u.Path, "/") {
				t.Errorf("GET %s: body %q, want the file %s", u.RequestURI(), got.body, u.Path)
			}
			if m[1] == "media" {
				chunks = append(chunks, u.RequestURI())
			}
		}
	}
	if len(chunks) != 4 {
		t.Fatalf("GET %s: %d chunk requests made from its templates, want 4:\n%s", target, len(chunks), r.body)
	}
	return chunks
}

// keyOf fetches the rewritten playlist at target and the key its
// EXT-X-KEY names, resolved as a player resolves it; it returns the key's
// request target and response.
func keyOf(t *testing.T, ts *testServer, target string) (string, *response) {
	t.Helper()
	r := ts.get(target)
	mustStatus(t, r, 200, "GET "+target)
	m := hlsKeyRE.FindStringSubmatch(string(r.body))
	if m == nil {
		t.Fatalf("GET %s: no EXT-X-KEY URI in\n%s", target, r.body)
	}
	base, _ := url.Parse("http://test" + target)
	ref, err := url.Parse(m[1])
	if err != nil {
		t.Fatal(err)
	}
	u := base.ResolveReference(ref).RequestURI()
	return u, ts.get(u)
}

// otherTitle moves a request target from title42 to title43, its
// credential kept.
func otherTitle(target string) string { return strings.Replace(target, "/title42/", "/title43/", 1) }

// TestScopeCredentialSecureLink: under nginx secure_link, whose hash
// covers one URI, a manifest's SegmentTemplate gets a scope credential
// (a token for the manifest's directory) instead of an md5 of the
// template's text, so every chunk a player makes of it is 200; an
// AES-128 playlist's key outside its directory (../enc.key) is signed
// for itself and is 200; nothing signed for title42 opens title43.
func TestScopeCredentialSecureLink(t *testing.T) { everyMode(t, testScopeCredentialSecureLink) }

func testScopeCredentialSecureLink(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts := mode.linkServer(t, now, nil)
	scTitles(t, ts.root)
	link := func(uri string) string {
		return uri + "?" + signLink(t, documentedLink, token.LinkRequest{URI: uri, RemoteAddr: "127.0.0.1"}, now.Add(time.Hour))
	}
	mpd := link("/vod/title42/dash/manifest.mpd")
	chunks := playTemplate(t, ts, mpd)
	for _, c := range chunks {
		mustStatus(t, ts.get(otherTitle(c)), 403, "title42's chunk credential on title43")
	}
	mustStatus(t, ts.get(otherTitle(mpd)), 403, "title42's manifest link on title43")
	// The scope credential on title43's manifest, and on the parent
	// directory's key: refused.
	_, scope, _ := strings.Cut(chunks[0], "?")
	mustStatus(t, ts.get("/vod/title43/dash/manifest.mpd?"+scope), 403, "title42's scope credential on title43's manifest")
	mustStatus(t, ts.get("/vod/title42/enc.key?"+scope), 403, "the dash/ scope credential on the title's key")

	key, r := keyOf(t, ts, link("/vod/title42/hls/index.m3u8"))
	mustStatus(t, r, 200, "the key "+key+" named ../enc.key")
	mustBody(t, r, []byte("vod/title42/enc.key"), "the key "+key)
	mustStatus(t, ts.get(otherTitle(key)), 403, "title42's key link on title43's key")
}

// TestScopeCredentialQueryToken: a query token signed for the manifest
// alone (what a CMS that signs one URL hands out) plays the template
// through the scope credential; a token for the HLS directory gets the
// key above it signed for that key alone; nothing opens title43. A scope
// credential presented for a document in turn never yields a wider one,
// whatever -auth-rewrite-scope says.
func TestScopeCredentialQueryToken(t *testing.T) { everyMode(t, testScopeCredentialQueryToken) }

func testScopeCredentialQueryToken(t *testing.T, mode serverMode) {
	now := time.Unix(1_800_000_000, 0)
	ts, keys := mode.authServer(t, now, nil)
	scTitles(t, ts.root)
	sign := func(acl string) string {
		return "token=" + url.QueryEscape(mustSign(t, keys["k2"], token.Claims{Expiry: now.Add(time.Hour), ACL: []string{acl}, KeyID: "k2"}))
	}
	mpd := "/vod/title42/dash/manifest.mpd?" + sign("/vod/title42/dash/manifest.mpd")
	chunks := playTemplate(t, ts, mpd)
	for _, c := range chunks {
		mustStatus(t, ts.get(otherTitle(c)), 403, "title42's chunk credential on title43")
	}
	mustStatus(t, ts.get(otherTitle(mpd)), 403, "title42's manifest token on title43")

	key, r := keyOf(t, ts, "/vod/title42/hls/index.m3u8?"+sign("/vod/title42/hls/*"))
	mustStatus(t, r, 200, "the key "+key+" named ../enc.key")
	mustStatus(t, ts.get(otherTitle(key)), 403, "title42's key credential on title43's key")
	_, cred, _ := strings.Cut(key, "?")
	mustStatus(t, ts.get("/vod/title42/hls/seg0.ts?"+cred), 403, "the key's own credential on a segment")
}

// TestScopeCredentialBounded: with -auth-rewrite-scope 1 a manifest in
// /vod/title42/dash/ hands out a credential for /vod/title42/; that
// credential, presented for a manifest directly in /vod/title42/ whose
// template names title43, yields nothing for title43 (the scope would be
// /vod/ one level up, wider than the credential that asked).
func TestScopeCredentialBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	ts := linkServer(t, now, func(a *origin.AuthConfig) { a.RewriteScope = 1 })
	scTitles(t, ts.root)
	writeFile(t, ts.root, "vod/title42/top.mpd", strings.ReplaceAll(scMPD, `"chunk-`, `"../title43/dash/chunk-`))
	uri := "/vod/title42/dash/manifest.mpd"
	chunks := playTemplate(t, ts, uri+"?"+signLink(t, documentedLink, token.LinkRequest{URI: uri, RemoteAddr: "127.0.0.1"}, now.Add(time.Hour)))
	_, scope, _ := strings.Cut(chunks[0], "?")
	mustStatus(t, ts.get("/vod/title42/enc.key?"+scope), 200, "the title-wide scope credential on the title's key")
	mustStatus(t, ts.get("/vod/title43/enc.key?"+scope), 403, "the title-wide scope credential on title43")
	r := ts.get("/vod/title42/top.mpd?" + scope)
	mustStatus(t, r, 200, "a manifest in the scope's own directory")
	for _, m := range mpdTemplateRE.FindAllStringSubmatch(string(r.body), -1) {
		if m[1] == "media" && strings.Contains(m[2], "?") {
			t.Errorf("top.mpd through title42's scope credential: media=%q, want title43's template left without a credential", m[2])
		}
	}
}
