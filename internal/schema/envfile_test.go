package schema

import (
	"slices"
	"strings"
	"testing"
)

// envFileCases are read as systemd.exec(5) says EnvironmentFile= reads
// them.
var envFileCases = []struct {
	name, text string
	want       []string
	err        string
}{
	{name: "plain", text: "A=1\nB = two words \n", want: []string{"A=1", "B=two words"}},
	{name: "comments and blanks", text: "# c\n\n; c\n  \nA=1\n", want: []string{"A=1"}},
	{name: "no comment after a value", text: "A=1 # not a comment\n", want: []string{"A=1 # not a comment"}},
	{name: "empty value", text: "A=\nB=", want: []string{"A=", "B="}},
	{name: "double quotes", text: `A="x \"y\" \\ \$"` + "\n", want: []string{`A=x "y" \ $`}},
	{name: "single quotes", text: `A='x \n "y"'`, want: []string{`A=x \n "y"`}},
	{name: "quotes span lines", text: "H=\"all:X-A: 1\nall:X-B: 2\"\nB=3\n", want: []string{"H=all:X-A: 1\nall:X-B: 2", "B=3"}},
	{name: "continuation", text: "A=one \\\ntwo\nB=3", want: []string{"A=one two", "B=3"}},
	{name: "last wins", text: "A=1\nB=2\nA=3\n", want: []string{"B=2", "A=3"}},
	{name: "crlf", text: "A=1\r\nB=2\r\n", want: []string{"A=1", "B=2"}},
	{name: "no equals", text: "A=1\nJUNK\n", err: `line 2: "JUNK": want NAME=value`},
	{name: "bad name", text: "1A=1\n", err: `line 1: "1A" is no variable name`},
	{name: "unclosed", text: "A=1\nB=\"open\n", err: "line 2: B: no closing \""},
	{name: "text after quotes", text: `A="x" y`, err: `line 1: A: "y" after the closing quote`},
}

func TestParseEnvFile(t *testing.T) {
	for _, tt := range envFileCases {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseEnvFile(tt.text)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ParseEnvFile(%q) = %q, %v; want an error containing %q", tt.text, got, err, tt.err)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("ParseEnvFile(%q) = %q, %v; want %q", tt.text, got, err, tt.want)
			}
		})
	}
}

func TestMergeEnv(t *testing.T) {
	got := MergeEnv([]string{"PATH=/bin", "SEGORIGIN_A=env", "SEGORIGIN_B=env"}, []string{"SEGORIGIN_A=file"})
	if want := []string{"PATH=/bin", "SEGORIGIN_B=env", "SEGORIGIN_A=file"}; !slices.Equal(got, want) {
		t.Errorf("MergeEnv = %q, want %q", got, want)
	}
}

// FuzzParseEnvFile: no panic; every entry is NAME=value with a valid name,
// each name once; a file of the entries written back in double quotes
// reads as the same entries.
func FuzzParseEnvFile(f *testing.F) {
	for _, tt := range envFileCases {
		f.Add(tt.text)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got, err := ParseEnvFile(text)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		var b strings.Builder
		for _, kv := range got {
			name, v, ok := strings.Cut(kv, "=")
			if !ok || !validEnvName(name) || seen[name] {
				t.Fatalf("ParseEnvFile(%q): entry %q", text, kv)
			}
			seen[name] = true
			r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`, "`", "\\`")
			b.WriteString(name + "=\"" + r.Replace(v) + "\"\n")
		}
		again, err := ParseEnvFile(b.String())
		if err != nil || !slices.Equal(again, got) {
			t.Fatalf("ParseEnvFile(%q) = %q; written back as %q it reads %q, %v", text, got, b.String(), again, err)
		}
	})
}
