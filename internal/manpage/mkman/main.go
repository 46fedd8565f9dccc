// Command mkman writes segorigin's manual page, segorigin(1), from what
// the binary itself prints: `segorigin -h` (the server's flags, the
// environment and the signals), `segorigin sign -h` (the sign command's
// flags) and `segorigin -version`. `make deb` runs it on the binary it
// packages, so the page lists exactly the flags that binary has.
//
//	go run ./internal/manpage/mkman -bin bin/segorigin -date 2026-12-01 -o segorigin.1
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"

	"segorigin/internal/manpage"
)

func main() {
	bin := flag.String("bin", "segorigin", "the segorigin `binary` to describe")
	date := flag.String("date", "", "the page's date, YYYY-MM-DD (the commit's, for a reproducible page)")
	out := flag.String("o", "", "output `file` (default: standard output)")
	flag.Parse()
	if err := run(*bin, *date, *out); err != nil {
		fmt.Fprintln(os.Stderr, "mkman:", err)
		os.Exit(1)
	}
}

func run(bin, date, out string) error {
	if date == "" {
		return errors.New("-date is required (YYYY-MM-DD)")
	}
	server, err := usage(bin, "-h")
	if err != nil {
		return err
	}
	sign, err := usage(bin, "sign", "-h")
	if err != nil {
		return err
	}
	version, err := capture(bin, "-version")
	if err != nil {
		return err
	}
	// "segorigin v1.2.3 (go1.26.8, commit ...)": the page names v1.2.3.
	fields := strings.Fields(version)
	if len(fields) < 2 || fields[0] != "segorigin" {
		return fmt.Errorf("%s -version printed %q", bin, version)
	}
	var buf bytes.Buffer
	if err := page(server, sign, fields[1], date).Write(&buf); err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(buf.Bytes())
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// usage runs bin with args (a -h) and parses what it prints.
func usage(bin string, args ...string) (manpage.Usage, error) {
	text, err := capture(bin, args...)
	if err != nil {
		return manpage.Usage{}, err
	}
	u, err := manpage.ParseUsage(text)
	if err != nil {
		return u, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	return u, nil
}

// capture is bin's standard output; -h exits 0.
func capture(bin string, args ...string) (string, error) {
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v: %s", bin, strings.Join(args, " "), err, stderr.Bytes())
	}
	return stdout.String(), nil
}
