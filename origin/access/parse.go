package access

import (
	"errors"
	"fmt"
	"strings"
)

// ErrSyntax is wrapped by every error Parse returns.
var ErrSyntax = errors.New("access: invalid configuration")

// statement is one directive and its arguments, and the line it starts on.
type statement struct {
	line int
	args []string
}

// Parse reads nginx statements: "allow" and "deny" with one address,
// prefix or "all", and "valid_referers" with its arguments, each ended by
// ';' (the last may omit it), with nginx's quotes, escapes and # comments.
// The order of allow and deny is kept; several valid_referers add up.
func Parse(src string) (*Policy, error) {
	stmts, err := split(src)
	if err != nil {
		return nil, err
	}
	p := &Policy{}
	for _, st := range stmts {
		if err := p.add(st); err != nil {
			return nil, fmt.Errorf("%w: line %d: %s: %w", ErrSyntax, st.line, st.args[0], err)
		}
	}
	if err := p.Referers.finish(); err != nil {
		return nil, fmt.Errorf("%w: valid_referers: %w", ErrSyntax, err)
	}
	return p, nil
}

// add applies one statement to p.
func (p *Policy) add(st statement) error {
	switch st.args[0] {
	case "allow", "deny":
		if len(st.args) != 2 {
			return fmt.Errorf("takes one argument (an address, a prefix or all), got %d", len(st.args)-1)
		}
		warn, err := p.Addresses.add(st.args[0] == "deny", st.args[1])
		if warn != "" {
			p.Warnings = append(p.Warnings, fmt.Sprintf("line %d: %s", st.line, warn))
		}
		return err
	case "valid_referers":
		if len(st.args) < 2 {
			return errors.New("takes one argument at least")
		}
		for _, a := range st.args[1:] {
			if err := p.Referers.add(a); err != nil {
				return err
			}
		}
		return nil
	}
	return errors.New("unknown directive: want allow, deny or valid_referers")
}

// split cuts src into statements as nginx's ngx_conf_read_token does:
// arguments separated by white space, a statement ended by ';', '#'
// starting a comment to the end of the line where an argument could
// start, "..." and '...' quoting, and a backslash taking the next byte as
// it is. Blocks ('{', '}') have no place here.
func split(src string) ([]statement, error) {
	var out []statement
	var cur statement
	line := 1
	for i := 0; i < len(src); {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r':
			i++
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
		case c == ';':
			if len(cur.args) == 0 {
				return nil, fmt.Errorf("%w: line %d: unexpected \";\"", ErrSyntax, line)
			}
			out = append(out, cur)
			cur = statement{}
			i++
		case c == '{' || c == '}':
			return nil, fmt.Errorf("%w: line %d: unexpected %q: blocks are not supported", ErrSyntax, line, c)
		default:
			if len(cur.args) == 0 {
				cur.line = line
			}
			tok, n, err := token(src[i:])
			if err != nil {
				return nil, fmt.Errorf("%w: line %d: %w", ErrSyntax, line, err)
			}
			line += strings.Count(src[i:i+n], "\n")
			cur.args = append(cur.args, tok)
			i += n
		}
	}
	if len(cur.args) > 0 {
		out = append(out, cur)
	}
	return out, nil
}

// token reads one argument at the start of s: quoted or bare, with its
// escapes undone. n is the bytes it took.
func token(s string) (tok string, n int, err error) {
	quote := byte(0)
	if s[0] == '"' || s[0] == '\'' {
		quote, n = s[0], 1
	}
	start := n
	for ; n < len(s); n++ {
		c := s[n]
		switch {
		case c == '\\':
			n++ // the next byte is taken as it is
			if n == len(s) {
				return "", 0, errors.New("backslash at the end")
			}
		case quote != 0 && c == quote:
			end := n
			n++
			if n < len(s) && !strings.ContainsRune(" \t\r\n;", rune(s[n])) {
				return "", 0, fmt.Errorf("unexpected %q after a quoted argument", s[n])
			}
			return unescape(s[start:end]), n, nil
		case quote == 0 && strings.IndexByte(" \t\r\n;{}", c) >= 0:
			return unescape(s[start:n]), n, nil
		}
	}
	if quote != 0 {
		return "", 0, errors.New("unterminated quoted argument")
	}
	return unescape(s[start:]), n, nil
}

// unescape undoes what nginx undoes when it copies an argument: \" \'
// and \\ lose the backslash, \t \r \n become the control bytes; any other
// backslash stays (a regular expression's "\." keeps its meaning).
func unescape(s string) string {
	if strings.IndexByte(s, '\\') < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+1 < len(s) {
			switch s[i+1] {
			case '"', '\'', '\\':
				i++
			case 't':
				b.WriteByte('\t')
				i++
				continue
			case 'r':
				b.WriteByte('\r')
				i++
				continue
			case 'n':
				b.WriteByte('\n')
				i++
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
