package deploy_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"segorigin/internal/testproc"
	"segorigin/internal/testreq"
)

// TestAlertRules: prometheus/alerts.yml passes `promtool check rules`, and
// `promtool test rules` passes on alerts_test.yml, which has a case for
// every alert. Without promtool it fails (.ci/deps installs Debian's
// prometheus package, which has it), except under -short.
func TestAlertRules(t *testing.T) {
	rules, err := os.ReadFile("prometheus/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	cases, err := os.ReadFile("prometheus/alerts_test.yml")
	if err != nil {
		t.Fatal(err)
	}
	alerts := regexp.MustCompile(`(?m)^\s+- alert: (\S+)$`).FindAllStringSubmatch(string(rules), -1)
	if len(alerts) < 10 {
		t.Fatalf("prometheus/alerts.yml has %d alerts, want the 10 and more it had", len(alerts))
	}
	for _, a := range alerts {
		if !strings.Contains(string(cases), "alertname: "+a[1]+"\n") && !strings.Contains(string(cases), "alertname: "+a[1]+",") {
			t.Errorf("prometheus/alerts_test.yml has no case for %s", a[1])
		}
	}
	promtool := testreq.Tool(t, "promtool", "the Debian package prometheus, which .ci/deps installs")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, args := range [][]string{{"check", "rules", "alerts.yml"}, {"test", "rules", "alerts_test.yml"}} {
		cmd := exec.CommandContext(ctx, promtool, args...)
		cmd.Dir = "prometheus"
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
}

// series is what one scrape of /metrics holds: every sample's label set,
// by metric name (histograms by their _bucket, _sum and _count names).
type series map[string][]map[string]string

// TestMonitoringQueriesExportedMetrics: every metric the Grafana dashboard
// and the alert rules query is one the real server's /metrics exports,
// and every label value they match on (`name{label="value"}`, and each
// alternative of `=~"a|b"`) is one of that metric's. A metric renamed in
// origin/admin, or a label value mistyped in a rule, fails here instead of
// leaving a panel empty and an alert silent.
func TestMonitoringQueriesExportedMetrics(t *testing.T) {
	exprs := append(ruleExprs(t, "prometheus/alerts.yml"), dashboardExprs(t, "grafana/segorigin.json")...)
	if len(exprs) < 30 {
		t.Fatalf("found %d queries in the dashboard and rules, want the 30 and more there are", len(exprs))
	}
	got := scrape(t)
	metricRE := regexp.MustCompile(`\b((?:segorigin|process|go)_[a-z0-9_]+)\b(\{[^}]*\})?`)
	matcherRE := regexp.MustCompile(`(\w+)\s*(=~|!=|!~|=)\s*"([^"]*)"`)
	checked := map[string]bool{}
	for _, e := range exprs {
		for _, m := range metricRE.FindAllStringSubmatch(e.expr, -1) {
			name := m[1]
			samples, ok := got[name]
			if !ok {
				t.Errorf("%s queries %s, which /metrics does not export: %s", e.file, name, e.expr)
				continue
			}
			checked[name] = true
			for _, mm := range matcherRE.FindAllStringSubmatch(m[2], -1) {
				label, op, value := mm[1], mm[2], mm[3]
				if label == "job" || label == "instance" || strings.Contains(value, "$") || (op != "=" && op != "=~") {
					continue // Prometheus's own labels, dashboard variables, negations
				}
				alts := []string{value}
				if op == "=~" {
					alts = strings.Split(value, "|")
				}
				for _, alt := range alts {
					re, err := regexp.Compile("^(?:" + alt + ")$")
					if err != nil {
						t.Errorf("%s: %s{%s%s%q}: %v", e.file, name, label, op, value, err)
						continue
					}
					if !hasLabel(samples, label, re) {
						t.Errorf("%s matches %s{%s%s%q}, but no exported %s has %s matching %q (it has %v)",
							e.file, name, label, op, value, name, label, alt, labelValues(samples, label))
					}
				}
			}
		}
	}
	if len(checked) < 25 {
		t.Errorf("checked %d metric names, want the 25 and more the dashboard and rules use", len(checked))
	}
}

// query is one PromQL expression and the file it is in.
type query struct{ file, expr string }

// ruleExprs is every expr: of a rules file, the block form (expr: |)
// included.
func ruleExprs(t *testing.T, path string) []query {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []query
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " "))
		rest, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "expr:")
		if !ok {
			continue
		}
		expr := strings.TrimSpace(rest)
		if expr == "|" {
			expr = ""
			for i+1 < len(lines) && (strings.TrimSpace(lines[i+1]) == "" || len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > indent) {
				i++
				expr += lines[i] + "\n"
			}
		}
		out = append(out, query{path, expr})
	}
	return out
}

// dashboardExprs is every query of a Grafana dashboard: the panels'
// targets' expr and the template variables' definition.
func dashboardExprs(t *testing.T, path string) []query {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dash any
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var out []query
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for k, x := range v {
				if s, ok := x.(string); ok && (k == "expr" || k == "definition") {
					out = append(out, query{path, s})
				}
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(dash)
	return out
}

// scrape starts the server with HTTPS and the admin listener, makes one
// request of each kind (so the latency histogram has its series), and
// reads /metrics.
func scrape(t *testing.T) series {
	t.Helper()
	bin := testproc.Build(t, "./cmd/segorigin")
	p := testproc.Start(t, exec.Command(bin, "-root", "../fixtures/media", "-listen", "127.0.0.1:0",
		"-tls-listen", "127.0.0.1:0", "-tls-dev", "-admin-listen", "127.0.0.1:0"), testproc.Timeout(15*time.Second))
	client := &http.Client{Timeout: 10 * time.Second}
	base := "http://" + p.Addr("http")
	for _, path := range []string{"/hls/ts/master.m3u8", "/dash/ondemand/180p.mp4", "/no-such-file"} {
		resp, err := client.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	resp, err := client.Get("http://" + p.Addr("admin") + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, want 200", resp.StatusCode)
	}
	sampleRE := regexp.MustCompile(`^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? `)
	labelRE := regexp.MustCompile(`(\w+)="((?:[^"\\]|\\.)*)"`)
	got := series{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		m := sampleRE.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		labels := map[string]string{}
		for _, l := range labelRE.FindAllStringSubmatch(m[2], -1) {
			labels[l[1]] = l[2]
		}
		got[m[1]] = append(got[m[1]], labels)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}

func hasLabel(samples []map[string]string, label string, re *regexp.Regexp) bool {
	for _, s := range samples {
		if v, ok := s[label]; ok && re.MatchString(v) {
			return true
		}
	}
	return false
}

func labelValues(samples []map[string]string, label string) []string {
	seen := map[string]bool{}
	for _, s := range samples {
		if v, ok := s[label]; ok {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// TestMonitoringJobSelector: no rule or dashboard query names a scrape
// job (under annotation discovery every pod's job is kubernetes-pods, and
// a query for job="segorigin" finds nothing); the dashboard has a job
// variable, its instance variable lists the chosen jobs' segorigin
// targets, and every panel query selects both. alerts_test.yml runs the
// rules on series of job kubernetes-pods, beside another pod's.
func TestMonitoringJobSelector(t *testing.T) {
	jobRE := regexp.MustCompile(`\bjob\s*(=~|!=|!~|=)\s*"([^"]*)"`)
	exprs := append(ruleExprs(t, "prometheus/alerts.yml"), dashboardExprs(t, "grafana/segorigin.json")...)
	for _, e := range exprs {
		for _, m := range jobRE.FindAllStringSubmatch(e.expr, -1) {
			if m[1] != "=~" || m[2] != "$job" {
				t.Errorf("%s: %s selects job%s%q; only the dashboard's $job may choose the job", e.file, e.expr, m[1], m[2])
			}
		}
	}
	var dash struct {
		Templating struct {
			List []struct{ Name, Definition, AllValue string }
		}
	}
	if err := json.Unmarshal([]byte(readFile(t, "grafana/segorigin.json")), &dash); err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{}
	for _, v := range dash.Templating.List {
		vars[v.Name] = v.Definition
		if v.AllValue == ".*" {
			t.Errorf("dashboard variable %s: All is .*, which takes every target of the job (up, process_*), not only segorigin's", v.Name)
		}
	}
	if got, want := vars["job"], "label_values(segorigin_build_info, job)"; got != want {
		t.Errorf("dashboard variable job = %q, want %q", got, want)
	}
	if got, want := vars["instance"], `label_values(segorigin_build_info{job=~"$job"}, instance)`; got != want {
		t.Errorf("dashboard variable instance = %q, want %q", got, want)
	}
	selectorRE := regexp.MustCompile(`\b[a-z_]+\{[^}]*\}`)
	for _, e := range dashboardExprs(t, "grafana/segorigin.json") {
		if strings.HasPrefix(e.expr, "label_values(") {
			continue
		}
		sels := selectorRE.FindAllString(e.expr, -1)
		if len(sels) == 0 {
			t.Errorf("dashboard query %s selects no series by $job and $instance", e.expr)
		}
		for _, sel := range sels {
			if !strings.Contains(sel, `job=~"$job"`) || !strings.Contains(sel, `instance=~"$instance"`) {
				t.Errorf("dashboard query %s: %s does not select job=~\"$job\" and instance=~\"$instance\"", e.expr, sel)
			}
		}
	}
}
