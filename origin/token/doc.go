// Package token mints and checks the signed-URL tokens segorigin accepts.
//
// It owns the token grammar, the MAC, the key file, the scope (ACL)
// match, the path-segment encoding of a token, and a verifier for links
// made for nginx's secure_link module. It never does I/O beyond reading a
// key file from an io.Reader, never reads the clock (callers pass now),
// and knows nothing of HTTP: where a token travels (path prefix
// /t/<segment>/, query argument, cookie, Authorization: Bearer) and how an
// error becomes a status is the origin package's business.
//
// # Token grammar
//
// The default scheme has the shape of Akamai EdgeAuth v2 tokens, so that
// operators' existing generators (akamai/EdgeAuth-Token-*) interoperate
// with the default field delimiter '~' and ACL delimiter '!', HMAC-SHA256,
// and a hex key:
//
//	token    = 1*16( field "~" ) "hmac=" 64lowhex   ; at most MaxTokenLen bytes
//	field    = name "=" value
//	name     = 1*16( ALPHA / DIGIT / "_" / "-" )    ; each name at most once
//	value    = 1*%x21-7D                             ; visible ASCII but "~"
//	lowhex   = DIGIT / %x61-66                       ; lowercase only
//
// Field meanings, in the order Sign writes them:
//
//	ip=<addr>     optional: the client address the token is bound to
//	st=<unix>     optional: first valid second
//	exp=<unix>    required: last valid second (1-18 digits, as st)
//	acl=<p>!<p>   the path patterns the token opens
//	kid=<id>      optional: the key id; without it every key is tried
//	hmac=<hex>    required, last: HMAC-SHA256 of the signed text
//
// Other names (EdgeAuth's id= and data=, anything else) are allowed, signed
// and ignored. The names hmac, url and salt may not appear before the final
// hmac. Field order is free except that hmac is last.
//
// # What is signed
//
// The MAC is HMAC-SHA256, keyed with the secret bytes (the key file holds
// them in hex), over exactly the bytes of the token before "~hmac=". A
// token without acl= is EdgeAuth's URL form: the signed text is then those
// bytes followed by "~url=" and the clean request path (without the
// /t/<segment> carrier or query), which the token does not carry, so the
// token opens that one path. (EdgeAuth's salt and
// escape_early of the URL are not supported; escaped ip=, id= and data=
// values verify since the bytes are signed as sent.)
//
// Verify checks, in order: the grammar, the path's shape, the MAC, then
// for authentic tokens only the time, the address and the ACL, so that
// every reason other than "malformed" or "signature" describes a token a
// key holder made. Time: expired when now > exp+skew, early when
// now+skew < st (skew 30s by default). Scope: in an ACL pattern '*'
// matches any run of bytes, '/' included; a pattern ending in '*' is a
// prefix, one without '*' an exact path. The caller must pass the path
// percent-decoded and cleaned of dot segments; Verify refuses with
// ErrScope a path with an empty, "." or ".." segment, so /vod/a/../b
// cannot be matched by /vod/a/*.
//
// A token without kid= costs one HMAC per key in the worst case, so keep
// the keyring short (the keys in rotation) or have generators write kid=.
//
// A valid token is verified without allocation: the token is copied into
// pooled scratch memory, each key keeps a pool of keyed MACs, the MAC is
// compared in constant time, and the ACL is matched in place.
//
// # Path-segment encoding
//
// A token's ACL holds '/', which a path segment cannot hold, and %2F is
// decoded, rejected or merged by some servers, proxies and CDNs; '*' and
// '!' are sub-delims some clients escape. So the segment form (PathSegment) is base64url without
// padding (RFC 4648 §5) of the whole token: its alphabet [A-Za-z0-9_-] is
// unreserved (RFC 3986 §2.3), so /t/<segment>/vod/title42/master.m3u8
// survives a player's relative-URL resolution (RFC 3986 §5.2) unchanged,
// and every media URL the playlist names relatively carries the token too.
// It costs a third more bytes. ParseSegment, ParseSegmentInto and
// Verifier.VerifySegment accept only the canonical encoding.
//
// Elsewhere the raw text travels as EdgeAuth generators emit it: it is a
// valid query value as is. It is not a valid RFC 6750 b64token (which
// lacks '!' and '*') nor, when an ACL holds ',', ';', '"' or '\', a valid
// RFC 6265 cookie value; the segment form is valid in both.
//
// # Keys
//
// A key file holds one key a line, "<key-id> <secret hex>"; blank lines
// and '#' comments are ignored; ids are unique, 1-64 bytes of
// [A-Za-z0-9._-]; secrets are at least MinSecretLen bytes. To rotate: add
// the new key, sign with it (kid= names it), and remove the old key once
// its tokens have expired.
//
// # Scope credentials
//
// SignScope mints the token a server writes into a playlist or manifest
// where the player's own credential cannot serve (a DASH template, a key
// outside the playlist's directory): an ACL of one directory and '*', or
// of one exact path, with the expiry and address of the credential that
// opened the document. Under secure_link it is signed with DeriveKey's
// key, computed from the secure_link secret. Scope.CoversTree tells a
// caller which directories a token opens whole, so that a scope
// credential never yields a wider one.
//
// # nginx secure_link
//
// SecureLinkVerifier checks links in the format of nginx's secure_link and
// secure_link_md5 directives (MD5 over an expression, base64url without
// padding, expiry in seconds), so that links already handed out keep
// working during a migration. The expression is compiled once
// (NewSecureLink) into its literal runs and variables, with nginx's
// syntax and meanings: $secure_link_expires, $uri, $remote_addr,
// $http_<name>, $arg_<name> (raw, the first of that name without case, as
// nginx's $arg_ reads it: QueryArg), the captures $1..$9 of a location
// regular expression, and $secret for the secret, which stays out of the
// expression. The argument names are configurable, and a link may have no
// expiry (nginx's "secure_link $arg_md5;"). Verify fills the expression
// into a stack buffer: without captures it does not allocate.
//
// # Logs
//
// A token is a credential until it expires: whoever reads it can replay
// it. A Redactor hides every token a request target, Referer, cookie
// list or echoed request may hold (the path carrier becomes /t/…/,
// carrier parameters and hmac= fields keep only their name), in the text
// as sent and in its percent-decoded form, and returns the kid and exp of
// the first one, which is what an operator debugging a refusal needs.
package token
