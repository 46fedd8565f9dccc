package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"segorigin/internal/schema"
)

// configName is -config's variable: the environment may name the file,
// the file cannot name another.
var configName = schema.EnvName("config")

// withConfigFile is environ with the settings of the -config file (or
// SEGORIGIN_CONFIG's, when -config was not given) added, a variable the
// file sets replacing the environment's; environ itself without one. The
// file is read at start and again on every reload, so its values are the
// ones a reload can change.
func withConfigFile(fs *flag.FlagSet, environ []string) ([]string, error) {
	path := fs.Lookup("config").Value.String()
	if !schema.Given(fs)["config"] {
		for _, kv := range environ {
			if name, v, _ := strings.Cut(kv, "="); name == configName {
				path = v
			}
		}
	}
	if path == "" {
		return environ, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("-config: %w", err)
	}
	entries, err := schema.ParseEnvFile(string(b))
	if err != nil {
		return nil, fmt.Errorf("-config %s: %w", path, err)
	}
	for _, kv := range entries {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == configName:
			return nil, fmt.Errorf("-config %s: %s: a settings file cannot name another", path, name)
		case !strings.HasPrefix(name, schema.EnvPrefix):
			return nil, fmt.Errorf("-config %s: %s: only %s* variables (set others in the environment: the unit's Environment=)", path, name, schema.EnvPrefix)
		}
	}
	return schema.MergeEnv(environ, entries), nil
}
