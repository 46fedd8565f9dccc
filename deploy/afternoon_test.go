package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The first afternoon of an nginx VOD operator, as TestPackageUnderSystemd
// runs it inside the container: two releases of a real title (the
// fixtures' two-rendition HLS), served through a symlink the deploy swaps;
// ffmpeg and Prometheus are the host's binaries run in the container's
// network namespace (nsenter --net), so the container needs neither
// installed and they reach the service at 127.0.0.1 as a local player and
// a local Prometheus would.

// vodTitle is the signed URL's path: the master playlist under the
// release symlink /srv/media/vod.
const vodTitle = "/vod/hls/master.m3u8"

// releases writes, under dir/releases, release a (the fixtures' HLS TS
// presentation: 180p and 270p, 8 s each) and release b (180p only, its
// first two segments: 4 s), so a player tells them apart by what it
// decodes. The container copies them to /srv/media/releases.
func releases(t *testing.T, dir string) {
	t.Helper()
	src := "../fixtures/media/hls/ts"
	a := filepath.Join(dir, "releases", "a", "hls")
	b := filepath.Join(dir, "releases", "b", "hls")
	for _, f := range []string{"master.m3u8", "180p/index.m3u8", "180p/seg000.ts", "180p/seg001.ts", "180p/seg002.ts",
		"180p/seg003.ts", "270p/index.m3u8", "270p/seg000.ts", "270p/seg001.ts", "270p/seg002.ts", "270p/seg003.ts"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(a, f))
	}
	for _, f := range []string{"180p/seg000.ts", "180p/seg001.ts"} {
		copyFile(t, filepath.Join(src, f), filepath.Join(b, f))
	}
	master := readFile(t, filepath.Join(src, "master.m3u8"))
	i := strings.LastIndex(master, "#EXT-X-STREAM-INF:")
	index, _, ok := strings.Cut(readFile(t, filepath.Join(src, "180p/index.m3u8")), "seg002.ts")
	if i < 0 || !strings.Contains(master[:i], "180p/index.m3u8") || !strings.Contains(master[i:], "270p/") || !ok {
		t.Fatalf("the fixtures' HLS TS playlists are not as release b expects:\n%s", master)
	}
	index = index[:strings.LastIndex(index, "#EXTINF:")] + "#EXT-X-ENDLIST\n"
	writeFile(t, filepath.Join(b, "master.m3u8"), master[:i])
	writeFile(t, filepath.Join(b, "180p/index.m3u8"), index)
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	writeFile(t, to, readFile(t, from))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// netCmd is a command of the host run in the container's network
// namespace (and no other of its namespaces: it reads and writes the
// host's files).
func (c *container) netCmd(ctx context.Context, name string, args ...string) *exec.Cmd {
	return exec.CommandContext(ctx, c.nsenter, append([]string{fmt.Sprintf("--net=/proc/%d/ns/net", c.pid1), "--", name}, args...)...)
}

// framemd5 is what ffmpeg decodes of input: every frame of every stream
// (-map 0: both renditions and the audio), one checksum line a frame. A
// non-zero exit or any error ffmpeg logs (-xerror stops at the first)
// fails the test; so does an input that decodes to nothing.
func (c *container) framemd5(t *testing.T, input string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-xerror",
		"-i", input, "-map", "0", "-f", "framemd5", "-")
	if strings.HasPrefix(input, "http:") {
		cmd = c.netCmd(ctx, "ffmpeg", cmd.Args[1:]...)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Fatalf("ffmpeg -i %s: %v\n%s", input, err, lastBytes(stderr.Bytes()))
	}
	if frames(stdout.String()) == nil {
		t.Fatalf("ffmpeg -i %s decoded no frames", input)
	}
	return stdout.String()
}

// frames counts a framemd5 listing's frames by stream index.
func frames(framemd5 string) map[string]int {
	var n map[string]int
	for _, line := range strings.Split(framemd5, "\n") {
		if idx, _, ok := strings.Cut(line, ","); ok && !strings.HasPrefix(line, "#") {
			if n == nil {
				n = map[string]int{}
			}
			n[strings.TrimSpace(idx)]++
		}
	}
	return n
}

// playSigned: ffmpeg plays link (a path and query `segorigin sign`
// printed) from the service at 127.0.0.1 and decodes exactly the frames
// it decodes from the release's files on disk.
func playSigned(t *testing.T, c *container, link, diskMaster string) {
	t.Helper()
	want := c.framemd5(t, diskMaster)
	got := c.framemd5(t, "http://127.0.0.1"+link)
	if got != want {
		t.Fatalf("ffmpeg played %s: frames by stream %v, want %v, as decoded from %s (framemd5 differs)",
			link, frames(got), frames(want), diskMaster)
	}
	t.Logf("ffmpeg played %s: frames by stream %v, as from disk", link, frames(got))
}

// promAddr is where Prometheus listens in the container's network
// namespace (its own: a fixed port collides with nothing).
const promAddr = "127.0.0.1:19090"

// startPrometheus runs the host's Prometheus in the container's network
// namespace, scraping every second: job segorigin, a static target at
// the packaged service's admin address (adminAddr), named instance
// origin-1 (so no query of one job finds the other's series), and job
// kubernetes-pods, the widely used annotation-discovery job (the
// relabelling of Prometheus's own documentation/examples/
// prometheus-kubernetes.yml with the prometheus.io/* annotation names, as
// the prometheus-community Helm chart has it) over the targets the pod
// role of kubernetes_sd_configs would give for deploy/kubernetes's pod
// (podTargets), handed to it by file_sd_configs. rules is the rule file
// the package installs. Cleanup stops it (SIGTERM, then SIGKILL).
func startPrometheus(t *testing.T, c *container, adminAddr, rules string) {
	t.Helper()
	dir := t.TempDir()
	sd, err := json.Marshal(podTargets(t, "kubernetes/deployment.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pods.json"), string(sd))
	writeFile(t, filepath.Join(dir, "prometheus.yml"), `global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [`+rules+`]
scrape_configs:
  - job_name: segorigin
    static_configs:
      - targets: ["`+adminAddr+`"]
        labels: {instance: origin-1}
  - job_name: kubernetes-pods
    file_sd_configs:
      - files: [`+filepath.Join(dir, "pods.json")+`]
    relabel_configs:
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scrape]
        action: keep
        regex: true
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_scheme]
        action: replace
        regex: (https?)
        target_label: __scheme__
      - source_labels: [__meta_kubernetes_pod_annotation_prometheus_io_path]
        action: replace
        target_label: __metrics_path__
        regex: (.+)
      - source_labels: [__address__, __meta_kubernetes_pod_annotation_prometheus_io_port]
        action: replace
        regex: ([^:]+)(?::\d+)?;(\d+)
        replacement: $1:$2
        target_label: __address__
      - action: labelmap
        regex: __meta_kubernetes_pod_label_(.+)
      - source_labels: [__meta_kubernetes_namespace]
        action: replace
        target_label: namespace
      - source_labels: [__meta_kubernetes_pod_name]
        action: replace
        target_label: pod
      - source_labels: [__meta_kubernetes_pod_phase]
        regex: Pending|Succeeded|Failed|Completed
        action: drop
`)
	cmd := c.netCmd(context.Background(), "prometheus", "--config.file="+filepath.Join(dir, "prometheus.yml"),
		"--storage.tsdb.path="+filepath.Join(dir, "data"), "--web.listen-address="+promAddr, "--log.level=warn")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }() // owned by the cleanup below, which waits for it
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	for i := 0; !c.ok("curl -sf http://" + promAddr + "/-/ready"); i++ {
		if i == 100 {
			t.Fatalf("Prometheus not ready in 20 s:\n%s", lastBytes(log.Bytes()))
		}
		select {
		case err := <-done:
			t.Fatalf("Prometheus ended: %v\n%s", err, lastBytes(log.Bytes()))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// sdGroup is one target group of a file_sd file.
type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// podTargets are the targets Prometheus's kubernetes_sd_configs (role:
// pod) makes of one running pod of the manifest at path, its IP
// 127.0.0.1: one a declared container port, __address__ the pod IP and
// that port, with the pod template's labels and annotations as
// __meta_kubernetes_pod_label_* and __meta_kubernetes_pod_annotation_*
// (names sanitised as Prometheus does: every character outside
// [a-zA-Z0-9_] becomes _). Beside them, a pod of the same labels without
// the annotations, which the relabelling must drop.
func podTargets(t *testing.T, path string) []sdGroup {
	t.Helper()
	dep := readFile(t, path)
	labels, annotations := podMetadata(t, dep)
	ports := regexp.MustCompile(`- name: (\w+)\n\s+containerPort: (\d+)`).FindAllStringSubmatch(dep, -1)
	if len(ports) == 0 || len(annotations) == 0 {
		t.Fatalf("%s: container ports %v, pod annotations %v", path, ports, annotations)
	}
	sanitize := regexp.MustCompile(`[^a-zA-Z0-9_]`)
	pod := func(name string, annotations map[string]string, port []string) sdGroup {
		g := sdGroup{Targets: []string{"127.0.0.1:" + port[2]}, Labels: map[string]string{
			"__meta_kubernetes_namespace":                     "default",
			"__meta_kubernetes_pod_name":                      name,
			"__meta_kubernetes_pod_ip":                        "127.0.0.1",
			"__meta_kubernetes_pod_phase":                     "Running",
			"__meta_kubernetes_pod_ready":                     "true",
			"__meta_kubernetes_pod_container_name":            "segorigin",
			"__meta_kubernetes_pod_container_port_name":       port[1],
			"__meta_kubernetes_pod_container_port_number":     port[2],
			"__meta_kubernetes_pod_container_port_protocol":   "TCP",
			"__meta_kubernetes_pod_controller_kind":           "ReplicaSet",
			"__meta_kubernetes_pod_container_init":            "false",
			"__meta_kubernetes_pod_host_ip":                   "127.0.0.1",
			"__meta_kubernetes_pod_uid":                       name,
			"__meta_kubernetes_pod_node_name":                 "node-0",
			"__meta_kubernetes_pod_controller_name":           "segorigin-0",
			"__meta_kubernetes_pod_container_image":           "segorigin:latest",
			"__meta_kubernetes_pod_labelpresent_pod_template": "false",
		}}
		for k, v := range labels {
			g.Labels["__meta_kubernetes_pod_label_"+sanitize.ReplaceAllString(k, "_")] = v
			g.Labels["__meta_kubernetes_pod_labelpresent_"+sanitize.ReplaceAllString(k, "_")] = "true"
		}
		for k, v := range annotations {
			g.Labels["__meta_kubernetes_pod_annotation_"+sanitize.ReplaceAllString(k, "_")] = v
			g.Labels["__meta_kubernetes_pod_annotationpresent_"+sanitize.ReplaceAllString(k, "_")] = "true"
		}
		return g
	}
	var groups []sdGroup
	for _, port := range ports {
		groups = append(groups, pod("segorigin-0", annotations, port), pod("unannotated-0", nil, port))
	}
	return groups
}

// podMetadata is the labels and annotations of the manifest's pod
// template (the metadata under `template:`), quotes taken off values.
func podMetadata(t *testing.T, dep string) (labels, annotations map[string]string) {
	t.Helper()
	_, tmpl, ok := strings.Cut(dep, "\n  template:\n    metadata:\n")
	if !ok {
		t.Fatal("deployment.yaml: no pod template metadata")
	}
	labels, annotations = map[string]string{}, map[string]string{}
	var into map[string]string
	for _, line := range strings.Split(tmpl, "\n") {
		switch {
		case line == "      labels:":
			into = labels
		case line == "      annotations:":
			into = annotations
		case strings.HasPrefix(line, "        ") && into != nil:
			k, v, _ := strings.Cut(strings.TrimSpace(line), ": ")
			into[k] = strings.Trim(v, `"`)
		default:
			return labels, annotations
		}
	}
	return labels, annotations
}

// promQuery evaluates expr at Prometheus (through curl in the container)
// and returns the result's series.
func promQuery(t *testing.T, c *container, expr string) []json.RawMessage {
	t.Helper()
	var resp struct {
		Status string
		Error  string
		Data   struct{ Result []json.RawMessage }
	}
	body := c.sh(t, "curl -sS http://"+promAddr+"/api/v1/query --data-urlencode "+shellQuote("query="+expr))
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Status != "success" {
		t.Fatalf("query %s: %v %s %s", expr, err, resp.Status, resp.Error)
	}
	return resp.Data.Result
}

// promGet decodes the data of a Prometheus API GET (path and query) into
// v.
func promGet(t *testing.T, c *container, path string, v any) {
	t.Helper()
	body := c.sh(t, "curl -sS "+shellQuote("http://"+promAddr+path))
	var resp struct {
		Status string
		Data   json.RawMessage
	}
	if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Status != "success" {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
	if err := json.Unmarshal(resp.Data, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, body)
	}
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// awaitScrapes waits, polling for at most 15 s, until Prometheus has
// scraped the segorigin target of each job up at least three times (a
// rate needs two samples).
func awaitScrapes(t *testing.T, c *container, jobs ...string) {
	t.Helper()
	for _, job := range jobs {
		expr := `sum_over_time(up{job="` + job + `"}[1m]) >= 3 and on (instance) segorigin_build_info{job="` + job + `"}`
		for i := 0; len(promQuery(t, c, expr)) == 0; i++ {
			if i == 75 {
				t.Fatalf("job %s: not three scrapes of a segorigin target up in 15 s", job)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
}

// checkAnnotationTarget: of the kubernetes-pods job's targets, the
// annotated pod's are one target (both container ports relabelled to the
// annotation's port), scraped at the annotation's path and up, labelled
// with the pod's labels, namespace and name; the unannotated pod's are
// dropped.
func checkAnnotationTarget(t *testing.T, c *container, wantURL string) {
	t.Helper()
	type target struct {
		Labels, DiscoveredLabels map[string]string
		ScrapeURL, Health        string
	}
	var targets struct{ ActiveTargets, DroppedTargets []target }
	promGet(t, c, "/api/v1/targets?state=any", &targets)
	var active []target
	for _, tg := range targets.ActiveTargets {
		if tg.Labels["job"] == "kubernetes-pods" {
			active = append(active, tg)
		}
	}
	if len(active) != 1 {
		t.Fatalf("kubernetes-pods has %d active targets, want 1 (the annotated pod at its annotated port): %+v", len(active), active)
	}
	got := active[0]
	if got.ScrapeURL != wantURL || got.Health != "up" || got.Labels["app_kubernetes_io_name"] != "segorigin" ||
		got.Labels["pod"] != "segorigin-0" || got.Labels["namespace"] != "default" {
		t.Errorf("the annotated pod's target: %s, health %s, labels %v; want %s up, labelled app_kubernetes_io_name=segorigin, pod=segorigin-0, namespace=default",
			got.ScrapeURL, got.Health, got.Labels, wantURL)
	}
	dropped := 0
	for _, tg := range targets.DroppedTargets {
		if tg.DiscoveredLabels["__meta_kubernetes_pod_name"] == "unannotated-0" {
			dropped++
		}
	}
	if dropped == 0 {
		t.Errorf("the pod without prometheus.io/scrape was not dropped: %+v", targets)
	}
}

// checkRules: every rule of the shipped file is loaded and evaluates
// without error (health ok), and there are as many as the file has.
func checkRules(t *testing.T, c *container, rulesFile string) {
	t.Helper()
	want := len(regexp.MustCompile(`(?m)^\s+- alert: `).FindAllString(readFile(t, rulesFile), -1))
	var rules struct {
		Groups []struct {
			Rules []struct{ Name, Health, LastError string }
		}
	}
	// Each rule is evaluated every second; wait for one evaluation of all.
	for i := 0; ; i++ {
		promGet(t, c, "/api/v1/rules", &rules)
		var healthy, n int
		var bad []string
		for _, g := range rules.Groups {
			for _, r := range g.Rules {
				n++
				if r.Health == "ok" {
					healthy++
				} else if r.Health == "err" {
					bad = append(bad, r.Name+": "+r.LastError)
				}
			}
		}
		if n != want || len(bad) > 0 {
			t.Fatalf("Prometheus loaded %d rules of %d, these in error: %v", n, want, bad)
		}
		if healthy == want {
			t.Logf("%d of %d alert rules healthy", healthy, want)
			return
		}
		if i == 50 {
			t.Fatalf("%d of %d rules evaluated after 10 s", healthy, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// checkDashboard evaluates every query of the installed dashboard with
// its variables as Grafana fills them for job: $job the job, $instance
// its segorigin target (label_values(segorigin_build_info{job=~"$job"},
// instance)), $__rate_interval one minute. Each must return data.
func checkDashboard(t *testing.T, c *container, dashboard, job string) {
	t.Helper()
	builds := promQuery(t, c, `segorigin_build_info{job=~"`+job+`"}`)
	if len(builds) != 1 {
		t.Fatalf("segorigin_build_info of job %s: %d series, want 1", job, len(builds))
	}
	var build struct{ Metric map[string]string }
	if err := json.Unmarshal(builds[0], &build); err != nil {
		t.Fatal(err)
	}
	// A regular expression in a PromQL string, its backslashes escaped.
	re := func(s string) string { return strings.ReplaceAll(regexp.QuoteMeta(s), `\`, `\\`) }
	vars := strings.NewReplacer("$job", re(job), "$instance", re(build.Metric["instance"]), "$__rate_interval", "1m")
	var queries, empty []string
	for _, q := range dashboardExprs(t, dashboard) {
		if !strings.HasPrefix(q.expr, "label_values(") {
			queries = append(queries, vars.Replace(q.expr))
		}
	}
	nan := 0 // queries whose every value is NaN (a ratio of two zero rates): data, shown as such
	for _, q := range queries {
		res := promQuery(t, c, q)
		if len(res) == 0 {
			empty = append(empty, q)
		}
		if allNaN(res) {
			nan++
		}
	}
	if len(empty) > 0 {
		t.Errorf("job %s: %d of %d dashboard queries return no data:\n%s", job, len(empty), len(queries), strings.Join(empty, "\n"))
	}
	t.Logf("job %s: %d dashboard queries, %d of them without data, %d NaN only", job, len(queries), len(empty), nan)
}

// allNaN: every sample of an instant vector is NaN (and there is one).
func allNaN(res []json.RawMessage) bool {
	for _, r := range res {
		var s struct{ Value []any }
		if json.Unmarshal(r, &s) != nil || len(s.Value) != 2 || s.Value[1] != "NaN" {
			return false
		}
	}
	return len(res) > 0
}

// swapRelease points /srv/media/vod at release b as deploy tools do
// (a new symlink renamed over the old: atomic) and waits, polling for at
// most 10 s, until the signed link's master playlist is release b's (no
// 270p rendition). It returns how long that took.
func swapRelease(t *testing.T, c *container, link string) time.Duration {
	t.Helper()
	c.sh(t, "cd /srv/media && ln -sfn releases/b vod.tmp && mv -T vod.tmp vod")
	start := time.Now()
	u, err := url.Parse("http://127.0.0.1" + link)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		body := c.sh(t, "curl -sS --fail "+shellQuote(u.String()))
		if !strings.Contains(body, "270p") {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("10 s after the swap, %s still lists release a's 270p rendition", link)
	return 0
}
