package origin

import (
	"io"
	"log/slog"
	"time"

	"segorigin/internal/schema"
	"segorigin/origin/accesslog"
	"segorigin/origin/conn"
	"segorigin/origin/token"
)

// Config is everything the server needs. Field comments are the operator's
// documentation; Sections declares the flag of each operator setting
// (cmd/segorigin defines them) and the rules validate checks.
type Config struct {
	// Root is the media directory served at "/". Nothing outside it is
	// reachable: not by "..", not by percent-encoded dots or slashes, and
	// not by symlinks unless FollowSymlinks is set.
	Root string
	// FollowSymlinks lets symlinks under Root point outside it.
	FollowSymlinks bool
	// ServeDotfiles serves paths with a segment starting with '.' (.env,
	// .git/config, .well-known/...); without it they are 404, and so is a
	// file reached through a symlink whose real path has such a segment.
	ServeDotfiles bool

	// AdminPprof adds /debug/pprof/ to the admin handler. Off by default:
	// /debug/pprof/cmdline hands out the full command line, and profiles
	// cost CPU, to anyone who reaches the admin listener.
	AdminPprof bool

	// CORSOrigins lists the origins allowed to fetch cross-origin; "*"
	// allows any. Empty disables CORS headers.
	CORSOrigins []string
	// CORSAllowHeaders are the request headers a preflight allows
	// (DefaultCORSAllowHeaders() by default).
	CORSAllowHeaders []string
	// CORSMaxAge is how long a browser may keep a preflight's answer
	// (Chromium caps it at 2 h, Firefox at 24 h).
	CORSMaxAge time.Duration
	// CORSCredentials sends Access-Control-Allow-Credentials: true, so
	// pages may fetch with cookies (the cookie token carrier). It needs
	// an explicit CORSOrigins list: never "*".
	CORSCredentials bool

	// CacheControlPlaylist, CacheControlSegment and CacheControlOther are
	// the Cache-Control values for playlists/manifests (.m3u8, .mpd), media
	// segments (.ts, .m4s, .mp4, ...) and anything else. Empty omits the
	// header.
	CacheControlPlaylist string
	CacheControlSegment  string
	CacheControlOther    string

	// CacheControlBlockingReload is the Cache-Control of a Low-Latency
	// HLS playlist answered to a blocking reload (_HLS_msn, _HLS_part)
	// or a delta update (_HLS_skip): a CDN that keys on the query may
	// give the same answer to the players that ask the same directives a
	// moment later. Empty omits the header.
	CacheControlBlockingReload string

	// CacheControlNotFound (404, 410), CacheControlDenied (401, 403),
	// CacheControlRange (416), CacheControlClientError (any other 4xx:
	// 400, 405, 408, 412, 431) and CacheControlServerError (5xx) are the
	// Cache-Control values of error responses, so that a CDN's own
	// default negative caching does not decide. Empty omits the header.
	CacheControlNotFound string
	// CacheControlNotFoundLive is the Cache-Control of a 404 for a name
	// in a live directory (one a live playlist of it is in, or under a
	// live prefix): the part a CDN caches missing exists a second later.
	// Empty omits the header.
	CacheControlNotFoundLive string
	CacheControlDenied       string
	CacheControlRange        string
	CacheControlClientError  string
	CacheControlServerError  string

	// Headers are operator response headers by kind of response (see
	// HeaderRule); names the server sets itself are refused.
	Headers []HeaderRule

	// Types adds to or overrides the built-in media types by extension
	// (see MediaTypeRule); a later rule for the same extension wins.
	Types []MediaTypeRule

	// MaxRanges caps the ranges of one request after coalescing; a request
	// with more is answered 200 with the whole file (RFC 9110 §14.2 lets a
	// server ignore Range).
	MaxRanges int

	// CacheFiles bounds the open file descriptors the file cache keeps; 0
	// turns the cache off (open and fstat on every request).
	CacheFiles int
	// InlineMax: a file of at most this many bytes is read into memory
	// once, when its cache entry is opened, and a GET of it leaves in one
	// send together with the header (path "inline"); larger files keep
	// header + sendfile. 0 disables; needs CacheFiles > 0.
	InlineMax int64
	// InlineBudget bounds the bytes of inlined files held at once; a file
	// past it is served by sendfile instead.
	InlineBudget int64

	// Gzip sends text answers (a Content-Type GzipTypes lists) gzip-
	// compressed to clients whose Accept-Encoding accepts it: GzipStatic
	// sends a precompressed name.gz beside the file when it is not older
	// than the file (nginx's gzip_static); GzipOn also compresses the
	// file itself, once per version, keeping the result with its cache
	// entry (within InlineBudget); GzipOff sends every file as it is.
	// Never for media, a Range request or a file still being written.
	Gzip GzipMode
	// GzipTypes are the media types (no parameters) answered compressed
	// (nginx's gzip_types).
	GzipTypes []string
	// GzipMinLength: files smaller than this are sent as they are (nginx's
	// gzip_min_length).
	GzipMinLength int64
	// GzipMaxBytes: files larger than this are not compressed by the
	// server (a name.gz beside them is still sent).
	GzipMaxBytes int64
	// NegativeTTL is how long a missing file is remembered; 0 remembers
	// none (every request for a missing name looks again).
	NegativeTTL time.Duration
	// NegativeCacheBytes bounds the memory of remembered missing names
	// (their bytes plus a fixed overhead each): clients choose the names,
	// up to MaxHeaderBytes long. 0 remembers none.
	NegativeCacheBytes int64
	// Watch enables fsnotify invalidation of the file cache. Without it,
	// cached entries are revalidated by stat every RevalidateEvery.
	Watch bool
	// RevalidateEvery is how stale a cached entry may get before it is
	// checked against the file system by stat, when Watch is off or the
	// watcher has lost events. Must be > 0: nothing else would notice a
	// changed file then.
	RevalidateEvery time.Duration

	// Settle is how long after its last write a file counts as complete:
	// until then (its mtime or ctime, or a write the watcher saw, less
	// than Settle ago) it is in progress, and InProgress decides its
	// answer. 0 turns the time rule off. An empty file is judged like
	// any other.
	Settle time.Duration
	// InProgress is the answer for a file in progress: InProgress503
	// (503 with Retry-After and Cache-Control: no-store, the default) or
	// InProgressUncached (its bytes so far, with Cache-Control: no-store).
	InProgress InProgressMode

	// ETag is where strong validators come from: ETagSizeMtime (size
	// and mtime, the default) or ETagContent (a hash of the bytes,
	// computed once per version of a file on the cold readers and kept
	// in the cache entry and the file's user.segorigin.etag extended
	// attribute; a request whose file is not hashed yet waits for it up
	// to ColdDeadline, then gets 503 with Retry-After).
	ETag ETagMode

	// RootCheckEvery is how often the server checks that the media root is
	// still a readable directory (logged and counted when it is not;
	// /readyz checks too, on every probe), and resolves its path again: a
	// root that is a symlink swapped to another release is served from
	// that release from the first check that sees it, so this bounds how
	// long the old one is served (as nginx's open_file_cache_valid
	// bounds its cached lookups). 0: only /readyz.
	RootCheckEvery time.Duration
	// LivePrefixes are request path prefixes ("/live/") whose directories
	// are live whatever their playlists say (liveprefix.go): a file being
	// written there is streamed as it grows, and a missing name numbered
	// after an existing one is held until it appears, for at most
	// LiveHold. Empty: a directory is live only by its HLS playlist.
	LivePrefixes []string
	LiveHold     time.Duration

	// Engine serves plain HTTP: EngineLoop (event loops, Linux only) or
	// EngineFastHTTP (fasthttp, a goroutine per connection). HTTPS is
	// always fasthttp's, with crypto/tls and kTLS.
	Engine Engine
	// Loops is the loop engine's number of event loops, each an OS thread
	// (0: GOMAXPROCS).
	Loops int
	// Poller is how the loop engine's loops wait for readiness: "epoll",
	// "uring" (io_uring; the server does not start where the kernel
	// refuses it) or "auto" (io_uring, or epoll where it is refused).
	Poller string

	// ReadTimeout bounds reading one request (headers); WriteTimeout
	// bounds writing one response; IdleTimeout bounds the wait for the next
	// request on a keep-alive connection.
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	IdleTimeout  time.Duration
	// MaxRequestsPerConn closes a connection after that many requests
	// (0: no limit).
	MaxRequestsPerConn int
	// MaxHeaderBytes bounds the request line plus headers; beyond it the
	// request is refused with 431.
	MaxHeaderBytes int
	// MaxConns bounds concurrent connections (0: no limit), enforced at
	// accept. MaxConnsPerIP bounds the requests in progress at once per
	// client address, as trusted proxies name it (0: no limit): a request
	// over it is answered 503 with Retry-After, as nginx's limit_conn.
	MaxConns      int
	MaxConnsPerIP int
	// LimitRate paces each response to this many bytes a second (0: no
	// limit), once its first LimitRateAfter bytes have left at full speed
	// (nginx's limit_rate and limit_rate_after, per connection): for
	// viewers served directly, not a CDN. File bodies are paced by the
	// transport's timers, a quantum (100 ms) at a time; a body from
	// memory (up to InlineMax, a compressed playlist) leaves whole, its
	// bytes counted. The write timeout counts from each quantum's start.
	LimitRate      int64
	LimitRateAfter int64

	// ColdReaders is how many goroutines read bytes that are not in the
	// page cache, the only place a request's read may wait for storage:
	// before a span is sent, its residency is checked (cachestat(2)) and a
	// cold span waits, parked, for one of these readers to make it
	// resident, so sendfile never blocks an OS thread on a disk and the
	// thread count stays near GOMAXPROCS + ColdReaders. 0 turns the check
	// off (a cold sendfile then blocks its thread, as nginx without aio).
	ColdReaders int
	// ColdQueue bounds requests waiting for a cold reader; beyond it a
	// request is answered 503 with Retry-After at once.
	ColdQueue int
	// ColdDeadline bounds one request's wait for a cold reader; past it,
	// 503 with Retry-After (or, mid-body, the connection closes).
	ColdDeadline time.Duration
	// ReadAhead configures reading ahead like a player, on the cold
	// readers (see ReadAheadConfig).
	ReadAhead ReadAheadConfig

	// DisableSendfile forces the userspace copy body path on plain TCP
	// for files over InlineMax (for diagnosis and comparison benchmarks).
	DisableSendfile bool

	// TrustedProxies lists the CIDR prefixes (or single addresses) of the
	// proxies in front of the origin: a CDN's shield, a load balancer. Only
	// their connections may name another client, by ClientIPHeader or a
	// PROXY header. Empty: every peer is the client.
	TrustedProxies []string
	// ClientIPHeader is the header trusted proxies write the client's
	// address in: "X-Forwarded-For" (default; nginx, most CDNs),
	// "Forwarded" (RFC 7239) or "none"; empty means X-Forwarded-For. Only one is read: a proxy that
	// writes one passes the other through untouched, forged or not.
	ClientIPHeader string
	// ProxyProtocol says whether listeners take a PROXY protocol header
	// (v1 or v2, from HAProxy, nginx's stream proxy_protocol, cloud load
	// balancers) before the first request: "off" (default, also ""), "optional"
	// (trusted proxies may send one) or "required" (trusted proxies must).
	// A peer outside TrustedProxies that sends one is disconnected. The
	// header's source is then the connection's client for everything:
	// per-IP limits, tokens, logs.
	ProxyProtocol string

	// Access is nginx's allow/deny and valid_referers, as nginx
	// statements: "allow 10.0.0.0/8; deny all;" (address rules, tried in
	// order, the first match deciding, none matching allowing) and
	// "valid_referers none blocked *.example.com;" (a Referer outside the
	// list is refused, as nginx's "if ($invalid_referer) { return 403; }").
	// The address is the client's: the peer, or the one a trusted proxy
	// names (TrustedProxies). A refusal is 403, for every method. Empty:
	// off. origin/access says exactly how nginx's rules are kept.
	Access string

	// Auth enables signed-URL authorization (off when it has no keys).
	Auth AuthConfig

	// TLS configures HTTPS listeners (see TLSConfig); off without a
	// certificate.
	TLS TLSConfig

	// ServerName is sent in the Server header ("" omits it).
	ServerName string

	// Logger receives operational log lines; nil uses slog.Default().
	Logger *slog.Logger
	// AccessLog receives one line per response, with one Write each, when
	// set (nil: off), in AccessLogFormat (combined, the zero value, or
	// JSON); AccessLogSample logs one response in that many (1: all; at
	// least 1). Tokens in paths, queries and the Referer are redacted.
	AccessLog       io.Writer
	AccessLogFormat accesslog.Format
	AccessLogSample int
	// Now is the clock; nil uses time.Now.
	Now func() time.Time

	// Build describes the running binary, exported as the labels of
	// segorigin_build_info.
	Build BuildInfo
}

// BuildInfo names the binary: its module version, the Go release that built
// it and the VCS commit (empty when unknown).
type BuildInfo struct {
	Version   string
	GoVersion string
	Commit    string
}

// defaultInlineMax is -inline-max's default, chosen by measurement (see
// docs/benchmarks.md, "Why -inline-max is 16 KiB").
const defaultInlineMax = 16 << 10

// defaultColdReaders is -cold-readers' default.
const defaultColdReaders = 32

// ReadAheadReadersFor is how many of coldReaders read ahead when
// -readahead-readers is not given: a quarter (at most 8), and one when
// there are two or three, always leaving most for waiting requests; none
// without cold readers, since read-ahead runs on them.
func ReadAheadReadersFor(coldReaders int) int {
	r := coldReaders / 4
	if r == 0 && coldReaders >= 2 {
		r = 1
	}
	return min(r, 8)
}

// DefaultConfig returns the defaults documented in docs/configuration.md:
// the one place they are set (cmd/segorigin's flags show these values).
func DefaultConfig() Config {
	return Config{
		Root:                 "fixtures/media",
		CORSOrigins:          []string{"*"},
		CORSAllowHeaders:     DefaultCORSAllowHeaders(),
		CORSMaxAge:           24 * time.Hour,
		CacheControlPlaylist: "public, max-age=10",
		CacheControlSegment:  "public, max-age=31536000, immutable",
		CacheControlOther:    "public, max-age=300",
		// Every player of a stream asks the same _HLS_msn and _HLS_part
		// within a part's duration of each other: an edge keying on the
		// query answers all but the first, and the answer is no older
		// than a second.
		CacheControlBlockingReload: "public, max-age=1",
		// A file that appears (a live packager's next segment) must not
		// stay missing at the edge for long; 10 s spares the origin a
		// flood of identical misses.
		CacheControlNotFound: "max-age=10",
		// In a live directory the next part is written within a part's
		// duration of a player first asking for it.
		CacheControlNotFoundLive: "no-store",
		// A 401/403 depends on the request's token, which a CDN's cache
		// key may not include (cookie, Authorization); a 416 depends on
		// the Range header; other 4xx on the request's bytes; 5xx are
		// transient.
		CacheControlDenied:      "no-store",
		CacheControlRange:       "no-store",
		CacheControlClientError: "no-store",
		CacheControlServerError: "no-store",
		MaxRanges:               64,
		CacheFiles:              4096,
		InlineMax:               defaultInlineMax,
		InlineBudget:            64 << 20,
		Gzip:                    GzipOn,
		GzipTypes:               DefaultGzipTypes(),
		GzipMinLength:           defaultGzipMinLength,
		GzipMaxBytes:            defaultGzipMaxBytes,
		NegativeTTL:             time.Second,
		NegativeCacheBytes:      1 << 20,
		Watch:                   true,
		RevalidateEvery:         2 * time.Second,
		Settle:                  2 * time.Second,
		InProgress:              InProgress503,
		ETag:                    ETagSizeMtime,
		RootCheckEvery:          time.Second,
		LiveHold:                6 * time.Second,
		ReadTimeout:             30 * time.Second,
		WriteTimeout:            60 * time.Second,
		IdleTimeout:             75 * time.Second,
		MaxHeaderBytes:          8192,
		Engine:                  defaultEngine,
		Poller:                  "epoll",
		ColdReaders:             defaultColdReaders,
		ColdQueue:               1024,
		ColdDeadline:            5 * time.Second,
		ReadAhead: ReadAheadConfig{
			Readers: ReadAheadReadersFor(defaultColdReaders), Queue: 256, MaxBytes: 8 << 20,
			Playlist: true, ByteRange: true, Template: true, Sidx: true, CMCD: true,
		},
		AccessLogSample: 1,
		ProxyProtocol:   string(conn.ProxyOff),
		ClientIPHeader:  ClientIPHeaderXFF,
		ServerName:      "segorigin",
		TLS:             TLSConfig{KTLS: KTLSAuto, ReloadEvery: 5 * time.Second},
		Auth:            defaultAuthConfig(),
	}
}

// defaultAuthConfig is DefaultConfig's Auth: where a token is looked
// for, how a refusal answers, nginx's secure_link spelling.
func defaultAuthConfig() AuthConfig {
	return AuthConfig{
		PathPrefix:    "t",
		QueryParam:    "token",
		Cookie:        "segorigin_token",
		Bearer:        true,
		MissingStatus: 401,
		Skew:          token.DefaultSkew,
		CacheLifetime: CacheLifetimeToken,
		// nginx's secure_link and secure_link_md5 as its
		// documentation writes them.
		SecureLinkExpression:    token.DefaultSecureLinkExpression,
		SecureLinkArgs:          "md5,expires",
		SecureLinkExpiredStatus: 403,
		QueryRewrite:            true,
		QueryRewriteMaxBytes:    defaultQueryRewriteMax,
	}
}

// validate checks the configuration once, at New: the rules of every
// section of Sections, the ones the command line is held to.
func (c *Config) validate() error {
	err := schema.CheckAll(c.Sections())
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return err
}

// Engine is what serves plain HTTP (Config.Engine).
type Engine string

const (
	// EngineLoop: event loops (origin/loop), a few OS threads in
	// epoll_wait for every connection.
	EngineLoop Engine = "loop"
	// EngineFastHTTP: fasthttp's server, a goroutine per connection.
	EngineFastHTTP Engine = "fasthttp"
)

// InProgressMode is the answer for a file still being written
// (Config.InProgress).
type InProgressMode string

const (
	// InProgress503: 503 with Retry-After and Cache-Control: no-store,
	// so no cache keeps anything and clients come back once it settles.
	InProgress503 InProgressMode = "503"
	// InProgressUncached: the bytes written so far, with Cache-Control:
	// no-store, for players that would rather have them than wait.
	InProgressUncached InProgressMode = "uncached"
)
