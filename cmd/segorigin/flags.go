package main

import (
	"errors"
	"flag"
	"fmt"
	"io"

	"segorigin/internal/schema"
)

// parseFlags parses args; a flag not given on the command line takes its
// value from SEGORIGIN_<NAME> (upper case, '-' as '_') when environ has it.
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
SEGORIGIN_READ_TIMEOUT=10s). The command line wins. A SEGORIGIN_* variable
that names no flag is an error.

Signals: SIGTERM or SIGINT: /readyz answers 503, serving goes on for
-shutdown-delay, then the listeners close and responses in flight get
-drain-timeout to finish (a second signal cuts the delay short). SIGHUP
reloads the TLS certificate, the auth keys and -access-file, and reopens
the -access-log file. SIGUSR1 only reopens the -access-log file (after
logrotate moved it).

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}
