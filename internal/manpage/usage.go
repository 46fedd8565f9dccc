package manpage

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Usage is a command's -h output, parsed.
type Usage struct {
	Synopsis   []string // the lines under "Usage:", trimmed
	Paragraphs []string // the text between the synopsis and "Flags:", one entry per paragraph, lines joined
	Flags      []Flag
}

// Flag is one flag as flag.PrintDefaults lists it.
type Flag struct {
	Name    string // without the dash
	Arg     string // the argument's name ("duration", "address"), "" for a boolean
	Text    string // the description, without the default
	Default string // the "(default X)" value as printed, "" when none is
}

var (
	flagLine   = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_.-]*)(?: (.+))?$`)
	defaultEnd = regexp.MustCompile(` \(default (.*)\)$`)
)

// ParseUsage parses text as described in the package documentation. It
// fails on a listing without "Usage:" or "Flags:", or with a line under
// "Flags:" that is neither a flag nor its description.
func ParseUsage(text string) (Usage, error) {
	var u Usage
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) != "Usage:" {
		return u, errors.New("manpage: the listing does not start with \"Usage:\"")
	}
	i := 1
	for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
		u.Synopsis = append(u.Synopsis, strings.TrimSpace(lines[i]))
	}
	var para []string
	for ; i < len(lines) && lines[i] != "Flags:"; i++ {
		if l := strings.TrimSpace(lines[i]); l != "" {
			para = append(para, l)
			continue
		}
		if len(para) > 0 {
			u.Paragraphs = append(u.Paragraphs, strings.Join(para, " "))
			para = nil
		}
	}
	if len(para) > 0 {
		u.Paragraphs = append(u.Paragraphs, strings.Join(para, " "))
	}
	if i == len(lines) {
		return u, errors.New("manpage: no \"Flags:\" line")
	}
	for _, line := range lines[i+1:] {
		if m := flagLine.FindStringSubmatch(line); m != nil {
			u.Flags = append(u.Flags, Flag{Name: m[1], Arg: m[2]})
			continue
		}
		desc, ok := strings.CutPrefix(line, "    \t")
		if !ok || len(u.Flags) == 0 {
			return u, fmt.Errorf("manpage: line %q under Flags: is neither a flag nor its description", line)
		}
		f := &u.Flags[len(u.Flags)-1]
		if f.Text != "" {
			f.Text += " "
		}
		f.Text += strings.TrimSpace(desc)
	}
	for k := range u.Flags {
		f := &u.Flags[k]
		if m := defaultEnd.FindStringSubmatchIndex(f.Text); m != nil {
			f.Default = f.Text[m[2]:m[3]]
			f.Text = f.Text[:m[0]]
		}
	}
	return u, nil
}
