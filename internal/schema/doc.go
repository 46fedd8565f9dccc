// Package schema declares settings once and derives from the declaration
// everything an operator sees of them: the flags of a flag.FlagSet (name,
// default, usage text), their SEGORIGIN_* environment variables, the
// settings file those may be written in (ParseEnvFile: systemd's
// EnvironmentFile= syntax), which of them a reload changes (Reload, Diff)
// and the flag tables of docs/configuration.md.
//
// A [Setting] binds a flag name to a field; its default is what the field
// holds when the settings are bound. A [Section] groups the settings of a
// subsystem under the heading its table has in the documentation, with
// the rules across them (Check), which the owner of the fields also runs
// when it validates a configuration built without flags. Sections that
// share a title make one table.
//
// What it never does: keep a registry (the caller passes its sections
// every time), read the process environment or a file (the caller passes
// their text), or decide a rule itself.
package schema
