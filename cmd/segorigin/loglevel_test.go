package main

import (
	"io"
	"strings"
	"testing"
)

// TestLogLevel: nginx's error_log's level: -log-level warn drops info
// lines and keeps warnings, in either -log-format.
func TestLogLevel(t *testing.T) {
	for _, format := range []string{"text", "json"} {
		var b strings.Builder
		l, err := newLogger(format, "warn", &b)
		if err != nil {
			t.Fatal(err)
		}
		l.Info("an info line")
		l.Warn("a warning")
		if got := b.String(); strings.Contains(got, "an info line") || !strings.Contains(got, "a warning") {
			t.Errorf("-log-format %s -log-level warn wrote %q, want the warning alone", format, got)
		}
	}
	if _, err := newLogger("text", "loud", io.Discard); err == nil || !strings.Contains(err.Error(), "-log-level") {
		t.Errorf("-log-level loud: %v, want an error naming -log-level", err)
	}
}
