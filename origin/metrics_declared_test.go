package origin_test

import (
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"testing"

	"segorigin/origin/admin"
)

// histograms are the segorigin_ metrics exported by a collector of their
// own rather than declared in a metric table: the response-latency
// histogram (Server.Latency).
var histograms = map[string]bool{"segorigin_response_seconds": true}

// TestMetricsDeclared: every metric a subsystem declares is exported by
// /metrics with its declared type and documented in docs/operations.md,
// and every segorigin_ metric /metrics exports is declared. The server
// runs with every subsystem that has metrics of its own on (cold path,
// read-ahead, watcher), and one request carries CMCD, so that no
// declared metric is without a series.
func TestMetricsDeclared(t *testing.T) {
	ts := rangeRoot(t)
	mustStatus(t, ts.dial().do("GET", "/seg.m4s", "CMCD-Object: ot=v", "CMCD-Session: sf=h"), 200, "GET with CMCD")
	rec := httptest.NewRecorder()
	admin.Handler(ts.srv, nil).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	exported := map[string]string{} // name: type
	for _, m := range regexp.MustCompile(`(?m)^# TYPE (segorigin_\w+) (\w+)$`).FindAllStringSubmatch(rec.Body.String(), -1) {
		exported[m[1]] = m[2]
	}
	doc, err := os.ReadFile("../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	declared, _ := ts.srv.Metrics()
	seen := map[string]bool{}
	for _, m := range declared {
		want := "counter"
		if m.Gauge {
			want = "gauge"
		}
		if seen[m.Name] {
			t.Errorf("%s is declared twice", m.Name)
		}
		seen[m.Name] = true
		if got := exported[m.Name]; got != want {
			t.Errorf("/metrics exports %s as %q, want %q", m.Name, got, want)
		}
		if !regexp.MustCompile("`" + m.Name + "[`{]").Match(doc) {
			t.Errorf("docs/operations.md does not list %s", m.Name)
		}
	}
	for name := range exported {
		if !seen[name] && !histograms[name] {
			t.Errorf("/metrics exports %s, which no metric table declares", name)
		}
	}
	if len(declared) == 0 || !strings.Contains(rec.Body.String(), "segorigin_requests_total 1") {
		t.Errorf("declared %d metrics; /metrics:\n%s", len(declared), rec.Body.String())
	}
}
