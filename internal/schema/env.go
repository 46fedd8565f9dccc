package schema

import (
	"errors"
	"flag"
	"fmt"
	"strings"
	"time"
)

// EnvPrefix starts the name of every variable that sets a flag.
const EnvPrefix = "SEGORIGIN_"

// EnvName is the variable that sets flag name: SEGORIGIN_<NAME>, upper
// case, '-' as '_'.
func EnvName(name string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ApplyEnv sets every flag not given on the command line from its
// SEGORIGIN_* variable in environ ("NAME=value" entries), and refuses a
// SEGORIGIN_* variable that names no flag: a typo in a unit's environment
// file would otherwise leave a default in force without a word.
func ApplyEnv(fs *flag.FlagSet, environ []string) error {
	given := Given(fs)
	byEnv := map[string]*flag.Flag{}
	fs.VisitAll(func(f *flag.Flag) { byEnv[EnvName(f.Name)] = f })
	var errs []error
	for _, kv := range environ {
		name, v, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix) {
			continue
		}
		f, ok := byEnv[name]
		switch {
		case !ok:
			errs = append(errs, fmt.Errorf("%s: no such flag (SEGORIGIN_<FLAG> sets -<flag>; segorigin -h lists them)", name))
		case given[f.Name]:
		default:
			if err := fs.Set(f.Name, v); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q: want %s", name, v, expects(f)))
			}
		}
	}
	return errors.Join(errs...)
}

// expects says what a flag's value must look like, for an error message.
func expects(f *flag.Flag) string {
	g, ok := f.Value.(flag.Getter)
	if !ok {
		return "a valid value for -" + f.Name
	}
	switch g.Get().(type) {
	case time.Duration:
		return "a duration such as 10s, 1m30s or 500ms"
	case bool:
		return "true or false"
	case int, int64, uint, uint64:
		return "an integer"
	}
	return "a valid value for -" + f.Name
}
