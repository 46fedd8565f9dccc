package schema

import (
	"errors"
	"flag"
	"io"
	"slices"
	"strings"
	"testing"
	"time"
)

// fields is a small configuration for the tests.
type fields struct {
	name    string
	on      bool
	n       int
	size    int64
	wait    time.Duration
	list    []string
	derived int
}

func (f *fields) sections() []Section {
	return []Section{{
		Title: "One",
		Settings: []Setting{
			{Name: "name", Ptr: &f.name, Usage: "a `word`", Doc: "a word, in the docs"},
			{Name: "on", Ptr: &f.on, Usage: "switch", Reload: true},
			{Name: "n", Ptr: &f.n, Usage: "count", Unset: func() { f.n = f.derived }},
		},
		Check: func() error {
			if f.n < 0 {
				return errors.New("n: want >= 0")
			}
			return nil
		},
	}, {
		Title:  "Two",
		Reload: true,
		Settings: []Setting{
			{Name: "size", Ptr: &f.size, Usage: "bytes"},
			{Name: "wait", Ptr: &f.wait, Usage: "duration"},
			{Name: "list", Ptr: &f.list, Usage: "comma-separated"},
		},
	}}
}

func parse(t *testing.T, f *fields, args, environ []string) error {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	finish := Bind(fs, f.sections())
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := ApplyEnv(fs, environ); err != nil {
		return err
	}
	finish()
	return Check(f.sections())
}

func TestBind(t *testing.T) {
	for _, tt := range []struct {
		name      string
		args, env []string
		want      fields
		err       string
	}{
		{name: "defaults", want: fields{name: "x", list: []string{"a", "b"}, n: 3, derived: 3}},
		{name: "flags", args: []string{"-name", "y", "-on", "-n", "5", "-size", "9", "-wait", "2s", "-list", " c,,d "},
			want: fields{name: "y", on: true, n: 5, size: 9, wait: 2 * time.Second, list: []string{"c", "d"}, derived: 3}},
		{name: "env", env: []string{"SEGORIGIN_N=4", "SEGORIGIN_WAIT=1m", "PATH=/bin"},
			want: fields{name: "x", n: 4, wait: time.Minute, list: []string{"a", "b"}, derived: 3}},
		{name: "command line wins", args: []string{"-n", "6"}, env: []string{"SEGORIGIN_N=4"},
			want: fields{name: "x", n: 6, list: []string{"a", "b"}, derived: 3}},
		{name: "check", args: []string{"-n", "-1"}, err: "n: want >= 0"},
		{name: "env typo", env: []string{"SEGORIGIN_NAEM=z"}, err: "SEGORIGIN_NAEM: no such flag"},
		{name: "env value", env: []string{"SEGORIGIN_WAIT=10"}, err: `SEGORIGIN_WAIT="10": want a duration such as 10s`},
		{name: "env bool", env: []string{"SEGORIGIN_ON=maybe"}, err: `SEGORIGIN_ON="maybe": want true or false`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := fields{name: "x", list: []string{"a", "b"}, derived: 3}
			err := parse(t, &f, tt.args, tt.env)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Errorf("parse(%q, %q) = %v, want an error containing %q", tt.args, tt.env, err, tt.err)
				}
				return
			}
			if err != nil || f.name != tt.want.name || f.on != tt.want.on || f.n != tt.want.n || f.size != tt.want.size ||
				f.wait != tt.want.wait || strings.Join(f.list, "|") != strings.Join(tt.want.list, "|") {
				t.Errorf("parse(%q, %q) = %+v, %v; want %+v", tt.args, tt.env, f, err, tt.want)
			}
		})
	}
}

func TestRewrite(t *testing.T) {
	f := fields{name: "x", wait: 24 * time.Hour, list: []string{"a", "b"}}
	doc := "# Page\n\n## One\n\nprose\n\n| flag | default | variable | takes effect | meaning |\n|---|---|---|---|---|\n| `-old` | | |\n\nafter\n\n## Two\n\n| flag | default | variable | takes effect | meaning |\n|---|---|---|---|---|\n"
	got, err := Rewrite(doc, f.sections())
	if err != nil {
		t.Fatal(err)
	}
	want := "# Page\n\n## One\n\nprose\n\n| flag | default | variable | takes effect | meaning |\n|---|---|---|---|---|\n" +
		"| `-name` | `x` | `SEGORIGIN_NAME` | restart | a word, in the docs |\n" +
		"| `-on` | `false` | `SEGORIGIN_ON` | reload | switch |\n" +
		"| `-n` | `0` | `SEGORIGIN_N` | restart | count |\n\nafter\n\n## Two\n\n| flag | default | variable | takes effect | meaning |\n|---|---|---|---|---|\n" +
		"| `-size` | `0` | `SEGORIGIN_SIZE` | reload | bytes |\n" +
		"| `-wait` | `24h` | `SEGORIGIN_WAIT` | reload | duration |\n" +
		"| `-list` | `a,b` | `SEGORIGIN_LIST` | reload | comma-separated |\n"
	if got != want {
		t.Errorf("Rewrite =\n%s\nwant\n%s", got, want)
	}
	if _, err := Rewrite("# Page\n\n## One\n\nno table\n", f.sections()); err == nil {
		t.Errorf("Rewrite of a page without the tables: nil error")
	}
}

func TestShortDuration(t *testing.T) {
	for _, tt := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {time.Second, "1s"}, {75 * time.Second, "75s"}, {24 * time.Hour, "24h"}, {1500 * time.Millisecond, "1.5s"},
	} {
		if got := shortDuration(tt.d); got != tt.want {
			t.Errorf("shortDuration(%v) = %q, want %q", tt.d, got, tt.want)
		}
	}
}

// TestDiff: the settings whose values differ, by whether a reload puts
// them in force (Section.Reload, Setting.Reload) or they need a restart.
func TestDiff(t *testing.T) {
	before := fields{name: "x", list: []string{"a", "b"}, n: 3}
	after := before
	after.name, after.on, after.list = "y", true, []string{"a"}
	reload, restart := Diff(before.sections(), after.sections())
	if want := []string{"-on", "-list"}; !slices.Equal(reload, want) {
		t.Errorf("Diff: reload %q, want %q", reload, want)
	}
	if want := []string{"-name"}; !slices.Equal(restart, want) {
		t.Errorf("Diff: restart %q, want %q", restart, want)
	}
	if r1, r2 := Diff(before.sections(), before.sections()); r1 != nil || r2 != nil {
		t.Errorf("Diff of equal settings = %q, %q; want none", r1, r2)
	}
}
