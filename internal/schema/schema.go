package schema

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// Setting is one flag bound to the field it sets.
type Setting struct {
	// Name is the flag's name; its variable is EnvName(Name).
	Name string
	// Ptr is the field: a *string, *bool, *int, *int64, *time.Duration,
	// *[]string (a comma-separated list on the command line) or a
	// flag.Value (such as a repeatable rule). Its value when bound is the
	// default.
	Ptr any
	// Usage is the -h text; a name in back quotes names the argument.
	Usage string
	// Doc is the documentation's "meaning" cell (Markdown); empty: Usage.
	Doc string
	// Unset, when set, runs after parsing if the flag was given neither
	// on the command line nor by its variable: it derives the field from
	// others, so that a default never conflicts with a flag that was given.
	Unset func()
	// Reload: a new value takes effect on a reload (SIGHUP); otherwise
	// it needs a restart. Section.Reload marks every setting of a section.
	Reload bool
}

// Section is the settings of one subsystem and the rules across them.
type Section struct {
	// Title is the heading of the section's table in the documentation.
	Title    string
	Settings []Setting
	// Check, when set, checks the rules across the settings once they are
	// parsed (and may complete a field they derive).
	Check func() error
	// Reload: every setting of the section takes effect on a reload.
	Reload bool
}

// Reloads says whether s, a setting of sec, takes effect on a reload.
func (sec Section) Reloads(s Setting) bool { return sec.Reload || s.Reload }

// Bind defines every setting of sections on fs, each defaulting to what
// its field holds now. The returned finish must run once fs is parsed:
// it stores the lists and derives the settings that were not given.
func Bind(fs *flag.FlagSet, sections []Section) (finish func()) {
	var after []func()
	var unset []Setting
	for _, sec := range sections {
		for _, s := range sec.Settings {
			if f := define(fs, s); f != nil {
				after = append(after, f)
			}
			if s.Unset != nil {
				unset = append(unset, s)
			}
		}
	}
	return func() {
		for _, f := range after {
			f()
		}
		given := Given(fs)
		for _, s := range unset {
			if !given[s.Name] {
				s.Unset()
			}
		}
	}
}

// define puts s on fs and returns what must run after parsing, if anything.
func define(fs *flag.FlagSet, s Setting) func() {
	switch p := s.Ptr.(type) {
	case *string:
		fs.StringVar(p, s.Name, *p, s.Usage)
	case *bool:
		fs.BoolVar(p, s.Name, *p, s.Usage)
	case *int:
		fs.IntVar(p, s.Name, *p, s.Usage)
	case *int64:
		fs.Int64Var(p, s.Name, *p, s.Usage)
	case *time.Duration:
		fs.DurationVar(p, s.Name, *p, s.Usage)
	case *[]string:
		list := new(string)
		fs.StringVar(list, s.Name, strings.Join(*p, ","), s.Usage)
		return func() { *p = SplitList(*list) }
	case flag.Value:
		fs.Var(p, s.Name, s.Usage)
	default:
		panic(fmt.Sprintf("schema: -%s: field of type %T", s.Name, s.Ptr))
	}
	return nil
}

// Check runs the Check of every section in order and returns the first
// error: one line saying what is wrong.
func Check(sections []Section) error {
	for _, sec := range sections {
		if sec.Check == nil {
			continue
		}
		if err := sec.Check(); err != nil {
			return err
		}
	}
	return nil
}

// CheckAll runs the Check of every section and joins the errors, so that
// a configuration built in code hears of every mistake at once.
func CheckAll(sections []Section) error {
	var errs []error
	for _, sec := range sections {
		if sec.Check != nil {
			errs = append(errs, sec.Check())
		}
	}
	return errors.Join(errs...)
}

// Given is the set of flags fs has been given (by the command line or by
// Set, as ApplyEnv does).
func Given(fs *flag.FlagSet) map[string]bool {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	return given
}

// SplitList splits a comma-separated list, dropping blank items.
func SplitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
