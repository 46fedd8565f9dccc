package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"segorigin/origin/token"
)

// runSign is `segorigin sign`: it mints a token from the same key file the
// server reads and prints the token-carrying path (or URL, or raw token).
func runSign(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("segorigin sign", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned short; -h prints the usage
	fs.Usage = func() {}
	keyFile := fs.String("key-file", "", "key file: one `<key-id> <secret hex>` per line")
	keyID := fs.String("key-id", "", "id of the key to sign with (default: the file's only key)")
	scope := fs.String("scope", "", "path the token opens: a prefix ending in / (covers everything under it) or an exact path")
	ttl := fs.Duration("ttl", time.Hour, "how long the token is valid")
	ip := fs.String("ip", "", "bind the token to this client address")
	start := fs.Duration("start-in", 0, "token becomes valid this long from now (0: now)")
	prefix := fs.String("path-prefix", "t", "path carrier prefix, as the server's -auth-path-prefix")
	base := fs.String("url", "", "print a full URL with this base (e.g. http://127.0.0.1:8080)")
	format := fs.String("print", "path", "what to print: path (/t/<token>/scope), token (raw, for query, cookie or Bearer) or query (scope?token=...)")
	var link linkFlags
	link.bind(fs)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			printSignUsage(stdout, fs)
			return err
		}
		return fmt.Errorf("%w (segorigin sign -h lists the flags)", err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q (flags only; segorigin sign -h lists them)", fs.Args())
	}
	if *ttl <= 0 {
		// A token that is expired when minted is never what was meant.
		return fmt.Errorf("-ttl %v: want a positive duration such as 1h", *ttl)
	}
	if link.secretFile != "" {
		if *keyFile != "" {
			return errors.New("-key-file and -securelink-secret-file exclude each other")
		}
		out, err := link.sign(fs, *scope, time.Now().Add(*ttl))
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, strings.TrimRight(*base, "/")+out)
		return nil
	}
	if *keyFile == "" || *scope == "" || !strings.HasPrefix(*scope, "/") {
		return errors.New("-key-file (or -securelink-secret-file) and -scope (starting with /) are required (segorigin sign -h)")
	}
	if *start < 0 {
		return fmt.Errorf("-start-in %v: want 0 or a positive duration", *start)
	}
	key, err := loadKey(*keyFile, *keyID)
	if err != nil {
		return err
	}
	now := time.Now()
	c := token.Claims{Expiry: now.Add(*ttl), IP: *ip, KeyID: key.ID, ACL: []string{aclFor(*scope)}}
	if *start > 0 {
		c.Start = now.Add(*start)
	}
	tok, err := token.Sign(key, c)
	if err != nil {
		return err
	}
	var out string
	switch *format {
	case "path":
		out = "/" + strings.Trim(*prefix, "/") + "/" + token.PathSegment(tok) + *scope
	case "token":
		fmt.Fprintln(stdout, tok)
		return nil
	case "query":
		out = *scope + "?token=" + url.QueryEscape(tok)
	default:
		return fmt.Errorf("-print %q: want path, token or query", *format)
	}
	fmt.Fprintln(stdout, strings.TrimRight(*base, "/")+out)
	return nil
}

// printSignUsage is `segorigin sign -h`.
func printSignUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprint(w, `Usage:
  segorigin sign -key-file FILE -scope /path/ [flags]

Mints a signed-URL token with a key from the file the server's
-auth-key-file reads, and prints the token-carrying path (or a URL with
-url, or the token with -print token). The token is valid from -start-in
for -ttl. sign reads no SEGORIGIN_* variables (those set the server's
flags: segorigin -h).

  segorigin sign -securelink-secret-file FILE -scope /path [flags]

Mints an nginx secure_link link instead, with the secret, expression,
arguments and location the server's -auth-securelink-* flags give, and
the request fields the expression reads (-remote-addr, -user-agent,
-header, -arg). The link expires after -ttl, unless -securelink-args
names the hash alone.

Flags:
`)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
}

// aclFor turns a scope into an ACL pattern: a directory prefix opens
// everything below it.
func aclFor(scope string) string {
	if strings.HasSuffix(scope, "/") {
		return scope + "*"
	}
	return scope
}

func loadKey(path, id string) (token.Key, error) {
	f, err := os.Open(path)
	if err != nil {
		return token.Key{}, err
	}
	defer f.Close()
	ring, err := token.ParseKeyFile(f)
	if err != nil {
		return token.Key{}, fmt.Errorf("%s: %w", path, err)
	}
	if id == "" {
		ids := ring.IDs()
		if len(ids) != 1 {
			return token.Key{}, fmt.Errorf("%s holds %d keys: choose one with -key-id", path, len(ids))
		}
		id = ids[0]
	}
	k, ok := ring.Key(id)
	if !ok {
		return token.Key{}, fmt.Errorf("%s: no key %q", path, id)
	}
	return k, nil
}
