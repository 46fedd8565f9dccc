package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"segorigin/origin"
	"segorigin/origin/accesslog"
	"segorigin/origin/token"
)

// options is what the command line (and SEGORIGIN_* variables) say.
type options struct {
	cfg           origin.Config
	listen        string // "" : no plain HTTP listener
	tlsListen     string
	drain         time.Duration
	shutdownDelay time.Duration
	logFormat     string
	adminListen   string
	accessLog     string
	logLevel      string
	version       bool

	authKeyFile    string
	secureLinkFile string
}

// loadAuth reads the key file or secure_link secret named by the flags.
func (o *options) loadAuth() error {
	if o.authKeyFile != "" && o.secureLinkFile != "" {
		return errors.New("-auth-key-file and -auth-securelink-secret-file exclude each other")
	}
	if o.authKeyFile != "" {
		f, err := os.Open(o.authKeyFile)
		if err != nil {
			return fmt.Errorf("-auth-key-file: %w", err)
		}
		defer f.Close()
		if o.cfg.Auth.Keys, err = token.ParseKeyFile(f); err != nil {
			return fmt.Errorf("-auth-key-file %s: %w", o.authKeyFile, err)
		}
	}
	if o.secureLinkFile != "" {
		b, err := os.ReadFile(o.secureLinkFile)
		if err != nil {
			return fmt.Errorf("-auth-securelink-secret-file: %w", err)
		}
		if o.cfg.Auth.SecureLinkSecret = strings.TrimSpace(string(b)); o.cfg.Auth.SecureLinkSecret == "" {
			return fmt.Errorf("-auth-securelink-secret-file %s: empty", o.secureLinkFile)
		}
	}
	return nil
}

// envPrefix starts the name of every variable that sets a flag.
const envPrefix = "SEGORIGIN_"

// parseFlags parses args; a flag not given on the command line takes its
// value from SEGORIGIN_<NAME> (upper case, '-' as '_') when environ has it.
// -h prints the usage on stdout and returns flag.ErrHelp.
func parseFlags(args []string, stdout io.Writer, environ []string) (*options, error) {
	o := &options{cfg: origin.DefaultConfig()}
	c := &o.cfg
	fs := flag.NewFlagSet("segorigin", flag.ContinueOnError)
	// The flag package prints the whole usage before any parse error;
	// errors are returned short instead, and -h prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var cors, corsHeaders, authPublic, trusted, rewriteHosts string
	fs.StringVar(&o.listen, "listen", "127.0.0.1:8080", "plain HTTP listen `address` (port 0 picks a free port; empty: none, HTTPS only)")
	fs.StringVar(&o.tlsListen, "tls-listen", "", "HTTPS listen `address` beside -listen (port 0 picks a free port); needs -tls-cert and -tls-key, or -tls-dev")
	fs.StringVar(&c.TLS.CertFile, "tls-cert", "", "PEM certificate chain `file` for -tls-listen (reloaded when it changes and on SIGHUP)")
	fs.StringVar(&c.TLS.KeyFile, "tls-key", "", "PEM private key `file` for -tls-listen")
	fs.BoolVar(&c.TLS.Dev, "tls-dev", false, "serve -tls-listen with a self-signed certificate for localhost made at start (development only)")
	ktlsMode := string(c.TLS.KTLS)
	fs.StringVar(&ktlsMode, "ktls", ktlsMode, "kernel TLS offload for HTTPS bodies: auto (when the kernel has it), off, always (attempt even if the start-up probe failed)")
	fs.StringVar(&c.Root, "root", c.Root, "media root `directory`")
	fs.BoolVar(&c.FollowSymlinks, "follow-symlinks", false, "let symlinks under the root point outside it")
	fs.BoolVar(&c.ServeDotfiles, "serve-dotfiles", false, "serve paths with a segment starting with '.' (.well-known/...); otherwise 404")
	fs.StringVar(&cors, "cors-origins", strings.Join(c.CORSOrigins, ","), "comma-separated origins allowed cross-origin; * for any; empty for none")
	fs.StringVar(&corsHeaders, "cors-allow-headers", strings.Join(c.CORSAllowHeaders, ","), "comma-separated request headers a CORS preflight allows")
	fs.DurationVar(&c.CORSMaxAge, "cors-max-age", c.CORSMaxAge, "how long browsers may keep a preflight's answer (Access-Control-Max-Age)")
	fs.BoolVar(&c.CORSCredentials, "cors-credentials", false, "send Access-Control-Allow-Credentials: true (cookies cross-origin); needs an explicit -cors-origins list, not *")
	fs.StringVar(&c.CacheControlPlaylist, "cache-control-playlist", c.CacheControlPlaylist, "Cache-Control for playlists and manifests (.m3u8, .mpd)")
	fs.StringVar(&c.CacheControlSegment, "cache-control-segment", c.CacheControlSegment, "Cache-Control for media segments (.ts, .m4s, .mp4, ...)")
	fs.StringVar(&c.CacheControlOther, "cache-control-other", c.CacheControlOther, "Cache-Control for any other file")
	fs.StringVar(&c.CacheControlNotFound, "cache-control-notfound", c.CacheControlNotFound, "Cache-Control of 404 and 410 (empty omits it)")
	fs.StringVar(&c.CacheControlDenied, "cache-control-denied", c.CacheControlDenied, "Cache-Control of 401 and 403")
	fs.StringVar(&c.CacheControlRange, "cache-control-range", c.CacheControlRange, "Cache-Control of 416")
	fs.StringVar(&c.CacheControlClientError, "cache-control-client-error", c.CacheControlClientError, "Cache-Control of any other 4xx (400, 405, 408, 412, 431)")
	fs.StringVar(&c.CacheControlServerError, "cache-control-server-error", c.CacheControlServerError, "Cache-Control of 5xx")
	fs.Var((*headerRules)(&c.Headers), "header", "operator response header `kind:Name: value`, kind one of playlist, segment, other, error, all (repeatable; in SEGORIGIN_HEADER one a line)")
	fs.Var((*typeRules)(&c.Types), "mime", "media type of an extension `.ext=type[:kind]`, kind playlist, segment or other (its Cache-Control); adds to or overrides the built-in table (repeatable; in SEGORIGIN_MIME one a line)")
	fs.IntVar(&c.MaxRanges, "max-ranges", c.MaxRanges, "most ranges answered in one request (after coalescing); more gets the whole file")
	fs.IntVar(&c.CacheFiles, "cache-files", c.CacheFiles, "open files kept in the cache; 0 disables it")
	fs.Int64Var(&c.InlineMax, "inline-max", c.InlineMax, "files of at most this many bytes are kept in memory with their cache entry and sent with the header in one send; 0 disables")
	fs.Int64Var(&c.InlineBudget, "inline-budget", c.InlineBudget, "most bytes of inlined files held at once; a file past it is sent by sendfile")
	fs.DurationVar(&c.NegativeTTL, "negative-ttl", c.NegativeTTL, "how long a missing file is remembered (0: not at all)")
	fs.Int64Var(&c.NegativeCacheBytes, "negative-cache-bytes", c.NegativeCacheBytes, "memory budget of remembered missing names (name bytes plus 256 each; 0: none remembered)")
	fs.BoolVar(&c.Watch, "watch", c.Watch, "invalidate the file cache on file system events (fsnotify)")
	fs.DurationVar(&c.RevalidateEvery, "revalidate-every", c.RevalidateEvery, "stat cached files this often when -watch=false or the watcher lost events (> 0)")
	fs.DurationVar(&c.Settle, "settle", c.Settle, "a file whose mtime or ctime (or a write the watcher saw) is less than this old is still being written: not served as complete (0: only the watcher's events); where the kernel can tell, one no process has open for writing is complete at once")
	inProgress := string(c.InProgress)
	fs.StringVar(&inProgress, "in-progress", inProgress, "answer for a file still being written: 503 (Retry-After, Cache-Control: no-store) or uncached (its bytes so far, Cache-Control: no-store)")
	etagMode := string(c.ETag)
	fs.StringVar(&etagMode, "etag", etagMode, "strong validators from: size-mtime, or content (a hash of the bytes, the same on every copy whatever its mtime; computed once per file version on the cold readers and kept in the user.segorigin.etag extended attribute)")
	fs.DurationVar(&c.RootCheckEvery, "root-check-every", c.RootCheckEvery, "check this often that the media root is still there and readable (logged, counted, /readyz 503 when not); 0: on /readyz probes only")
	fs.StringVar((*string)(&c.Engine), "engine", string(c.Engine), "what serves plain HTTP: loop (event loops, Linux) or fasthttp (a goroutine per connection); HTTPS is always fasthttp")
	fs.IntVar(&c.Loops, "loops", c.Loops, "event loops (OS threads) of -engine loop; 0: one per GOMAXPROCS")
	fs.DurationVar(&c.ReadTimeout, "read-timeout", c.ReadTimeout, "time to read one request's headers")
	fs.DurationVar(&c.WriteTimeout, "write-timeout", c.WriteTimeout, "time to write one response")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "keep-alive wait for the next request")
	fs.IntVar(&c.MaxRequestsPerConn, "max-requests-per-conn", c.MaxRequestsPerConn, "close a connection after this many requests (0: no limit)")
	fs.IntVar(&c.MaxHeaderBytes, "max-header-bytes", c.MaxHeaderBytes, "largest request line plus headers (431 beyond)")
	fs.IntVar(&c.MaxConns, "max-conns", c.MaxConns, "most concurrent connections (0: no limit)")
	fs.IntVar(&c.MaxConnsPerIP, "max-conns-per-ip", c.MaxConnsPerIP, "most concurrent connections per client IP (0: no limit)")
	fs.StringVar(&trusted, "trusted-proxies", "", "comma-separated CIDR prefixes (or addresses) of the proxies in front: only they may name the client, by -client-ip-header or a PROXY header")
	fs.StringVar(&c.ClientIPHeader, "client-ip-header", c.ClientIPHeader, "header trusted proxies name the client in: X-Forwarded-For, Forwarded (RFC 7239) or none")
	fs.StringVar(&c.ProxyProtocol, "proxy-protocol", c.ProxyProtocol, "PROXY protocol v1/v2 header from trusted proxies: off, optional, required (refused from any other peer)")
	fs.IntVar(&c.ColdReaders, "cold-readers", c.ColdReaders, "goroutines that read bytes not in the page cache before they are sent, so sendfile never waits for storage (0: off, and with it read-ahead and the bound on opens; sendfile may block a thread)")
	fs.IntVar(&c.ColdQueue, "cold-queue", c.ColdQueue, "requests that may wait for a cold reader; beyond it 503 with Retry-After")
	fs.DurationVar(&c.ColdDeadline, "cold-deadline", c.ColdDeadline, "longest wait for a cold reader, a turn to open a file, or another request's open of it; past it 503 with Retry-After")
	ra := &c.ReadAhead
	fs.IntVar(&ra.Readers, "readahead-readers", ra.Readers, "cold readers that may read ahead at once, fewer than -cold-readers (0: no read-ahead; not given: a quarter of -cold-readers, at most 8)")
	fs.IntVar(&ra.Queue, "readahead-queue", ra.Queue, "predictions waiting for a reader; more are dropped")
	fs.Int64Var(&ra.MaxBytes, "readahead-max-bytes", ra.MaxBytes, "most bytes one prediction reads ahead")
	fs.BoolVar(&ra.Playlist, "readahead-playlist", ra.Playlist, "read ahead the next segment of the HLS media playlist that lists the one served")
	fs.BoolVar(&ra.ByteRange, "readahead-byterange", ra.ByteRange, "read ahead the next EXT-X-BYTERANGE span")
	fs.BoolVar(&ra.Template, "readahead-template", ra.Template, "read ahead the next DASH SegmentTemplate number of a segment no playlist lists")
	fs.BoolVar(&ra.Sidx, "readahead-sidx", ra.Sidx, "read ahead the next sidx subsegment of an on-demand MP4")
	fs.BoolVar(&ra.CMCD, "readahead-cmcd", ra.CMCD, "read ahead what CMCD nor/nrr (query or CMCD-Request header) names")
	fs.BoolVar(&c.DisableSendfile, "disable-sendfile", false, "send bodies over -inline-max by userspace copy even on plain TCP (diagnosis, comparisons)")
	fs.StringVar(&c.ServerName, "server-name", c.ServerName, "Server header value (empty omits it)")
	fs.StringVar(&o.authKeyFile, "auth-key-file", "", "require signed tokens, verified with the keys in this `file` (lines: <key-id> <secret hex>)")
	fs.StringVar(&c.Auth.PathPrefix, "auth-path-prefix", c.Auth.PathPrefix, "path carrier: /<prefix>/<token>/<path>; empty disables")
	fs.StringVar(&c.Auth.QueryParam, "auth-query-param", c.Auth.QueryParam, "query carrier parameter; empty disables")
	fs.StringVar(&c.Auth.Cookie, "auth-cookie", c.Auth.Cookie, "cookie carrier name; empty disables")
	fs.BoolVar(&c.Auth.Bearer, "auth-bearer", c.Auth.Bearer, "accept Authorization: Bearer <token>")
	fs.BoolVar(&c.Auth.QueryRewrite, "auth-query-rewrite", c.Auth.QueryRewrite, "write a query token (or secure_link md5=&expires=) into every URI of the playlists and manifests it opens, so relative segment URLs keep it")
	fs.Int64Var(&c.Auth.QueryRewriteMaxBytes, "auth-query-rewrite-max-bytes", c.Auth.QueryRewriteMaxBytes, "playlists and manifests larger than this are served unrewritten (counted)")
	fs.StringVar(&rewriteHosts, "auth-query-rewrite-hosts", "", "comma-separated other hosts (host or host:port) whose URIs in a playlist get the token too; other hosts' are left alone")
	fs.StringVar(&authPublic, "auth-public", "", "comma-separated path prefixes served without a token (whole segments: /public covers /public/..., not /publicity.txt)")
	fs.IntVar(&c.Auth.MissingStatus, "auth-missing-status", c.Auth.MissingStatus, "status for a request with no token: 401 or 403")
	fs.DurationVar(&c.Auth.Skew, "auth-skew", c.Auth.Skew, "clock skew allowed on token times (0: none)")
	fs.StringVar(&o.secureLinkFile, "auth-securelink-secret-file", "", "use nginx secure_link tokens (?md5=&expires=) with the secret in this `file` instead")
	fs.StringVar(&c.Auth.SecureLinkExpression, "auth-securelink-expression", c.Auth.SecureLinkExpression, "secure_link_md5 expression ($expires, $uri, $remote_addr, $secret)")
	fs.DurationVar(&o.shutdownDelay, "shutdown-delay", 0, "on SIGTERM or SIGINT, keep serving this long with /readyz answering 503 (time for a load balancer to stop sending), then drain")
	fs.DurationVar(&o.drain, "drain-timeout", 30*time.Second, "after the shutdown delay, how long responses in flight may take to finish once the listeners are closed")
	fs.StringVar(&o.adminListen, "admin-listen", "", "admin `address` for /metrics, /healthz, /readyz and, with -admin-pprof, /debug/pprof (off the public port; empty: none)")
	fs.BoolVar(&c.AdminPprof, "admin-pprof", false, "serve /debug/pprof/ on -admin-listen (its /cmdline shows the full command line)")
	fs.StringVar(&o.accessLog, "access-log", "", "access log: empty off, - for standard output, or a file `path` (reopened on SIGUSR1 and SIGHUP)")
	accessFormat := "combined"
	fs.StringVar(&accessFormat, "access-log-format", accessFormat, "access log format: combined (nginx/Apache, for GoAccess and log tools) or json (one object a line); independent of -log-format")
	fs.IntVar(&c.AccessLogSample, "access-log-sample", c.AccessLogSample, "log one response in N (1: all)")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&o.version, "version", false, "print the version, Go version and commit, and exit")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printUsage(stdout, fs)
			return nil, err
		}
		return nil, fmt.Errorf("%w (segorigin -h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q (flags only; segorigin -h lists them)", fs.Args())
	}
	if err := applyEnv(fs, environ); err != nil {
		return nil, err
	}
	given := map[string]bool{} // set by the command line or SEGORIGIN_*
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if !given["readahead-readers"] {
		// Derived, so that -cold-readers alone never conflicts with it.
		ra.Readers = origin.ReadAheadReadersFor(c.ColdReaders)
	}
	if o.version {
		return o, nil
	}
	if o.listen == "" && o.tlsListen == "" {
		return nil, errors.New("no listener: -listen is empty and -tls-listen is not set")
	}
	if o.shutdownDelay < 0 || o.drain < 0 {
		return nil, fmt.Errorf("-shutdown-delay %v, -drain-timeout %v: want durations >= 0", o.shutdownDelay, o.drain)
	}
	c.TLS.KTLS = origin.KTLSMode(ktlsMode)
	c.InProgress = origin.InProgressMode(inProgress)
	c.ETag = origin.ETagMode(etagMode)
	var err error
	if c.AccessLogFormat, err = accesslog.ParseFormat(accessFormat); err != nil {
		return nil, fmt.Errorf("-access-log-format: %w", err)
	}
	hasCert := c.TLS.Dev || c.TLS.CertFile != "" || c.TLS.KeyFile != ""
	if o.tlsListen != "" && !hasCert {
		return nil, errors.New("-tls-listen needs -tls-cert and -tls-key, or -tls-dev")
	}
	if o.tlsListen == "" && hasCert {
		return nil, errors.New("-tls-cert, -tls-key and -tls-dev need -tls-listen")
	}
	c.CORSOrigins = splitList(cors)
	c.CORSAllowHeaders = splitList(corsHeaders)
	c.Auth.Public = splitList(authPublic)
	if len(c.Auth.Public) > 0 && o.authKeyFile == "" && o.secureLinkFile == "" {
		return nil, errors.New("-auth-public needs -auth-key-file or -auth-securelink-secret-file: without them no path needs a token, so there is nothing to exempt")
	}
	c.Auth.QueryRewriteHosts = splitList(rewriteHosts)
	c.TrustedProxies = splitList(trusted)
	if err := o.loadAuth(); err != nil {
		return nil, err
	}
	return o, nil
}

// printUsage is -h: both commands, the environment, every flag.
func printUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage:
  segorigin [flags]         serve the media root over HTTP/1.1 (and HTTPS)
  segorigin sign [flags]    mint a signed-URL token (segorigin sign -h)
  segorigin etag DIR        store the content ETag of every file under DIR (for -etag content)

Every flag may also be set by an environment variable: SEGORIGIN_<FLAG>,
upper case with '-' as '_' (SEGORIGIN_LISTEN=0.0.0.0:80,
SEGORIGIN_READ_TIMEOUT=10s). The command line wins. A SEGORIGIN_* variable
that names no flag is an error.

Signals: SIGTERM or SIGINT: /readyz answers 503, serving goes on for
-shutdown-delay, then the listeners close and responses in flight get
-drain-timeout to finish (a second signal cuts the delay short). SIGHUP
reloads the TLS certificate and the auth keys.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// applyEnv sets every flag not given on the command line from its
// SEGORIGIN_* variable in environ ("NAME=value" entries), and refuses a
// SEGORIGIN_* variable that names no flag: a typo in a unit's environment
// file would otherwise leave a default in force without a word.
func applyEnv(fs *flag.FlagSet, environ []string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	byEnv := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byEnv[envName(f.Name)] = f })
	var errs []error
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, envPrefix) {
			continue
		}
		f, ok := byEnv[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: no such flag (SEGORIGIN_<FLAG> sets -<flag>; segorigin -h lists them)", name))
		case given[f.Name]:
		default:
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want %s", name, v, expects(f)))
			}
		}
	}
	return errors.Join(errs...)
}

// envName is the variable that sets flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// expects says what a flag's value must look like, for an error message.
func expects(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value for -" + f.Name
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 10s, 1m30s or 500ms"
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "an integer"
	}
	return "a valid value for -" + f.Name
}

// headerRules is the repeatable -header flag.
type headerRules []origin.HeaderRule

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
	return appendLines((*[]origin.HeaderRule)(h), v, origin.ParseHeaderRule)
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

// typeRules is the repeatable -mime flag.
type typeRules []origin.MediaTypeRule

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
	return appendLines((*[]origin.MediaTypeRule)(r), v, origin.ParseMediaTypeRule)
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
