package deploy_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"segorigin/internal/schema"
	"segorigin/internal/testproc"
)

// TestEnvironmentFile: every SEGORIGIN_* line of segorigin.env and of the
// examples/*.env variants, the commented examples included, names a flag
// and has a value it takes (the binary refuses either mistake at start, and
// -version stops it there), the file as it is reads as a -config file,
// and none sets a flag the unit's ExecStart= gives: the command line
// would win, and the line would do nothing.
func TestEnvironmentFile(t *testing.T) {
	unit, err := os.ReadFile("segorigin.service")
	if err != nil {
		t.Fatal(err)
	}
	args, _ := unitCommand(t, string(unit))
	execFlags := map[string]bool{}
	for _, a := range args {
		if name, ok := strings.CutPrefix(a, "-"); ok {
			execFlags[schema.EnvName(name)] = true
		}
	}
	examples, err := filepath.Glob("examples/*.env")
	if err != nil || len(examples) < 2 {
		t.Fatalf("examples/*.env: %v %v, want the secure_link and HTTPS variants", examples, err)
	}
	for _, path := range append([]string{"segorigin.env"}, examples...) {
		t.Run(path, func(t *testing.T) {
			env := envLines(t, path, execFlags)
			if path == "segorigin.env" && len(env) < 10 {
				t.Fatalf("segorigin.env has %d SEGORIGIN_* lines, want the 10 and more it had", len(env))
			}
			runVersion(t, nil, env)
			runVersion(t, []string{"-config", path}, nil) // as the unit reads it
		})
	}
}

// envLines is every SEGORIGIN_* assignment of an environment file,
// commented or not; one that sets a flag of execFlags fails t.
func envLines(t *testing.T, path string, execFlags map[string]bool) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimPrefix(line, "#")
		name, _, ok := strings.Cut(line, "=")
		if !ok || !strings.HasPrefix(name, "SEGORIGIN_") {
			continue
		}
		if execFlags[name] {
			t.Errorf("%s sets %s, which the unit's ExecStart= overrides", path, name)
		}
		env = append(env, line)
	}
	return env
}

// TestKubernetesManifests: the Deployment's flags and variables are the
// binary's; its probes reach /readyz and /healthz on the admin port the
// admin listener binds; the shutdown delay outlasts the readiness probe's
// failure window; terminationGracePeriodSeconds is above the shutdown
// delay plus the drain; the Service and the PodDisruptionBudget select the
// Deployment's pods.
func TestKubernetesManifests(t *testing.T) {
	dep := readFile(t, "kubernetes/deployment.yaml")
	args := listAfter(t, dep, "args:")
	var env []string
	for _, m := range regexp.MustCompile(`- name: (SEGORIGIN_\w+)\n\s+value: "?([^"\n]*)"?`).FindAllStringSubmatch(dep, -1) {
		env = append(env, m[1]+"="+m[2])
	}
	runVersion(t, args, env)
	flags := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(strings.TrimPrefix(a, "-"), "=")
		if !ok {
			t.Fatalf("deployment.yaml: argument %q: want -name=value", a)
		}
		flags[name] = value
	}

	ports := map[string]string{}
	for _, m := range regexp.MustCompile(`- name: (\w+)\n\s+containerPort: (\d+)`).FindAllStringSubmatch(dep, -1) {
		ports[m[1]] = m[2]
	}
	for flag, port := range map[string]string{"listen": "http", "admin-listen": "admin"} {
		if _, p, _ := strings.Cut(flags[flag], ":"); p == "" || p != ports[port] {
			t.Errorf("deployment.yaml: -%s=%s, but containerPort %q is %q", flag, flags[flag], port, ports[port])
		}
	}
	// Annotation discovery scrapes the pod at prometheus.io/port and
	// /path (TestPackageUnderSystemd runs that scrape).
	_, annotations := podMetadata(t, dep)
	if _, p, _ := strings.Cut(flags["admin-listen"], ":"); annotations["prometheus.io/port"] != p || annotations["prometheus.io/scrape"] != "true" {
		t.Errorf("deployment.yaml: pod annotations %v, want prometheus.io/scrape \"true\" and prometheus.io/port the port of -admin-listen=%s",
			annotations, flags["admin-listen"])
	}
	readiness := probe(t, dep, "readinessProbe")
	liveness := probe(t, dep, "livenessProbe")
	if readiness.path != "/readyz" || readiness.port != "admin" {
		t.Errorf("readinessProbe: %s on port %s, want /readyz on admin", readiness.path, readiness.port)
	}
	if liveness.path != "/healthz" || liveness.port != "admin" {
		t.Errorf("livenessProbe: %s on port %s, want /healthz on admin", liveness.path, liveness.port)
	}

	delay := duration(t, flags, "shutdown-delay")
	drain := duration(t, flags, "drain-timeout")
	if window := time.Duration(readiness.period*readiness.failures) * time.Second; delay < window {
		t.Errorf("-shutdown-delay %v is shorter than the readiness probe's failure window (%d s x %d = %v): connections would be refused before the pod leaves the Service",
			delay, readiness.period, readiness.failures, window)
	}
	grace := intField(t, dep, "terminationGracePeriodSeconds")
	if time.Duration(grace)*time.Second <= delay+drain {
		t.Errorf("terminationGracePeriodSeconds %d is not above -shutdown-delay %v + -drain-timeout %v", grace, delay, drain)
	}

	const selector = "app.kubernetes.io/name: segorigin"
	if !strings.Contains(dep, "labels:\n        "+selector) {
		t.Errorf("deployment.yaml: the pod template is not labelled %q", selector)
	}
	for _, f := range []string{"kubernetes/service.yaml", "kubernetes/pdb.yaml"} {
		if s := readFile(t, f); !strings.Contains(s, selector) {
			t.Errorf("%s does not select %q", f, selector)
		}
	}
	if svc := readFile(t, "kubernetes/service.yaml"); !strings.Contains(svc, "targetPort: http") {
		t.Errorf("service.yaml does not target the http port")
	}
	if pdb := readFile(t, "kubernetes/pdb.yaml"); !strings.Contains(pdb, "kind: PodDisruptionBudget") {
		t.Errorf("pdb.yaml is not a PodDisruptionBudget")
	}
}

// runVersion runs the binary built from this tree with args, the env
// assignments and -version: it exits 0 only when every flag and every
// SEGORIGIN_* variable names a flag and its value parses.
func runVersion(t *testing.T, args, env []string) {
	t.Helper()
	bin := testproc.Build(t, "./cmd/segorigin")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string{}, args...), "-version")...)
	cmd.Env = append(testproc.EnvWithout("SEGORIGIN_"), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("segorigin %s -version with %s: %v\n%s", strings.Join(args, " "), strings.Join(env, " "), err, out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// listAfter is the "- item" lines indented below the line key ends.
func listAfter(t *testing.T, doc, key string) []string {
	t.Helper()
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		if strings.TrimSpace(l) != key {
			continue
		}
		var items []string
		for _, item := range lines[i+1:] {
			v, ok := strings.CutPrefix(strings.TrimSpace(item), "- ")
			if !ok {
				break
			}
			items = append(items, strings.Trim(v, `"`))
		}
		return items
	}
	t.Fatalf("no %q list", key)
	return nil
}

type httpProbe struct {
	path, port       string
	period, failures int
}

// probe reads the httpGet probe named key (readinessProbe, livenessProbe).
func probe(t *testing.T, doc, key string) httpProbe {
	t.Helper()
	_, block, ok := strings.Cut(doc, key+":\n")
	if !ok {
		t.Fatalf("deployment.yaml has no %s", key)
	}
	if i := regexp.MustCompile(`\n {0,10}[a-zA-Z]+Probe:|\n {0,10}resources:`).FindStringIndex(block); i != nil {
		block = block[:i[0]]
	}
	field := func(name string) string {
		m := regexp.MustCompile(`\b` + name + `: (\S+)`).FindStringSubmatch(block)
		if m == nil {
			t.Fatalf("%s has no %s", key, name)
		}
		return m[1]
	}
	p := httpProbe{path: field("path"), port: field("port")}
	p.period, _ = strconv.Atoi(field("periodSeconds"))
	p.failures, _ = strconv.Atoi(field("failureThreshold"))
	return p
}

func intField(t *testing.T, doc, name string) int {
	t.Helper()
	m := regexp.MustCompile(`\b` + name + `: (\d+)`).FindStringSubmatch(doc)
	if m == nil {
		t.Fatalf("no %s", name)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

func duration(t *testing.T, flags map[string]string, name string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(flags[name])
	if err != nil {
		t.Fatalf("-%s=%q: %v", name, flags[name], err)
	}
	return d
}

// TestDockerfileFlags: the image's ENTRYPOINT flags and SEGORIGIN_* ENV
// are the binary's, and the admin port it sets is one the image exposes.
func TestDockerfileFlags(t *testing.T) {
	df := readFile(t, "Dockerfile")
	m := regexp.MustCompile(`(?m)^ENTRYPOINT (\[.*\])$`).FindStringSubmatch(df)
	if m == nil {
		t.Fatal("Dockerfile has no ENTRYPOINT [...]")
	}
	var entry []string
	if err := json.Unmarshal([]byte(m[1]), &entry); err != nil || len(entry) < 2 || entry[0] != "/segorigin" {
		t.Fatalf("Dockerfile ENTRYPOINT %s: want [\"/segorigin\", flags...] (%v)", m[1], err)
	}
	var env []string
	for _, e := range regexp.MustCompile(`(?m)^ENV (SEGORIGIN_\w+=\S+)$`).FindAllStringSubmatch(df, -1) {
		env = append(env, e[1])
	}
	runVersion(t, entry[1:], env)
	expose := regexp.MustCompile(`(?m)^EXPOSE (.*)$`).FindStringSubmatch(df)
	for _, e := range env {
		if v, ok := strings.CutPrefix(e, "SEGORIGIN_ADMIN_LISTEN="); ok {
			if _, port, _ := strings.Cut(v, ":"); expose == nil || !strings.Contains(" "+expose[1]+" ", " "+port+" ") {
				t.Errorf("Dockerfile: the admin listener %s is on a port EXPOSE does not list", v)
			}
		}
	}
}
