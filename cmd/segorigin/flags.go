package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"segorigin/internal/schema"
)

// parseFlags parses args; a flag not given on the command line takes its
// value from SEGORIGIN_<NAME> (upper case, '-' as '_') when the -config
// file or else environ has it.
// -h prints the usage on stdout and returns flag.ErrHelp. The flags are
// the settings the sections declare (options.sections, Config.Sections);
// the command's own rules are checked here, Config's by origin.New.
func parseFlags(args []string, stdout io.Writer, environ []string) (*options, error) {
	o := defaultOptions()
	fs := flag.NewFlagSet("segorigin", flag.ContinueOnError)
	// The flag package prints the whole usage before any parse error;
	// errors are returned short instead, and -h prints the usage.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	finish := schema.Bind(fs, o.allSections())
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
	environ, err := withConfigFile(fs, environ)
	if err != nil {
		return nil, err
	}
	if err := schema.ApplyEnv(fs, environ); err != nil {
		return nil, err
	}
	finish()
	if o.version {
		return o, nil
	}
	if err := schema.Check(o.sections()); err != nil {
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
SEGORIGIN_READ_TIMEOUT=10s), or by a line of the -config file, which wins
over the environment. The command line wins over both. A SEGORIGIN_*
variable that names no flag is an error.

Signals: SIGTERM or SIGINT: /readyz answers 503, serving goes on for
-shutdown-delay, then the listeners close and responses in flight get
-drain-timeout to finish (a second signal cuts the delay short). SIGHUP
reads the settings again (the -config file, the TLS certificate, the auth
keys, -access-file) and puts in force those of request policy (headers,
CORS, compression, access rules, rate limits, signed URLs; the others
need a restart), or keeps all in force if any is invalid; it also reopens
the -access-log file. SIGUSR1 only reopens the -access-log file (after
logrotate moved it).

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
