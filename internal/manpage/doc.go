// Package manpage turns a command's own -h output into a manual page, so
// the page is made from the flag set the binary really has and cannot
// drift from it.
//
// [ParseUsage] reads the listing a Go program prints with
// flag.FlagSet.PrintDefaults after a free-form preamble: the lines under
// "Usage:" (the synopsis), the paragraphs up to "Flags:", then one entry
// per flag ("  -name [arg]" and its indented description, which ends in
// "(default X)" unless the default is the zero value). [Page.Write]
// renders a page in roff (the man(7) macros): NAME, SYNOPSIS, then the
// sections the caller gives, each of paragraphs and flag lists.
//
// What it never does: run a program (./mkman does, and writes
// segorigin's page), or guess at a flag the listing does not show.
package manpage
