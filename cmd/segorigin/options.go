package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"segorigin/internal/schema"
	"segorigin/origin"
	"segorigin/origin/access"
	"segorigin/origin/accesslog"
	"segorigin/origin/token"
)

// options is what the command line (and SEGORIGIN_* variables) say: the
// server's Config, and the command's own settings beside it.
type options struct {
	cfg             origin.Config
	listen          string // "" : no plain HTTP listener
	tlsListen       string
	drain           time.Duration
	shutdownDelay   time.Duration
	logFormat       string
	adminListen     string
	accessLog       string
	accessLogFormat string // parsed into cfg.AccessLogFormat
	accessLogBuffer accesslog.Buffer
	logLevel        string
	version         bool

	authKeyFile    string
	secureLinkFile string
	accessFile     string // read into cfg.Access at start and on SIGHUP
	configFile     string // read by parseFlags (withConfigFile) at start and on SIGHUP
}

// defaultOptions holds the defaults of every flag: the Config's, and the
// command's own.
func defaultOptions() *options {
	return &options{
		cfg:             origin.DefaultConfig(),
		listen:          "127.0.0.1:8080",
		drain:           30 * time.Second,
		logFormat:       "text",
		accessLogFormat: "combined",
		accessLogBuffer: accesslog.Buffer{Flush: time.Second},
		logLevel:        "info",
	}
}

// sections declares the command's own settings, the ones origin.Config
// does not hold, with the rules across them; they share the titles of
// Config's sections where they belong with them.
func (o *options) sections() []schema.Section {
	return []schema.Section{o.listenSection(), o.lifecycleSection(), o.logSection(), o.authSection(), o.accessSection()}
}

// allSections is every setting of the command line: the command's own,
// then Config's.
func (o *options) allSections() []schema.Section {
	return append(o.sections(), o.cfg.Sections()...)
}

// listenSection: the listeners' addresses.
func (o *options) listenSection() schema.Section {
	return schema.Section{Title: "Listeners and TLS", Check: o.checkListeners, Settings: []schema.Setting{
		{Name: "listen", Ptr: &o.listen,
			Usage: "plain HTTP listen `address` (port 0 picks a free port; empty: none, HTTPS only)",
			Doc:   "plain HTTP address; port 0 picks a free one (logged); empty: no plain listener (then `-tls-listen` is required)"},
		{Name: "tls-listen", Ptr: &o.tlsListen,
			Usage: "HTTPS listen `address` beside -listen (port 0 picks a free port); needs -tls-cert and -tls-key, or -tls-dev",
			Doc:   "HTTPS address beside `-listen`; needs `-tls-cert` and `-tls-key`, or `-tls-dev`"},
		{Name: "admin-listen", Ptr: &o.adminListen,
			Usage: "admin `address` for /metrics, /healthz, /readyz and, with -admin-pprof, /debug/pprof (off the public port; empty: none)",
			Doc:   "admin address: `/metrics`, `/healthz`, `/readyz` (and `/debug/pprof/` with `-admin-pprof`); keep it off the public network; empty: none"},
	}}
}

// checkListeners: something to serve on, and a certificate exactly where
// HTTPS is served.
func (o *options) checkListeners() error {
	if o.listen == "" && o.tlsListen == "" {
		return errors.New("no listener: -listen is empty and -tls-listen is not set")
	}
	hasCert := o.cfg.TLS.Enabled()
	if o.tlsListen != "" && !hasCert {
		return errors.New("-tls-listen needs -tls-cert and -tls-key, or -tls-dev")
	}
	if o.tlsListen == "" && hasCert {
		return errors.New("-tls-cert, -tls-key and -tls-dev need -tls-listen")
	}
	return nil
}

// lifecycleSection: the phases of a shutdown, and -version.
func (o *options) lifecycleSection() schema.Section {
	return schema.Section{Title: "Lifecycle", Check: o.checkLifecycle, Settings: []schema.Setting{
		{Name: "shutdown-delay", Ptr: &o.shutdownDelay,
			Usage: "on SIGTERM or SIGINT, keep serving this long with /readyz answering 503 (time for a load balancer to stop sending), then drain",
			Doc:   "on SIGTERM or SIGINT, keep serving this long with `/readyz` answering 503 (time for a load balancer to stop sending), then close the listeners"},
		{Name: "drain-timeout", Ptr: &o.drain,
			Usage: "after the shutdown delay, how long responses in flight may take to finish once the listeners are closed",
			Doc:   "then, time for responses in flight to finish"},
		{Name: "config", Ptr: &o.configFile,
			Usage: "read SEGORIGIN_<FLAG>=value settings from this `file` (systemd EnvironmentFile syntax) at start and again on SIGHUP; they win over the environment, the command line over both",
			Doc:   "a file of `SEGORIGIN_<FLAG>=value` lines, in the syntax of systemd's `EnvironmentFile=` (`#` comments, quotes, `\\` continuations), such as `/etc/default/segorigin`, which the unit passes: read at start and again on SIGHUP, where the settings marked `reload` take effect ([Reloads](operations.md#reloads)); its values win over the environment's, the command line's over both; only `SEGORIGIN_*` variables"},
		{Name: "version", Ptr: &o.version,
			Usage: "print the version, Go version and commit, and exit",
			Doc:   "print the version, Go release and commit, and exit"},
	}}
}

// checkLifecycle: the shutdown phases last no negative time.
func (o *options) checkLifecycle() error {
	if o.shutdownDelay < 0 || o.drain < 0 {
		return fmt.Errorf("-shutdown-delay %v, -drain-timeout %v: want durations >= 0", o.shutdownDelay, o.drain)
	}
	return nil
}

// logSection: the access log's destination and format, and the process
// log.
func (o *options) logSection() schema.Section {
	return schema.Section{Title: "Logs", Check: o.parseAccessLogFormat, Settings: []schema.Setting{
		{Name: "access-log", Ptr: &o.accessLog,
			Usage: "access log: empty off, - for standard output, or a file `path` (reopened on SIGUSR1 and SIGHUP)",
			Doc:   "access log: empty off, `-` standard output, or a file (reopened on SIGUSR1 and SIGHUP)"},
		{Name: "access-log-format", Ptr: &o.accessLogFormat,
			Usage: "access log format: combined (nginx/Apache, for GoAccess and log tools) or json (one object a line); independent of -log-format",
			Doc:   "`combined` (nginx/Apache, read as is by GoAccess) or `json` (one object a line); independent of `-log-format`"},
		{Name: "access-log-buffer", Ptr: &o.accessLogBuffer.Size,
			Usage: "gather access log lines in a buffer of this many bytes and write them together (nginx's access_log buffer=); 0: a write per line",
			Doc:   "bytes of access log lines gathered in memory and written together, when the next line would not fit, after `-access-log-flush`, on SIGUSR1/SIGHUP and at exit (nginx's `access_log ... buffer=`): a busy server makes one write per buffer instead of one per response. 0: a write per line. Lines still in the buffer are lost if the process is killed"},
		{Name: "access-log-flush", Ptr: &o.accessLogBuffer.Flush,
			Usage: "with -access-log-buffer, the longest a line waits before it is written (nginx's flush=); 0: until the buffer fills",
			Doc:   "with `-access-log-buffer`, the longest a line waits in the buffer (nginx's `flush=`); 0: until the buffer fills"},
		{Name: "log-format", Ptr: &o.logFormat,
			Usage: "log format: text or json",
			Doc:   "process log (standard error): `text` or `json`"},
		{Name: "log-level", Ptr: &o.logLevel,
			Usage: "log level: debug, info, warn, error",
			Doc:   "`debug`, `info`, `warn`, `error`"},
	}}
}

// parseAccessLogFormat derives cfg.AccessLogFormat from -access-log-format,
// and checks the access log's buffer.
func (o *options) parseAccessLogFormat() error {
	var err error
	if o.cfg.AccessLogFormat, err = accesslog.ParseFormat(o.accessLogFormat); err != nil {
		return fmt.Errorf("-access-log-format: %w", err)
	}
	if b := o.accessLogBuffer; b.Size < 0 || b.Flush < 0 {
		return fmt.Errorf("-access-log-buffer %d, -access-log-flush %v: want >= 0", b.Size, b.Flush)
	}
	return nil
}

// authSection: the files the keys or the secure_link secret are read
// from (loadAuth, its check, reads them); the rest of the auth settings
// are Config's.
func (o *options) authSection() schema.Section {
	return schema.Section{Title: "Signed URLs", Check: o.loadAuth, Reload: true, Settings: []schema.Setting{
		{Name: "auth-key-file", Ptr: &o.authKeyFile,
			Usage: "require signed tokens, verified with the keys in this `file` (lines: <key-id> <secret hex>)",
			Doc:   "require tokens, verified with the keys in this file (lines: `<key-id> <secret hex>`); re-read on SIGHUP"},
		{Name: "auth-securelink-secret-file", Ptr: &o.secureLinkFile,
			Usage: "use nginx secure_link tokens (?md5=&expires=) with the secret in this `file` instead",
			Doc:   "use nginx secure_link tokens (`?md5=&expires=`) with the secret in this file instead; excludes `-auth-key-file`"},
	}}
}

// accessSection: the file of allow/deny and valid_referers statements
// (loadAccess, its check, reads it); -access itself is Config's.
func (o *options) accessSection() schema.Section {
	return schema.Section{Title: "Access by address and referer", Check: o.loadAccess, Reload: true, Settings: []schema.Setting{
		{Name: "access-file", Ptr: &o.accessFile,
			Usage: "read the -access statements (nginx allow/deny, valid_referers; # comments) from this `file`, re-read on SIGHUP",
			Doc:   "the `-access` statements from this file (nginx syntax, `#` comments: a generated list of a CDN's ranges, say); re-read on SIGHUP, where a file that does not parse keeps the rules in force; excludes `-access`"},
	}}
}

// loadAccess reads -access-file into cfg.Access and checks it, naming the
// file; without it, -access stands.
func (o *options) loadAccess() error {
	if o.accessFile == "" {
		return nil
	}
	if o.cfg.Access != "" {
		return errors.New("-access and -access-file exclude each other")
	}
	b, err := os.ReadFile(o.accessFile)
	if err != nil {
		return fmt.Errorf("-access-file: %w", err)
	}
	if _, err := access.Parse(string(b)); err != nil {
		return fmt.Errorf("-access-file %s: %w", o.accessFile, err)
	}
	o.cfg.Access = string(b)
	return nil
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
