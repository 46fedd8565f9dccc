package main

import (
	"io"
	"log/slog"
	"os"
	"strings"

	"segorigin/internal/schema"
	"segorigin/origin"
)

// reloader reads the settings again on SIGHUP as run read them at start:
// the same command line and environment, the -config file and the files
// the settings name (keys, -access-file) read anew.
type reloader struct {
	args    []string
	environ []string
	start   *options // as parsed at start
}

// load is Server.Reload's loader: the settings read again, and which of
// the command's own (the listeners, the logs...) changed since start:
// those take effect only at a restart.
func (r *reloader) load() (origin.Config, []string, error) {
	fresh, err := parseFlags(r.args, io.Discard, r.environ)
	if err != nil {
		return origin.Config{}, nil, err
	}
	// What run derived at start (reserveLoopP) is no change.
	if fresh.cfg.Engine == origin.EngineLoop && fresh.cfg.Loops == 0 && os.Getenv("GOMAXPROCS") == "" {
		fresh.cfg.Loops = r.start.cfg.Loops
	}
	_, restart := schema.Diff(r.start.sections(), fresh.sections())
	return fresh.cfg, restart, nil
}

// reloadSettings puts the settings read again in force, or keeps those in
// force when any is unreadable or invalid, and logs which.
func reloadSettings(srv *origin.Server, r *reloader, logger *slog.Logger) {
	done, err := srv.Reload(r.load)
	if err != nil {
		logger.Warn("SIGHUP: settings not reloaded: the previous ones stay in force", "err", err)
		return
	}
	logger.Info("SIGHUP: settings reloaded", "changed", strings.Join(done.Applied, " "), "access_rules", done.AccessRules, "auth", done.Auth)
	if len(done.Restart) > 0 {
		logger.Warn("SIGHUP: settings changed that need a restart: they keep their values until then, the rest is in force",
			"needs_restart", strings.Join(done.Restart, " "))
	}
}
