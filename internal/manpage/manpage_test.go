package manpage

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

const listing = `Usage:
  tool [flags]        do the thing
  tool sub -x FILE    the other thing

Every flag may also be set by TOOL_<FLAG>.

Signals: SIGHUP reloads.

Flags:
  -addr address
    	listen address (default "127.0.0.1:80")
  -list string
    	a list, split
    	over two lines (default "a,b,c")
  -v
    	verbose
`

func TestParseUsage(t *testing.T) {
	u, err := ParseUsage(listing)
	if err != nil {
		t.Fatal(err)
	}
	want := Usage{
		Synopsis:   []string{"tool [flags]        do the thing", "tool sub -x FILE    the other thing"},
		Paragraphs: []string{"Every flag may also be set by TOOL_<FLAG>.", "Signals: SIGHUP reloads."},
		Flags: []Flag{
			{Name: "addr", Arg: "address", Text: "listen address", Default: `"127.0.0.1:80"`},
			{Name: "list", Arg: "string", Text: "a list, split over two lines", Default: `"a,b,c"`},
			{Name: "v", Text: "verbose"},
		},
	}
	if !reflect.DeepEqual(u, want) {
		t.Errorf("ParseUsage = %+v\nwant %+v", u, want)
	}
}

func TestParseUsageErrors(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"no usage", "Flags:\n  -v\n"},
		{"no flags line", "Usage:\n  tool\n\nText.\n"},
		{"stray line", "Usage:\n  tool\n\nFlags:\nstray\n"},
		{"description first", "Usage:\n  tool\n\nFlags:\n    \torphan\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if u, err := ParseUsage(tc.text); err == nil {
				t.Errorf("ParseUsage(%q) = %+v, want an error", tc.text, u)
			}
		})
	}
}

func TestWrite(t *testing.T) {
	u, err := ParseUsage(listing)
	if err != nil {
		t.Fatal(err)
	}
	p := Page{Name: "tool", Section: "1", Date: "2026-12-01", Source: "tool v1", Manual: "User Commands",
		Summary: "does things", Synopsis: u.Synopsis,
		Sections: []Section{
			{Title: "OPTIONS", Flags: u.Flags},
			{Title: "NOTES", Paragraphs: []string{".starts with a dot", `a \ backslash`}},
			{Title: "FILES", Items: []Item{{Term: "/etc/tool", Text: "settings"}}},
		}}
	var b bytes.Buffer
	if err := p.Write(&b); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`.TH "TOOL" "1" "2026\-12\-01" "tool v1" "User Commands"` + "\n",
		"tool \\- does things\n",
		`\fBtool \fR[flags]\fR  \(em do the thing` + "\n",
		`\fBtool \fBsub \fR\-x \fRFILE\fR  \(em the other thing` + "\n",
		".BI \\-addr \" address\"\nlisten address (default \"127.0.0.1:80\")\n",
		".BI \\-list \" string\"\na list, split over two lines (default \"a,\\:b,\\:c\")\n",
		".B \\-v\nverbose\n",
		"\\&.starts with a dot\n",
		"a \\e backslash\n",
		".TP\n.B \"/etc/tool\"\nsettings\n",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}
