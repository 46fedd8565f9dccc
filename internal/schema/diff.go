package schema

// Diff compares the settings of two bindings of the same sections (the
// ones in force and ones read again) and names, as flags ("-root"), those
// whose values differ: the ones a reload puts in force, and the ones that
// need a restart.
func Diff(before, after []Section) (reload, restart []string) {
	was := map[string]string{}
	for _, sec := range before {
		for _, s := range sec.Settings {
			was[s.Name] = docDefault(s.Ptr)
		}
	}
	for _, sec := range after {
		for _, s := range sec.Settings {
			if v, ok := was[s.Name]; ok && v == docDefault(s.Ptr) {
				continue
			}
			if sec.Reloads(s) {
				reload = append(reload, "-"+s.Name)
			} else {
				restart = append(restart, "-"+s.Name)
			}
		}
	}
	return reload, restart
}
