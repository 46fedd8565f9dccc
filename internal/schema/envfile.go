package schema

import (
	"fmt"
	"strings"
)

// ParseEnvFile reads the text of an environment file, as systemd's
// EnvironmentFile= reads it (systemd.exec(5)), into "NAME=value" entries
// for ApplyEnv, in order: one assignment a line; blank lines and lines
// starting with '#' or ';' ignored; spaces around the name and the value
// dropped; a value in double quotes (where '\' escapes '"', '\', '$' and
// '`', and may span lines) or in single quotes (taken as it is, may span
// lines); a '\' ending a line outside quotes joins the next one; a name
// assigned twice keeps its last value. Hand
// written rather than taken from a .env library: those read a different
// dialect (export prefixes, '#' comments after a value, ${VAR}
// expansion) and a file this process and systemd read differently would
// say two things.
func ParseEnvFile(text string) ([]string, error) {
	p := envParser{text: text, line: 1}
	var out []string
	for {
		p.skipBlank()
		if p.done() {
			return lastWins(out), nil
		}
		if c := p.text[p.i]; c == '#' || c == ';' {
			p.skipLine()
			continue
		}
		line := p.line
		name := strings.TrimSpace(p.until('=', '\n'))
		if p.done() || p.text[p.i] != '=' {
			return nil, fmt.Errorf("line %d: %q: want NAME=value", line, name)
		}
		if !validEnvName(name) {
			return nil, fmt.Errorf("line %d: %q is no variable name", line, name)
		}
		p.i++
		value, err := p.value()
		if err != nil {
			return nil, fmt.Errorf("line %d: %s: %w", line, name, err)
		}
		out = append(out, name+"="+value)
	}
}

// envParser is ParseEnvFile's position in its text.
type envParser struct {
	text string
	i    int
	line int // of text[i], for messages
}

func (p *envParser) done() bool { return p.i >= len(p.text) }

// skipBlank passes spaces, tabs and line ends.
func (p *envParser) skipBlank() {
	for !p.done() && strings.IndexByte(" \t\r\n", p.text[p.i]) >= 0 {
		p.next()
	}
}

func (p *envParser) next() {
	if p.text[p.i] == '\n' {
		p.line++
	}
	p.i++
}

func (p *envParser) skipLine() {
	for !p.done() && p.text[p.i] != '\n' {
		p.i++
	}
}

// until returns the text up to the first of stop, leaving p on it.
func (p *envParser) until(stop ...byte) string {
	start := p.i
	for !p.done() && strings.IndexByte(string(stop), p.text[p.i]) < 0 {
		p.i++
	}
	return p.text[start:p.i]
}

// value reads what follows '=' up to the end of its line (or of its
// quotes), leaving p after it.
func (p *envParser) value() (string, error) {
	for !p.done() && (p.text[p.i] == ' ' || p.text[p.i] == '\t') {
		p.i++
	}
	if p.done() {
		return "", nil
	}
	var b strings.Builder
	switch q := p.text[p.i]; q {
	case '"', '\'':
		p.i++
		for {
			if p.done() {
				return "", fmt.Errorf("no closing %c", q)
			}
			c := p.text[p.i]
			p.next()
			switch {
			case c == q:
				rest := strings.TrimSpace(p.until('\n'))
				if rest != "" {
					return "", fmt.Errorf("%q after the closing quote", rest)
				}
				return b.String(), nil
			case c == '\\' && q == '"' && !p.done() && strings.IndexByte("\"\\$`\n", p.text[p.i]) >= 0:
				if p.text[p.i] != '\n' { // an escaped line end joins the lines
					b.WriteByte(p.text[p.i])
				}
				p.next()
			default:
				b.WriteByte(c)
			}
		}
	}
	for !p.done() && p.text[p.i] != '\n' {
		if p.text[p.i] == '\\' && p.i+1 < len(p.text) && p.text[p.i+1] == '\n' {
			p.i++
			p.next()
			continue
		}
		b.WriteByte(p.text[p.i])
		p.i++
	}
	return strings.TrimRight(b.String(), " \t\r"), nil
}

// lastWins keeps the last assignment of each name, where it stands: a
// variable assigned twice has its last value, as in systemd (and a
// repeatable flag's variable is not applied twice).
func lastWins(entries []string) []string {
	last := map[string]int{}
	for i, kv := range entries {
		name, _, _ := strings.Cut(kv, "=")
		last[name] = i
	}
	var out []string
	for i, kv := range entries {
		if name, _, _ := strings.Cut(kv, "="); last[name] == i {
			out = append(out, kv)
		}
	}
	return out
}

// validEnvName: letters, digits and '_', not starting with a digit.
func validEnvName(s string) bool {
	if s == "" || (s[0] >= '0' && s[0] <= '9') {
		return false
	}
	for _, c := range []byte(s) {
		if c != '_' && (c < '0' || c > '9') && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') {
			return false
		}
	}
	return true
}

// MergeEnv is environ with the entries of file added, a name file sets
// replacing the environment's (so that a file read again on a reload
// wins over the values the process started with).
func MergeEnv(environ, file []string) []string {
	set := map[string]bool{}
	for _, kv := range file {
		name, _, _ := strings.Cut(kv, "=")
		set[name] = true
	}
	var out []string
	for _, kv := range environ {
		if name, _, _ := strings.Cut(kv, "="); !set[name] {
			out = append(out, kv)
		}
	}
	return append(out, file...)
}
