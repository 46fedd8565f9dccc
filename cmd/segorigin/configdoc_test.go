package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/internal/schema"
)

// usageFlag is one flag as -h prints it.
type usageFlag struct {
	name, def string // def: the "(default ...)" value, "" when -h prints none
	hasDef    bool
}

// usageFlags parses the flags out of a flag.PrintDefaults listing: a line
// "  -name [type]", then its description, which ends in "(default X)"
// unless the default is the type's zero value.
func usageFlags(t *testing.T, usage string) []usageFlag {
	t.Helper()
	nameRE := regexp.MustCompile(`^  -([a-z0-9-]+)`)
	defRE := regexp.MustCompile(`\(default (.*)\)$`)
	var flags []usageFlag
	for _, line := range strings.Split(usage, "\n") {
		if m := nameRE.FindStringSubmatch(line); m != nil {
			flags = append(flags, usageFlag{name: m[1]})
			continue
		}
		m := defRE.FindStringSubmatch(line)
		if m == nil || len(flags) == 0 || !strings.HasPrefix(line, "    \t") {
			continue
		}
		f := &flags[len(flags)-1]
		f.def, f.hasDef = m[1], true
		if uq, err := strconv.Unquote(m[1]); err == nil {
			f.def = uq
		}
	}
	return flags
}

// docFlag is one row of a flag table in docs/configuration.md.
type docFlag struct {
	name, def, env string
	sign           bool // in the "segorigin sign" section
}

// docFlags reads every table row whose first cell is `-name`.
func docFlags(t *testing.T, doc string) []docFlag {
	t.Helper()
	rowRE := regexp.MustCompile("^\\| `-([a-z0-9-]+)` \\|")
	var rows []docFlag
	sign := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "## ") {
			sign = line == "## segorigin sign"
		}
		m := rowRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.Trim(strings.TrimSpace(cells[i]), "`")
		}
		r := docFlag{name: m[1], def: cells[1], sign: sign}
		if !sign && len(cells) > 2 {
			r.env = cells[2]
		}
		rows = append(rows, r)
	}
	return rows
}

// sameDefault: the documented default d is the one -h prints, or, where
// -h prints none, a zero value; durations may be written short (24h for
// 24h0m0s).
func sameDefault(u usageFlag, d string) bool {
	if !u.hasDef {
		switch d {
		case "", "false", "0", "0s":
			return true
		}
		return false
	}
	if d == u.def {
		return true
	}
	dd, err1 := time.ParseDuration(d)
	ud, err2 := time.ParseDuration(u.def)
	return err1 == nil && err2 == nil && dd == ud
}

// TestConfigurationMatchesUsage: docs/configuration.md has one row for
// every flag `segorigin -h` and `segorigin sign -h` print, and no other,
// each with the default -h prints and, for the server, the SEGORIGIN_*
// variable that sets it. A flag added, removed or given a new default
// fails here until the page says so.
func TestConfigurationMatchesUsage(t *testing.T) {
	doc, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	var serverUsage, signUsage bytes.Buffer
	if _, err := parseFlags([]string{"-h"}, &serverUsage, nil); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("parseFlags(-h) = %v, want flag.ErrHelp", err)
	}
	if err := runSign([]string{"-h"}, &signUsage); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("runSign(-h) = %v, want flag.ErrHelp", err)
	}
	rows := docFlags(t, string(doc))
	for _, c := range []struct {
		name  string
		sign  bool
		usage string
		min   int
	}{
		{"segorigin", false, serverUsage.String(), 70},
		{"segorigin sign", true, signUsage.String(), 9},
	} {
		t.Run(c.name, func(t *testing.T) {
			usage := usageFlags(t, c.usage)
			if len(usage) < c.min {
				t.Fatalf("found %d flags in %s -h, want %d and more:\n%s", len(usage), c.name, c.min, c.usage)
			}
			documented := map[string]docFlag{}
			for _, r := range rows {
				if r.sign != c.sign {
					continue
				}
				if _, dup := documented[r.name]; dup {
					t.Errorf("docs/configuration.md lists %s -%s twice", c.name, r.name)
				}
				documented[r.name] = r
			}
			for _, u := range usage {
				r, ok := documented[u.name]
				if !ok {
					t.Errorf("docs/configuration.md does not list %s -%s", c.name, u.name)
					continue
				}
				delete(documented, u.name)
				if !sameDefault(u, r.def) {
					want := u.def
					if !u.hasDef {
						want = "a zero value"
					}
					t.Errorf("docs/configuration.md: %s -%s default %q, want %q as -h prints", c.name, u.name, r.def, want)
				}
				if env := schema.EnvName(u.name); !c.sign && r.env != env {
					t.Errorf("docs/configuration.md: -%s variable %q, want %q", u.name, r.env, env)
				}
			}
			for name := range documented {
				t.Errorf("docs/configuration.md lists %s -%s, which -h does not print", c.name, name)
			}
		})
	}
}

// update rewrites docs/configuration.md's flag tables from the schema:
// go test ./cmd/segorigin -run TestConfigurationTables -update
var update = flag.Bool("update", false, "rewrite docs/configuration.md's flag tables from the settings")

// TestConfigurationTables: every flag table of docs/configuration.md is
// the one the settings' sections make (flag, default, variable, meaning),
// so a flag is documented where it is declared. -update rewrites them.
func TestConfigurationTables(t *testing.T) {
	const path = "../../docs/configuration.md"
	doc, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want, err := schema.Rewrite(string(doc), defaultOptions().allSections())
	if err != nil {
		t.Fatalf("docs/configuration.md: %v", err)
	}
	if want == string(doc) {
		return
	}
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("docs/configuration.md's flag tables differ from the settings (- the page, + the settings); "+
		"go test ./cmd/segorigin -run TestConfigurationTables -update rewrites them:\n%s", lineDiff(string(doc), want))
}

// lineDiff lists the lines only got has ("-") and only want has ("+"),
// each with its line number, by a longest common subsequence of lines.
func lineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	// common[i][j]: length of the LCS of g[i:] and w[j:].
	common := make([][]int, len(g)+1)
	for i := range common {
		common[i] = make([]int, len(w)+1)
	}
	for i := len(g) - 1; i >= 0; i-- {
		for j := len(w) - 1; j >= 0; j-- {
			if g[i] == w[j] {
				common[i][j] = common[i+1][j+1] + 1
			} else {
				common[i][j] = max(common[i+1][j], common[i][j+1])
			}
		}
	}
	var b strings.Builder
	i, j := 0, 0
	for i < len(g) || j < len(w) {
		switch {
		case i < len(g) && j < len(w) && g[i] == w[j]:
			i, j = i+1, j+1
		case j == len(w) || (i < len(g) && common[i+1][j] >= common[i][j+1]):
			fmt.Fprintf(&b, "-%d: %s\n", i+1, g[i])
			i++
		default:
			fmt.Fprintf(&b, "+%d: %s\n", j+1, w[j])
			j++
		}
	}
	return b.String()
}
