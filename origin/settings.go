package origin

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"segorigin/internal/schema"
)

// Sections declares every operator setting of c, each bound to its field:
// its flag name, -h usage, documentation and the rules across the
// section's settings. validate runs those rules, so New refuses what the
// command line refuses; cmd/segorigin defines its flags and SEGORIGIN_*
// variables from them, and docs/configuration.md's tables are made from
// them. The defaults are what c holds (DefaultConfig's, normally).
func (c *Config) Sections() []schema.Section {
	return []schema.Section{
		c.tlsSection(), c.rootSection(), c.headerSection(), c.corsSection(),
		c.cacheSection(), c.gzipSection(), c.connSection(), c.proxySection(), c.accessSection(), c.coldSection(),
		c.authSection(), c.logSection(),
	}
}

// tlsSection: the HTTPS listeners' certificate and kernel TLS, and the admin listener's pprof.
func (c *Config) tlsSection() schema.Section {
	return schema.Section{Title: "Listeners and TLS", Check: c.TLS.Validate, Settings: []schema.Setting{
		{Name: "tls-cert", Ptr: &c.TLS.CertFile,
			Usage: "PEM certificate chain `file` for -tls-listen (reloaded when it changes and on SIGHUP)",
			Doc:   "PEM certificate chain; re-read when it changes (checked every 5 s) and on SIGHUP"},
		{Name: "tls-key", Ptr: &c.TLS.KeyFile,
			Usage: "PEM private key `file` for -tls-listen",
			Doc:   "PEM private key of `-tls-cert`"},
		{Name: "tls-dev", Ptr: &c.TLS.Dev,
			Usage: "serve -tls-listen with a self-signed certificate for localhost made at start (development only)",
			Doc:   "a self-signed certificate for localhost, 127.0.0.1 and ::1, made at start (development only)"},
		{Name: "ktls", Ptr: (*string)(&c.TLS.KTLS),
			Usage: "kernel TLS for HTTPS: auto (both directions where the kernel has them), tx (transmit only), off, always (attempt even if the start-up probe failed)",
			Doc:   "kernel TLS for HTTPS: `auto` (the directions the start-up probe found: the kernel seals, and opens requests where it can), `tx` (the kernel seals; requests read through crypto/tls), `off`, `always` (attempt both even if the probe failed); see [HTTPS and kernel TLS](https.md)"},
		{Name: "admin-pprof", Ptr: &c.AdminPprof,
			Usage: "serve /debug/pprof/ on -admin-listen (its /cmdline shows the full command line)",
			Doc:   "serve `/debug/pprof/` on the admin listener; off by default since `/debug/pprof/cmdline` shows the whole command line to anyone who reaches it"},
	}}
}

// rootSection: what is served and when a file counts as complete.
func (c *Config) rootSection() schema.Section {
	return schema.Section{Title: "Media root", Check: c.checkRoot, Settings: []schema.Setting{
		{Name: "root", Ptr: &c.Root,
			Usage: "media root `directory`",
			Doc:   "media root directory"},
		{Name: "follow-symlinks", Ptr: &c.FollowSymlinks,
			Usage: "let symlinks under the root point outside it",
			Doc:   "let symlinks under the root point outside it"},
		{Name: "serve-dotfiles", Ptr: &c.ServeDotfiles,
			Usage: "serve paths with a segment starting with '.' (.well-known/...); otherwise 404",
			Doc:   "serve paths with a segment starting with `.` (`.well-known/...`); without it `/.env`, `/.git/config`, `/a/.htaccess` are 404"},
		{Name: "watch", Ptr: &c.Watch,
			Usage: "invalidate the file cache on file system events (fsnotify)",
			Doc:   "fsnotify invalidation of the file cache"},
		{Name: "revalidate-every", Ptr: &c.RevalidateEvery,
			Usage: "stat cached files this often when -watch=false or the watcher lost events (> 0)",
			Doc:   "stat-revalidation interval of cached files when `-watch=false` or the watcher lost events; must be more than 0 (0 would never recheck a file: refused at start)"},
		{Name: "settle", Ptr: &c.Settle,
			Usage: "a file whose mtime or ctime (or a write the watcher saw) is less than this old is still being written: not served as complete (0: only the watcher's events); where the kernel can tell, one no process has open for writing is complete at once",
			Doc:   "a file whose mtime or ctime (or a write the watcher saw) is less than this old is still being written: it is not served as complete (see [publishing safely](operations.md#publishing-safely)); 0 keeps only the watcher's events; where the kernel can tell, a file no process has open for writing is complete at once"},
		{Name: "in-progress", Ptr: (*string)(&c.InProgress),
			Usage: "answer for a file still being written: 503 (Retry-After, Cache-Control: no-store) or uncached (its bytes so far, Cache-Control: no-store)",
			Doc:   "the answer for a file still being written: `503` (with `Retry-After` and `Cache-Control: no-store`) or `uncached` (its bytes so far, with `Cache-Control: no-store`)"},
		{Name: "etag", Ptr: (*string)(&c.ETag),
			Usage: "strong validators from: size-mtime, or content (a hash of the bytes, the same on every copy whatever its mtime; computed once per file version on the cold readers and kept in the user.segorigin.etag extended attribute)",
			Doc:   "where strong validators come from: `size-mtime`, or `content`: a hash of the bytes (XXH3-128), the same on every origin holding the same bytes whatever the copies' mtimes, computed once per version of a file on the cold readers and kept in the cache entry and the file's `user.segorigin.etag` extended attribute (so a restart does not hash again; `segorigin etag DIR` stores them ahead); a request for a file not hashed yet waits for it up to `-cold-deadline`, then gets 503 with `Retry-After` (see [Behind a CDN](cdn.md#several-origins-keep-the-etags-equal))"},
		{Name: "root-check-every", Ptr: &c.RootCheckEvery,
			Usage: "check this often that the media root is still there and readable (logged, counted, /readyz 503 when not), and follow its path to the directory it names now (a symlinked root swapped to another release); 0: on /readyz probes only",
			Doc:   "how often the media root is checked (missing, unreadable: logged, counted, `/readyz` 503) and its path resolved again: a root that is a symlink swapped to another release (`current -> releases/N`) is served from the new release from the first check that sees it (see [Release swaps](operations.md#release-swaps-by-symlink)); 0: only on `/readyz`"},
		{Name: "live-prefix", Ptr: &c.LivePrefixes,
			Usage: "comma-separated path `prefixes` (/live/,/ll/) whose directories are live whatever their playlists say (LL-DASH, DASH-only live): a file being written is streamed as it grows, a missing segment numbered after an existing one is held for -live-hold",
			Doc:   "path prefixes (`/live/,/ll/`) whose directories are live whatever their playlists say, for DASH-only and LL-DASH (chunked CMAF) output: a segment still being written is streamed as it grows, a missing segment numbered after one that exists is held until it appears, for at most `-live-hold` (see [live](live.md#low-latency-dash-and-live-prefixes)); other paths keep the publishing rule"},
		{Name: "live-hold", Ptr: &c.LiveHold,
			Usage: "under -live-prefix: how long a request for the next segment waits for it to appear, and a stream for its file to grow (> 0)",
			Doc:   "under `-live-prefix`: how long a request for the next segment waits for it to appear (then `503`), and how long a stream of a growing segment waits for its next bytes (then it ends without its last chunk)"},
	}}
}

// checkRoot: the root is a directory, the intervals are not negative, and
// a cached file is rechecked now and then.
func (c *Config) checkRoot() error {
	var errs []error
	if err := checkLivePrefixes(c.LivePrefixes, c.LiveHold); err != nil {
		errs = append(errs, err)
	}
	if c.Root == "" {
		errs = append(errs, errors.New("root: must be set"))
	} else if st, err := os.Stat(c.Root); err != nil {
		errs = append(errs, fmt.Errorf("root: %w", err))
	} else if !st.IsDir() {
		errs = append(errs, fmt.Errorf("root: %s is not a directory", c.Root))
	}
	errs = append(errs, notNegative(
		named{"revalidate-every", c.RevalidateEvery}, named{"root-check-every", c.RootCheckEvery}, named{"settle", c.Settle}))
	if c.RevalidateEvery == 0 {
		errs = append(errs, errors.New("revalidate-every: 0s, want > 0 (how often cached files are checked by stat while -watch is off or the watcher lost events; 0 would never check)"))
	}
	switch c.InProgress {
	case InProgress503, InProgressUncached:
	default:
		errs = append(errs, fmt.Errorf("in-progress: %q, want 503 or uncached", c.InProgress))
	}
	switch c.ETag {
	case ETagSizeMtime, ETagContent:
	default:
		errs = append(errs, fmt.Errorf("etag: %q, want size-mtime or content", c.ETag))
	}
	return errors.Join(errs...)
}

// headerSection: the headers of responses.
func (c *Config) headerSection() schema.Section {
	return schema.Section{Title: "Response headers", Check: c.checkHeaders, Settings: []schema.Setting{
		{Name: "cache-control-playlist", Ptr: &c.CacheControlPlaylist, Reload: true,
			Usage: "Cache-Control for playlists and manifests (.m3u8, .mpd)",
			Doc:   "Cache-Control of `.m3u8`, `.mpd`"},
		{Name: "cache-control-segment", Ptr: &c.CacheControlSegment, Reload: true,
			Usage: "Cache-Control for media segments (.ts, .m4s, .mp4, ...)",
			Doc:   "Cache-Control of segments (`.ts`, `.m4s`, `.mp4`, `.aac`, `.vtt`, ...)"},
		{Name: "cache-control-other", Ptr: &c.CacheControlOther, Reload: true,
			Usage: "Cache-Control for any other file",
			Doc:   "Cache-Control of any other file"},
		{Name: "cache-control-blocking-reload", Ptr: &c.CacheControlBlockingReload, Reload: true,
			Usage: "Cache-Control of a Low-Latency HLS playlist answered to a blocking reload or delta update (_HLS_msn, _HLS_part, _HLS_skip)",
			Doc:   "Cache-Control of an `.m3u8` answered to a blocking reload or a delta update (`_HLS_msn`, `_HLS_part`, `_HLS_skip`; docs/live.md); the CDN must key on the query. A blocking reload that times out is `503` with `no-store`"},
		{Name: "cache-control-notfound", Ptr: &c.CacheControlNotFound, Reload: true,
			Usage: "Cache-Control of 404 and 410 (empty omits it)",
			Doc:   "Cache-Control of 404 and 410 (empty omits it): short, so a live packager's next segment is not missing at the edge for long, but a flood of identical misses reaches the origin once per 10 s per edge"},
		{Name: "cache-control-notfound-live", Ptr: &c.CacheControlNotFoundLive, Reload: true,
			Usage: "Cache-Control of a 404 in a live directory (empty omits it)",
			Doc:   "Cache-Control of a 404 for a name in a live directory (one with a live playlist, or under `-live-prefix`; docs/live.md), in place of `-cache-control-notfound`: a CDN must not keep a part missing that the packager writes a moment later (empty omits it)"},
		{Name: "cache-control-denied", Ptr: &c.CacheControlDenied, Reload: true,
			Usage: "Cache-Control of 401 and 403",
			Doc:   "Cache-Control of 401 and 403 (they depend on a token a CDN's cache key may not hold: cookie, Authorization)"},
		{Name: "cache-control-range", Ptr: &c.CacheControlRange, Reload: true,
			Usage: "Cache-Control of 416",
			Doc:   "Cache-Control of 416 (it depends on the Range header)"},
		{Name: "cache-control-client-error", Ptr: &c.CacheControlClientError, Reload: true,
			Usage: "Cache-Control of any other 4xx (400, 405, 408, 412, 431)",
			Doc:   "Cache-Control of any other 4xx (400, 405, 408, 412, 431)"},
		{Name: "cache-control-server-error", Ptr: &c.CacheControlServerError, Reload: true,
			Usage: "Cache-Control of 5xx",
			Doc:   "Cache-Control of 5xx (503 when out of descriptors or cold readers, 500)"},
		{Name: "header", Ptr: (*headerRules)(&c.Headers), Reload: true,
			Usage: "operator response header `kind:Name: value`, kind one of playlist, segment, other, error, all (repeatable; in SEGORIGIN_HEADER one a line)",
			Doc:   "operator response header `kind:Name: value`, repeatable; kind `playlist`, `segment`, `other` (file responses, 304 included), `error` (4xx, 5xx) or `all`; names the server sets itself (framing, validators, `Cache-Control`, `Access-Control-*`, ...) are refused; the variable may hold several, one a line"},
		{Name: "mime", Ptr: (*typeRules)(&c.Types), Reload: true,
			Usage: "media type of an extension `.ext=type[:kind]`, kind playlist, segment or other (its Cache-Control); adds to or overrides the built-in table (repeatable; in SEGORIGIN_MIME one a line)",
			Doc:   "media type of an extension, `.ext=type[:kind]`, repeatable: `-mime .cmfv=video/mp4:segment`, `-mime '.sub=text/plain; charset=utf-8:other'`; `kind` (`playlist`, `segment` or `other`) picks the Cache-Control class above, and without it an extension keeps its built-in kind (`other` for a new one); a later rule for an extension wins; the variable may hold several, one a line"},
		{Name: "server-name", Ptr: &c.ServerName,
			Usage: "Server header value (empty omits it)",
			Doc:   "`Server` header value; empty omits it"},
	}}
}

// checkHeaders checks every -header and -mime rule.
func (c *Config) checkHeaders() error {
	var errs []error
	for _, r := range c.Headers {
		errs = append(errs, r.validate())
	}
	for _, r := range c.Types {
		errs = append(errs, r.validate())
	}
	return errors.Join(errs...)
}

// corsSection: cross-origin access.
func (c *Config) corsSection() schema.Section {
	return schema.Section{Title: "CORS", Check: c.validateCORS, Reload: true, Settings: []schema.Setting{
		{Name: "cors-origins", Ptr: &c.CORSOrigins,
			Usage: "comma-separated origins allowed cross-origin; * for any; empty for none",
			Doc:   "comma-separated allowed origins; `*` any; empty none. Allowed origins get `Access-Control-Allow-Origin`, `Access-Control-Expose-Headers` and `Timing-Allow-Origin` (players' Resource Timing bandwidth estimates) on every response, errors included; a list (not `*`) adds `Vary: Origin`"},
		{Name: "cors-allow-headers", Ptr: &c.CORSAllowHeaders,
			Usage: "comma-separated request headers a CORS preflight allows",
			Doc:   "request headers a preflight allows (`Access-Control-Allow-Headers`); the CMCD ones are what hls.js and dash.js send in CMCD header mode"},
		{Name: "cors-max-age", Ptr: &c.CORSMaxAge,
			Usage: "how long browsers may keep a preflight's answer (Access-Control-Max-Age)",
			Doc:   "`Access-Control-Max-Age` of preflights (Chromium caps it at 2 h)"},
		{Name: "cors-credentials", Ptr: &c.CORSCredentials,
			Usage: "send Access-Control-Allow-Credentials: true (cookies cross-origin); needs an explicit -cors-origins list, not *",
			Doc:   "`Access-Control-Allow-Credentials: true`, so pages can send the cookie token cross-origin; needs an explicit `-cors-origins` list (refused with `*`)"},
	}}
}

// cacheSection: the file cache, inlining and the body path.
func (c *Config) cacheSection() schema.Section {
	return schema.Section{Title: "File cache and body path", Check: c.checkCache, Settings: []schema.Setting{
		{Name: "cache-files", Ptr: &c.CacheFiles,
			Usage: "open files kept in the cache; 0 disables it",
			Doc:   "open files kept by the cache; 0 disables it. Keep it well under the descriptor limit (a start-up warning says when it is over half)"},
		{Name: "inline-max", Ptr: &c.InlineMax,
			Usage: "files of at most this many bytes are kept in memory with their cache entry and sent with the header in one send; 0 disables",
			Doc:   "files of at most this many bytes are read into memory once, with their cache entry, and a GET of them leaves in one send with its header; 0 disables"},
		{Name: "inline-budget", Ptr: &c.InlineBudget,
			Usage: "most bytes of inlined files held at once; a file past it is sent by sendfile",
			Doc:   "most bytes of inlined files held at once (64 MiB), with the gzip encodings kept beside them (`-gzip on`); a file past it is served by sendfile"},
		{Name: "negative-ttl", Ptr: &c.NegativeTTL,
			Usage: "how long a missing file is remembered (0: not at all)",
			Doc:   "how long a missing file is remembered; 0: not at all (every request for a missing name looks again)"},
		{Name: "negative-cache-bytes", Ptr: &c.NegativeCacheBytes,
			Usage: "memory budget of remembered missing names (name bytes plus 256 each; 0: none remembered)",
			Doc:   "memory budget of remembered missing names: each costs its length plus 256 bytes; the oldest go first, a name larger than the budget is not remembered (clients choose these names); 0: none remembered"},
		{Name: "max-ranges", Ptr: &c.MaxRanges,
			Usage: "most ranges answered in one request (after coalescing); more gets the whole file",
			Doc:   "most ranges after coalescing; more gets the whole file (200)"},
		{Name: "disable-sendfile", Ptr: &c.DisableSendfile,
			Usage: "send bodies over -inline-max by userspace copy even on plain TCP (diagnosis, comparisons)",
			Doc:   "force the userspace copy for files over `-inline-max` on plain TCP (diagnosis, comparisons)"},
	}}
}

// checkCache: counts and budgets are not negative, and a request may have
// a range.
func (c *Config) checkCache() error {
	var errs []error
	if c.MaxRanges < 1 {
		errs = append(errs, fmt.Errorf("max-ranges: %d, want >= 1", c.MaxRanges))
	}
	if c.CacheFiles < 0 {
		errs = append(errs, fmt.Errorf("cache-files: %d, want >= 0", c.CacheFiles))
	}
	if c.InlineMax < 0 || c.InlineBudget < 0 {
		errs = append(errs, fmt.Errorf("inline-max %d, inline-budget %d: want >= 0", c.InlineMax, c.InlineBudget))
	}
	errs = append(errs, notNegative(named{"negative-ttl", c.NegativeTTL}))
	if c.NegativeCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("negative-cache-bytes: %d, want >= 0 (0 remembers no missing names)", c.NegativeCacheBytes))
	}
	return errors.Join(errs...)
}

// gzipSection: compressed text answers.
func (c *Config) gzipSection() schema.Section {
	return schema.Section{Title: "Compression", Check: c.checkGzip, Reload: true, Settings: []schema.Setting{
		{Name: "gzip", Ptr: (*string)(&c.Gzip),
			Usage: "gzip text answers (-gzip-types) for clients that accept it: on (a precompressed name.gz, else compressed once per file version and kept with the cache entry), static (a name.gz only), off",
			Doc:   "gzip of text answers (playlists, manifests, subtitles: `-gzip-types`) for clients whose `Accept-Encoding` accepts it: `on` sends a precompressed `name.gz` beside the file when it is not older than the file (nginx's `gzip_static`), otherwise the file compressed by the server once per version of the file and kept with its cache entry (within `-inline-budget`); `static` only the `name.gz`; `off` none. Never for media, a Range request or a file still being written; every answer of such a type says `Vary: Accept-Encoding`, and a compressed one has its own `ETag` (`-gz` inside the quotes). See [gzip](migrating-from-nginx.md#gzip)"},
		{Name: "gzip-types", Ptr: &c.GzipTypes,
			Usage: "comma-separated media types (no parameters) answered gzip-compressed",
			Doc:   "media types, without parameters, answered compressed (nginx's `gzip_types`); `video/*`, `audio/*` (but `audio/mpegurl`) and `image/*` are refused"},
		{Name: "gzip-min-length", Ptr: &c.GzipMinLength,
			Usage: "files smaller than this many bytes are sent uncompressed",
			Doc:   "files smaller than this are sent as they are (nginx's `gzip_min_length`): gzip's framing eats what it saves on a few hundred bytes"},
		{Name: "gzip-max-bytes", Ptr: &c.GzipMaxBytes,
			Usage: "files larger than this many bytes are not compressed by the server (a name.gz is still sent)",
			Doc:   "the largest file the server compresses itself (a `name.gz` beside a larger one is still sent); bounds the memory and CPU of one compression"},
	}}
}

// checkGzip: a known mode, types that are not media, limits not negative.
func (c *Config) checkGzip() error {
	var errs []error
	switch c.Gzip {
	case GzipOff, GzipStatic, GzipOn:
	default:
		errs = append(errs, fmt.Errorf("gzip: %q, want on, static or off", c.Gzip))
	}
	if c.GzipMinLength < 0 || c.GzipMaxBytes < 0 {
		errs = append(errs, fmt.Errorf("gzip-min-length %d, gzip-max-bytes %d: want >= 0", c.GzipMinLength, c.GzipMaxBytes))
	}
	return errors.Join(append(errs, checkGzipTypes(c.GzipTypes))...)
}

// connSection: the engine, timeouts and connection limits.
func (c *Config) connSection() schema.Section {
	return schema.Section{Title: "Connections and limits", Check: c.checkConns, Settings: []schema.Setting{
		{Name: "read-timeout", Ptr: &c.ReadTimeout,
			Usage: "time to read one request's headers",
			Doc:   "time to read one request's headers"},
		{Name: "write-timeout", Ptr: &c.WriteTimeout,
			Usage: "time to write one response",
			Doc:   "time to write one response"},
		{Name: "idle-timeout", Ptr: &c.IdleTimeout,
			Usage: "keep-alive wait for the next request",
			Doc:   "keep-alive wait for the next request"},
		{Name: "engine", Ptr: (*string)(&c.Engine),
			Usage: "what serves plain HTTP: loop (event loops, Linux) or fasthttp (a goroutine per connection, as HTTPS is); both run the same HTTP/1 layer",
			Doc:   "what serves connections: `loop` (event loops: a few OS threads in epoll_wait serve every plain connection, and every HTTPS one after its handshake, with kTLS or crypto/tls; Linux) or `fasthttp` (a goroutine per connection, plain or HTTPS). Both run the same HTTP/1 layer (fasthttp's request parser): the answers are the same bytes"},
		{Name: "loops", Ptr: &c.Loops,
			Usage: "event loops (OS threads) of -engine loop; 0: one per GOMAXPROCS",
			Doc:   "event loops (OS threads) of `-engine loop`; 0: one per GOMAXPROCS"},
		{Name: "poller", Ptr: &c.Poller,
			Usage: "how -engine loop waits for sockets: epoll, uring (io_uring; no start where the kernel refuses it) or auto (uring, else epoll, logged once)",
			Doc:   "how the loops of `-engine loop` wait for their sockets: `epoll`, `uring` (io_uring: one `io_uring_enter` a loop iteration submits every change and reaps every readiness; the server does not start where the kernel refuses io_uring) or `auto` (io_uring, or epoll where it is refused: EPERM under a container's seccomp profile or `kernel.io_uring_disabled`, ENOSYS; logged once and counted in `segorigin_loop_poller_fallbacks_total`). See docs/benchmarks.md for what each costs"},
		{Name: "max-requests-per-conn", Ptr: &c.MaxRequestsPerConn,
			Usage: "close a connection after this many requests (0: no limit)",
			Doc:   "close a connection after N requests (0: no limit)"},
		{Name: "max-header-bytes", Ptr: &c.MaxHeaderBytes,
			Usage: "largest request line plus headers (431 beyond)",
			Doc:   "request line plus headers; 431 beyond"},
		{Name: "max-conns", Ptr: &c.MaxConns,
			Usage: "most concurrent connections (0: no limit)",
			Doc:   "most concurrent connections, enforced at accept (0: no limit)"},
		{Name: "max-conns-per-ip", Ptr: &c.MaxConnsPerIP,
			Usage: "most requests in progress at once per client address, as trusted proxies name it; 503 beyond (0: no limit)",
			Doc:   "most requests in progress at once per client address (0: no limit), as nginx's `limit_conn` over `$binary_remote_addr`: the address is the client's as trusted proxies name it (X-Forwarded-For, Forwarded, PROXY); a request over the limit is read and answered 503 with Retry-After, the connection kept"},
		{Name: "limit-rate", Ptr: &c.LimitRate, Reload: true,
			Usage: "pace each response to this many bytes a second after -limit-rate-after (0: no limit)",
			Doc:   "pace each response to this many bytes a second once its first `-limit-rate-after` bytes are sent (nginx's `limit_rate`; 0: no limit): for viewers served directly, never in front of a CDN; file bodies are paced by the transport's timers, 100 ms at a time, and a body from memory (a file up to `-inline-max`, a compressed playlist) leaves whole, its bytes counted; `-write-timeout` counts from each 100 ms step; a reload applies to responses that begin after it"},
		{Name: "limit-rate-after", Ptr: &c.LimitRateAfter, Reload: true,
			Usage: "bytes of each response sent at full speed before -limit-rate applies",
			Doc:   "bytes of each response (header included) sent at full speed before `-limit-rate` paces the rest (nginx's `limit_rate_after`): a player's first segment starts fast"},
	}}
}

// checkConns: an engine this system has, and limits that can hold a
// request.
func (c *Config) checkConns() error {
	var errs []error
	switch c.Engine {
	case EngineFastHTTP:
	case EngineLoop:
		if !loopAvailable {
			errs = append(errs, errors.New("engine: loop needs Linux (epoll); use -engine fasthttp"))
		}
	default:
		errs = append(errs, fmt.Errorf("engine: %q, want loop or fasthttp", c.Engine))
	}
	switch c.Poller {
	case "epoll", "uring", "auto":
	default:
		errs = append(errs, fmt.Errorf("poller: %q, want epoll, uring or auto", c.Poller))
	}
	if c.Loops < 0 || c.Loops > 1024 {
		errs = append(errs, fmt.Errorf("loops: %d, want 0..1024", c.Loops))
	}
	if c.MaxHeaderBytes < 1024 {
		errs = append(errs, fmt.Errorf("max-header-bytes: %d, want >= 1024", c.MaxHeaderBytes))
	}
	errs = append(errs, notNegative(
		named{"read-timeout", c.ReadTimeout}, named{"write-timeout", c.WriteTimeout}, named{"idle-timeout", c.IdleTimeout}))
	if c.MaxConns < 0 || c.MaxConnsPerIP < 0 || c.MaxRequestsPerConn < 0 {
		errs = append(errs, errors.New("max-conns, max-conns-per-ip, max-requests-per-conn: want >= 0"))
	}
	if c.LimitRate < 0 || c.LimitRateAfter < 0 {
		errs = append(errs, fmt.Errorf("limit-rate %d, limit-rate-after %d: want >= 0", c.LimitRate, c.LimitRateAfter))
	}
	return errors.Join(errs...)
}

// proxySection: who a request is from behind proxies; newClientIdentity
// checks these at New, where it parses them.
func (c *Config) proxySection() schema.Section {
	return schema.Section{Title: "Client address behind proxies", Settings: []schema.Setting{
		{Name: "trusted-proxies", Ptr: &c.TrustedProxies,
			Usage: "comma-separated CIDR prefixes (or addresses) of the proxies in front: only they may name the client, by -client-ip-header or a PROXY header",
			Doc:   "comma-separated CIDR prefixes or addresses of the proxies in front (CDN shield, load balancer); only their connections may name another client"},
		{Name: "client-ip-header", Ptr: &c.ClientIPHeader,
			Usage: "header trusted proxies name the client in: X-Forwarded-For, Forwarded (RFC 7239) or none",
			Doc:   "the header trusted proxies name the client in: `X-Forwarded-For`, `Forwarded` (RFC 7239) or `none`; only that one is read"},
		{Name: "proxy-protocol", Ptr: &c.ProxyProtocol,
			Usage: "PROXY protocol v1/v2 header from trusted proxies: off, optional, required (refused from any other peer)",
			Doc:   "PROXY protocol v1/v2 on every listener: `off`, `optional` (trusted proxies may send a header), `required` (they must); a header from any other peer closes the connection"},
	}}
}

// accessSection: nginx's allow/deny and valid_referers.
func (c *Config) accessSection() schema.Section {
	return schema.Section{Title: "Access by address and referer", Check: c.checkAccess, Reload: true, Settings: []schema.Setting{
		{Name: "access", Ptr: &c.Access,
			Usage: "nginx allow/deny and valid_referers `statements`, e.g. \"allow 10.0.0.0/8; deny all\" (first match wins; refused: 403); see also -access-file",
			Doc:   "nginx statements: `allow`/`deny` with an address, a CIDR prefix or `all` (tried in order against the client address, the first match deciding; none matching allows) and `valid_referers` (`none`, `blocked`, `server_names`, names, `*.example.com`, `www.example.*`, `~regex`: a Referer outside it is refused), e.g. `allow 10.0.0.0/8; deny all`. A refusal is 403 for every method, counted in `segorigin_access_refused_total`. Excludes `-access-file`"},
	}}
}

// coldSection: the cold readers and read-ahead.
func (c *Config) coldSection() schema.Section {
	return schema.Section{Title: "Cold storage and read-ahead", Check: c.checkCold, Settings: []schema.Setting{
		{Name: "cold-readers", Ptr: &c.ColdReaders,
			Usage: "goroutines that read bytes not in the page cache before they are sent, so sendfile never waits for storage (0: off, and with it read-ahead and the bound on opens; sendfile may block a thread)",
			Doc:   "goroutines that read bytes not in the page cache before they are sent; 0: off, and with it read-ahead and the bound on opens (a cold sendfile then blocks a thread; a warning at start says so)"},
		{Name: "cold-queue", Ptr: &c.ColdQueue,
			Usage: "requests that may wait for a cold reader; beyond it 503 with Retry-After",
			Doc:   "requests that may wait for a cold reader; beyond it 503 with `Retry-After` of 1-3 s"},
		{Name: "cold-deadline", Ptr: &c.ColdDeadline,
			Usage: "longest wait for a cold reader, a turn to open a file, or another request's open of it; past it 503 with Retry-After",
			Doc:   "longest wait for a cold reader, a turn to open a file, or another request's open of it; past it 503 with `Retry-After` of 1-3 s (mid-body: the connection closes)"},
		{Name: "readahead-readers", Ptr: &c.ReadAhead.Readers,
			Usage: "cold readers that may read ahead at once, fewer than -cold-readers (0: no read-ahead; not given: a quarter of -cold-readers, at most 8)",
			Doc:   "cold readers that may read ahead at once (0: no read-ahead; fewer than `-cold-readers`, so one is always left for waiting requests). Not given, it follows `-cold-readers`: a quarter of them, at most 8, one for 2 or 3, none for 0 or 1; given, it must fit (one message names both flags)",
			// Derived, so that -cold-readers alone never conflicts with it.
			Unset: func() { c.ReadAhead.Readers = ReadAheadReadersFor(c.ColdReaders) }},
		{Name: "readahead-queue", Ptr: &c.ReadAhead.Queue,
			Usage: "predictions waiting for a reader; more are dropped",
			Doc:   "predictions waiting for a reader; more are dropped (counted)"},
		{Name: "readahead-max-bytes", Ptr: &c.ReadAhead.MaxBytes,
			Usage: "most bytes one prediction reads ahead",
			Doc:   "most bytes one prediction reads ahead (8 MiB)"},
		{Name: "readahead-playlist", Ptr: &c.ReadAhead.Playlist,
			Usage: "read ahead the next segment of the HLS media playlist that lists the one served",
			Doc:   "read ahead the next segment of the HLS media playlist that lists the one served"},
		{Name: "readahead-byterange", Ptr: &c.ReadAhead.ByteRange,
			Usage: "read ahead the next EXT-X-BYTERANGE span",
			Doc:   "read ahead the next `EXT-X-BYTERANGE` span"},
		{Name: "readahead-template", Ptr: &c.ReadAhead.Template,
			Usage: "read ahead the next DASH SegmentTemplate number of a segment no playlist lists",
			Doc:   "read ahead the next DASH `SegmentTemplate` number of a segment no playlist lists"},
		{Name: "readahead-sidx", Ptr: &c.ReadAhead.Sidx,
			Usage: "read ahead the next sidx subsegment of an on-demand MP4",
			Doc:   "read ahead the next `sidx` subsegment of an on-demand MP4"},
		{Name: "readahead-cmcd", Ptr: &c.ReadAhead.CMCD,
			Usage: "read ahead what CMCD nor/nrr (query or CMCD-Request header) names",
			Doc:   "read ahead what CMCD `nor`/`nrr` names (query or `CMCD-Request` header)"},
	}}
}

// checkCold: a bounded pool, and read-ahead only on it, leaving a reader
// for waiting requests.
func (c *Config) checkCold() error {
	var errs []error
	if c.ColdReaders < 0 || c.ColdReaders > 1024 {
		errs = append(errs, fmt.Errorf("cold-readers: %d, want 0..1024", c.ColdReaders))
	}
	if c.ColdReaders > 0 && (c.ColdQueue < 0 || c.ColdDeadline < time.Millisecond) {
		errs = append(errs, fmt.Errorf("cold-queue %d, cold-deadline %v: want >= 0 and >= 1ms", c.ColdQueue, c.ColdDeadline))
	}
	ra := c.ReadAhead
	switch {
	case ra.Readers <= 0:
	case c.ColdReaders == 0:
		// Read-ahead runs on the cold readers: it cannot be on
		// without them.
		errs = append(errs, fmt.Errorf("readahead-readers: %d with cold-readers 0: read-ahead runs on the cold readers; want readahead-readers 0, or cold-readers > %d", ra.Readers, ra.Readers))
	case ra.Readers >= c.ColdReaders:
		// At least one reader must be left for waiting requests.
		errs = append(errs, fmt.Errorf("readahead-readers: %d, want < cold-readers (%d): one reader at least stays for waiting requests", ra.Readers, c.ColdReaders))
	case ra.Queue < 1 || ra.MaxBytes < 1:
		errs = append(errs, fmt.Errorf("readahead-queue %d, readahead-max-bytes %d: want >= 1", ra.Queue, ra.MaxBytes))
	}
	return errors.Join(errs...)
}

// authSection: signed-URL authorization.
func (c *Config) authSection() schema.Section {
	return schema.Section{Title: "Signed URLs", Check: c.checkAuth, Reload: true, Settings: []schema.Setting{
		{Name: "auth-path-prefix", Ptr: &c.Auth.PathPrefix,
			Usage: "path carrier: /<prefix>/<token>/<path>; empty disables",
			Doc:   "path carrier `/t/<token>/...`; empty disables"},
		{Name: "auth-query-param", Ptr: &c.Auth.QueryParam,
			Usage: "query carrier parameter; empty disables",
			Doc:   "query carrier; empty disables"},
		{Name: "auth-cookie", Ptr: &c.Auth.Cookie,
			Usage: "cookie carrier name; empty disables",
			Doc:   "cookie carrier; empty disables"},
		{Name: "auth-bearer", Ptr: &c.Auth.Bearer,
			Usage: "accept Authorization: Bearer <token>",
			Doc:   "accept `Authorization: Bearer <token>`"},
		{Name: "auth-query-rewrite", Ptr: &c.Auth.QueryRewrite,
			Usage: "write a query token (or secure_link md5=&expires=) into every URI of the playlists and manifests it opens, so relative segment URLs keep it",
			Doc:   "write a query token (or secure_link `md5=&expires=`) into every URI of the playlists and manifests it opens, so relative segment URLs keep it: [query tokens](signed-urls.md#query-tokens-playlists-rewritten)"},
		{Name: "auth-query-rewrite-max-bytes", Ptr: &c.Auth.QueryRewriteMaxBytes,
			Usage: "playlists and manifests larger than this are served unrewritten (counted)",
			Doc:   "playlists and manifests larger than this (1 MiB) are served unrewritten, counted in `segorigin_query_rewrite_total{outcome=\"too_large\"}`"},
		{Name: "auth-query-rewrite-hosts", Ptr: &c.Auth.QueryRewriteHosts,
			Usage: "comma-separated hosts (host or host:port) whose absolute URIs in a playlist get the token: this origin's own names, a CDN's; empty: only relative URIs (the request's Host never counts)",
			Doc:   "comma-separated hosts (`host` or `host:port`, compared without case; a host without a port also matches its scheme's default port) whose absolute and scheme-relative URIs in a playlist get the token: this origin's own names, a CDN hostname for the same paths. Empty: only relative URIs get it. The request's `Host` never counts (a client chooses it). Other hosts' URIs are left alone; an entry that is no `host[:port]` is refused at start"},
		{Name: "auth-rewrite-scope", Ptr: &c.Auth.RewriteScope,
			Usage: "directory levels above a rewritten playlist's or manifest's own that its scope credential (for DASH templates, URIs its token cannot cover) opens: 0 its directory",
			Doc:   "how many directory levels above a rewritten playlist's or manifest's own directory its scope credential opens (0: that directory; 1: its parent, for `/vod/title42/{hls,dash}/`); the credential is handed out where the player's own cannot serve, such as a DASH `SegmentTemplate` under secure_link ([scope credentials](signed-urls.md#scope-credentials)); 0 to 8"},
		{Name: "auth-public", Ptr: &c.Auth.Public,
			Usage: "comma-separated path prefixes served without a token (whole segments: /public covers /public/..., not /publicity.txt)",
			Doc:   "comma-separated path prefixes served without a token; they match whole segments (`/public` covers `/public/...`, not `/publicity.txt`); needs `-auth-key-file` or `-auth-securelink-secret-file` (refused at start without)"},
		{Name: "auth-missing-status", Ptr: &c.Auth.MissingStatus,
			Usage: "status for a request with no token: 401 or 403",
			Doc:   "status when no token is given: 401 or 403"},
		{Name: "auth-skew", Ptr: &c.Auth.Skew,
			Usage: "clock skew allowed on token times (0: none)",
			Doc:   "clock skew allowed on token times; 0: none"},
		{Name: "auth-cache-lifetime", Ptr: &c.Auth.CacheLifetime,
			Usage: "token: cap a token-authorised response's Cache-Control at the token's remaining life; configured: keep the kind's Cache-Control (a CDN that checks tokens itself)",
			Doc:   "`token`: a response a token authorised gets Cache-Control capped at the token's remaining life; `configured`: the kind's Cache-Control as configured, for a CDN that checks tokens itself or caches without them ([signed responses in shared caches](signed-urls.md#signed-responses-in-shared-caches)); a token in a cookie or `Authorization` is capped and `private` either way"},
		{Name: "auth-securelink-expression", Ptr: &c.Auth.SecureLinkExpression,
			Usage: "secure_link_md5 expression: $secure_link_expires, $uri, $remote_addr, $http_<name>, $arg_<name>, $1..$9 (of -auth-securelink-location), $secret",
			Doc:   "its `secure_link_md5` expression: `$secure_link_expires` (or `$expires`), `$uri`, `$remote_addr`, `$http_<name>`, `$arg_<name>`, `$1`..`$9` (captures of `-auth-securelink-location`) and `$secret` for the secret ([secure_link](signed-urls.md#nginx-secure_link))"},
		{Name: "auth-securelink-args", Ptr: &c.Auth.SecureLinkArgs,
			Usage: "secure_link's hash and expiry arguments (md5,expires or $arg_st,$arg_e); the hash's alone: links without expiry",
			Doc:   "secure_link's hash and expiry arguments, as its `secure_link` directive names them (`md5,expires` or `$arg_st,$arg_e`); the hash's alone (`md5`): links without expiry"},
		{Name: "auth-securelink-location", Ptr: &c.Auth.SecureLinkLocation,
			Usage: "regular expression (RE2) secure_link paths must match; its captures are $1..$9 in the expression (nginx's location ~)",
			Doc:   "regular expression (Go's RE2) that secure_link paths must match (others: 403), whose captures are `$1`..`$9` in the expression: nginx's `location ~ regex`; empty: none"},
		{Name: "auth-securelink-expired-status", Ptr: &c.Auth.SecureLinkExpiredStatus,
			Usage: "status for an expired secure_link: 403 or 410",
			Doc:   "status for an authentic but expired secure_link: 403, or 410 as nginx's `if ($secure_link = \"0\") { return 410; }`"},
	}}
}

// checkAuth: no negative skew, and public paths only where others need a
// token.
func (c *Config) checkAuth() error {
	var errs []error
	if c.Auth.Skew < 0 {
		errs = append(errs, fmt.Errorf("auth-skew: %v, want >= 0 (0 allows no skew)", c.Auth.Skew))
	}
	if err := c.Auth.checkTokens(); err != nil {
		errs = append(errs, err)
	}
	if len(c.Auth.Public) > 0 && !c.Auth.enabled() {
		errs = append(errs, errors.New("-auth-public needs -auth-key-file or -auth-securelink-secret-file: without them no path needs a token, so there is nothing to exempt"))
	}
	return errors.Join(errs...)
}

// logSection: the access log.
func (c *Config) logSection() schema.Section {
	return schema.Section{Title: "Logs", Check: c.checkLog, Settings: []schema.Setting{
		{Name: "access-log-sample", Ptr: &c.AccessLogSample,
			Usage: "log one response in N (1: all)",
			Doc:   "log one response in N (1: all; 0 is refused)"},
	}}
}

// checkLog: a sample logs one response in N, N >= 1.
func (c *Config) checkLog() error {
	if c.AccessLogSample < 1 {
		return fmt.Errorf("access-log-sample: %d, want >= 1 (log one response in N; 1 logs all)", c.AccessLogSample)
	}
	return nil
}

// named is a duration with the flag that sets it, for notNegative.
type named struct {
	flag string
	d    time.Duration
}

// notNegative refuses each negative duration, naming its flag.
func notNegative(ds ...named) error {
	var errs []error
	for _, n := range ds {
		if n.d < 0 {
			errs = append(errs, fmt.Errorf("%s: %v, want >= 0", n.flag, n.d))
		}
	}
	return errors.Join(errs...)
}

// headerRules is the repeatable -header flag: one rule a flag, one a line
// of SEGORIGIN_HEADER.
type headerRules []HeaderRule

var _ flag.Value = (*headerRules)(nil)

func (h *headerRules) String() string {
	if h == nil {
		return ""
	}
	var parts []string
	for _, r := range *h {
		parts = append(parts, r.Kind+":"+r.Name+": "+r.Value)
	}
	return strings.Join(parts, "\n")
}

func (h *headerRules) Set(v string) error {
	return appendLines((*[]HeaderRule)(h), v, ParseHeaderRule)
}

// typeRules is the repeatable -mime flag: one rule a flag, one a line of
// SEGORIGIN_MIME.
type typeRules []MediaTypeRule

var _ flag.Value = (*typeRules)(nil)

func (r *typeRules) String() string {
	if r == nil {
		return ""
	}
	var parts []string
	for _, t := range *r {
		s := "." + t.Ext + "=" + t.ContentType
		if t.Kind != "" {
			s += ":" + t.Kind
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "\n")
}

func (r *typeRules) Set(v string) error {
	return appendLines((*[]MediaTypeRule)(r), v, ParseMediaTypeRule)
}

// appendLines adds one rule per line of v to dst, parsed by parse: a flag
// gives one, an environment variable may give several.
func appendLines[T any](dst *[]T, v string, parse func(string) (T, error)) error {
	for line := range strings.SplitSeq(v, "\n") {
		if line = strings.TrimSpace(line); line == "" {
			continue
		}
		r, err := parse(line)
		if err != nil {
			return err
		}
		*dst = append(*dst, r)
	}
	return nil
}
