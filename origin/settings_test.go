package origin_test

import (
	"flag"
	"strings"
	"testing"

	"segorigin/internal/schema"
	"segorigin/origin"
)

// TestConfigSectionsBindFields: every setting of Config.Sections binds
// to a flag (a name used twice would panic) that sets its field, and
// readahead-readers not given follows cold-readers.
func TestConfigSectionsBindFields(t *testing.T) {
	c := origin.DefaultConfig()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	finish := schema.Bind(fs, c.Sections())
	args := []string{"-max-ranges", "7", "-cors-origins", "https://a.example, https://b.example", "-cold-readers", "4", "-engine", "fasthttp"}
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	finish()
	if c.MaxRanges != 7 || len(c.CORSOrigins) != 2 || c.ColdReaders != 4 || c.Engine != origin.EngineFastHTTP {
		t.Errorf("after %q: max-ranges %d, cors %q, cold-readers %d, engine %q; want 7, two origins, 4, fasthttp",
			args, c.MaxRanges, c.CORSOrigins, c.ColdReaders, c.Engine)
	}
	if want := origin.ReadAheadReadersFor(4); c.ReadAhead.Readers != want {
		t.Errorf("readahead-readers not given, cold-readers 4: %d, want %d", c.ReadAhead.Readers, want)
	}
	for _, sec := range c.Sections() {
		for _, s := range sec.Settings {
			if s.Usage == "" || sec.Title == "" {
				t.Errorf("-%s: usage %q, section %q; want both", s.Name, s.Usage, sec.Title)
			}
		}
	}
}

// TestConfigRefusesWhatTheCommandLineRefuses: the rules across settings
// are Config's, so New refuses a configuration built in code for the same
// reasons, in the same words, as segorigin's flags.
func TestConfigRefusesWhatTheCommandLineRefuses(t *testing.T) {
	for _, tt := range []struct {
		name string
		mod  func(*origin.Config)
		want string
	}{
		{"public without keys", func(c *origin.Config) { c.Auth.Public = []string{"/public/"} },
			"-auth-public needs -auth-key-file or -auth-securelink-secret-file"},
		{"read-ahead without cold readers", func(c *origin.Config) { c.ColdReaders, c.ReadAhead.Readers = 0, 2 },
			"readahead-readers: 2 with cold-readers 0"},
		{"read-ahead takes every reader", func(c *origin.Config) { c.ColdReaders, c.ReadAhead.Readers = 4, 4 },
			"readahead-readers: 4, want < cold-readers (4)"},
		{"no revalidation", func(c *origin.Config) { c.RevalidateEvery = 0 }, "revalidate-every: 0s, want > 0"},
		{"no access log sample", func(c *origin.Config) { c.AccessLogSample = 0 }, "access-log-sample: 0, want >= 1"},
		{"negative settle", func(c *origin.Config) { c.Settle = -1 }, "settle: -1ns, want >= 0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := origin.DefaultConfig()
			c.Root = t.TempDir()
			tt.mod(&c)
			srv, err := origin.New(c)
			if err == nil {
				srv.Close()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
