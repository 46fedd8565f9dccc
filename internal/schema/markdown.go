package schema

import (
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// tableHeader opens every flag table of the documentation.
const tableHeader = "| flag | default | variable | takes effect | meaning |\n|---|---|---|---|---|"

// Table is the Markdown table of every setting of the sections titled
// title, in their order: flag, default, variable, when a new value takes
// effect (on a reload, or at a restart), meaning.
func Table(title string, sections []Section) string {
	var b strings.Builder
	b.WriteString(tableHeader)
	for _, sec := range sections {
		if sec.Title != title {
			continue
		}
		for _, s := range sec.Settings {
			meaning := s.Doc
			if meaning == "" {
				meaning = s.Usage
			}
			b.WriteString("\n|")
			effect := "restart"
			if sec.Reloads(s) {
				effect = "reload"
			}
			for _, cell := range []string{code("-" + s.Name), code(docDefault(s.Ptr)), code(EnvName(s.Name)), effect, meaning} {
				if cell != "" {
					b.WriteString(" " + cell)
				}
				b.WriteString(" |")
			}
		}
	}
	return b.String()
}

// Rewrite returns doc with the table under each "## <title>" heading of
// sections replaced by Table(title, sections). A title with no heading,
// or a heading with no flag table before the next one, is an error.
func Rewrite(doc string, sections []Section) (string, error) {
	lines := strings.Split(doc, "\n")
	var titles []string
	for _, sec := range sections {
		if !slices.Contains(titles, sec.Title) {
			titles = append(titles, sec.Title)
		}
	}
	for _, title := range titles {
		start, end, err := tableLines(lines, title)
		if err != nil {
			return "", err
		}
		lines = slices.Replace(lines, start, end, strings.Split(Table(title, sections), "\n")...)
	}
	return strings.Join(lines, "\n"), nil
}

// tableLines finds the flag table under "## title": its first line and
// the line after its last.
func tableLines(lines []string, title string) (start, end int, err error) {
	h := slices.Index(lines, "## "+title)
	if h < 0 {
		return 0, 0, fmt.Errorf("no heading %q", "## "+title)
	}
	first := strings.SplitN(tableHeader, "\n", 2)[0]
	for i := h + 1; i < len(lines) && !strings.HasPrefix(lines[i], "## "); i++ {
		if lines[i] != first {
			continue
		}
		end = i
		for end < len(lines) && strings.HasPrefix(lines[end], "|") {
			end++
		}
		return i, end, nil
	}
	return 0, 0, fmt.Errorf("%q: no table %q under it", "## "+title, first)
}

// docDefault writes a field's value as the documentation shows a default:
// durations short (24h, 60s), lists comma-separated, empty for none.
func docDefault(ptr any) string {
	switch p := ptr.(type) {
	case *string:
		return *p
	case *bool:
		return strconv.FormatBool(*p)
	case *int:
		return strconv.Itoa(*p)
	case *int64:
		return strconv.FormatInt(*p, 10)
	case *time.Duration:
		return shortDuration(*p)
	case *[]string:
		return strings.Join(*p, ",")
	case flag.Value:
		return p.String()
	}
	return fmt.Sprint(ptr)
}

// shortDuration is d in whole hours or seconds where it is one (24h, 75s),
// as an operator writes it; otherwise Go's form.
func shortDuration(d time.Duration) string {
	switch {
	case d != 0 && d%time.Hour == 0:
		return strconv.FormatInt(int64(d/time.Hour), 10) + "h"
	case d%time.Second == 0:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return d.String()
}

// code is s in back quotes, or empty.
func code(s string) string {
	if s == "" {
		return ""
	}
	return "`" + s + "`"
}
