package manpage

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strings"
)

// commandWord is a word of a command's name in a synopsis ("segorigin",
// "sign"), as opposed to its arguments.
var commandWord = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

// Page is a manual page.
type Page struct {
	Name     string // e.g. "segorigin"
	Section  string // e.g. "1"
	Date     string // YYYY-MM-DD, for the footer
	Source   string // e.g. "segorigin v1.2.3"
	Manual   string // e.g. "User Commands"
	Summary  string // the NAME line's text after the dash
	Synopsis []string
	Sections []Section
}

// Section is a heading and what follows it: paragraphs, then flags.
type Section struct {
	Title      string // upper case by convention: OPTIONS, ENVIRONMENT
	Paragraphs []string
	Flags      []Flag
	Items      []Item // tagged paragraphs (FILES, ENVIRONMENT)
}

// Item is a tagged paragraph: a term in bold and its text.
type Item struct {
	Term string
	Text string
}

// Write renders p in roff with the man(7) macros.
func (p Page) Write(w io.Writer) error {
	b := bufio.NewWriter(w)
	fmt.Fprintf(b, ".TH %s %s %s %s %s\n", quote(strings.ToUpper(p.Name)), quote(p.Section), quote(p.Date), quote(p.Source), quote(p.Manual))
	// Ragged right: flag defaults are long words that justified lines
	// cannot fit.
	b.WriteString(".ad l\n.nh\n")
	fmt.Fprintf(b, ".SH NAME\n%s \\- %s\n", text(p.Name), escape(p.Summary))
	if len(p.Synopsis) > 0 {
		b.WriteString(".SH SYNOPSIS\n")
		for i, s := range p.Synopsis {
			if i > 0 {
				b.WriteString(".br\n")
			}
			b.WriteString(protect(synopsis(s)) + "\n")
		}
	}
	for _, s := range p.Sections {
		fmt.Fprintf(b, ".SH %s\n", quote(s.Title))
		for i, para := range s.Paragraphs {
			if i > 0 {
				b.WriteString(".PP\n")
			}
			b.WriteString(text(para) + "\n")
		}
		for _, it := range s.Items {
			fmt.Fprintf(b, ".TP\n.B %s\n%s\n", quote(it.Term), text(it.Text))
		}
		for _, f := range s.Flags {
			b.WriteString(".TP\n")
			if f.Arg != "" {
				fmt.Fprintf(b, ".BI \\-%s \" %s\"\n", escape(f.Name), strings.ReplaceAll(escape(f.Arg), `"`, `''`))
			} else {
				fmt.Fprintf(b, ".B \\-%s\n", escape(f.Name))
			}
			t := text(f.Text)
			if f.Default != "" {
				// A list default may break after each comma (\:).
				t += " (default " + strings.ReplaceAll(escape(f.Default), ",", `,\:`) + ")"
			}
			b.WriteString(t + "\n")
		}
	}
	return b.Flush()
}

// synopsis renders a synopsis line: the leading command words bold,
// the arguments after them roman.
func synopsis(s string) string {
	cmd, rest, _ := strings.Cut(s, "  ")
	var out []string
	args := false
	for _, wd := range strings.Fields(cmd) {
		args = args || !commandWord.MatchString(wd)
		if args {
			out = append(out, `\fR`+escape(wd))
		} else {
			out = append(out, `\fB`+escape(wd))
		}
	}
	line := strings.Join(out, " ") + `\fR`
	if rest = strings.TrimSpace(rest); rest != "" {
		line += `  \(em ` + escape(rest)
	}
	return line
}

// text is s as a line of running text: escaped, and protected.
func text(s string) string { return protect(escape(s)) }

// protect keeps a line of roff from being read as a request: a leading
// '.' or an apostrophe would start one.
func protect(s string) string {
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		return `\&` + s
	}
	return s
}

// escape makes s literal in roff: backslashes and hyphens (a bare '-' may
// be set as a hyphen, not the minus sign an option needs).
func escape(s string) string {
	return strings.NewReplacer(`\`, `\e`, "-", `\-`).Replace(s)
}

// quote is a macro argument: escaped, in double quotes (roff has no
// escape for '"' inside them: it becomes two single quotes).
func quote(s string) string {
	return `"` + strings.ReplaceAll(escape(s), `"`, `''`) + `"`
}
