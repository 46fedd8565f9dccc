package admin

import (
	"net/http"
	"net/http/pprof"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"segorigin/origin"
)

// collector exports the metrics the server declares (origin.Server.Metrics)
// at scrape time: the hot path only increments its own counters, nothing
// is registered globally, and no metric is named here.
type collector struct {
	s     *origin.Server
	descs map[string]*prometheus.Desc // by metric name: every metric the server declares
}

func newCollector(s *origin.Server) collector {
	declared, _ := s.Metrics()
	c := collector{s: s, descs: make(map[string]*prometheus.Desc, len(declared))}
	for _, m := range declared {
		c.descs[m.Name] = prometheus.NewDesc(m.Name, m.Help, m.Labels, nil)
	}
	return c
}

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	_, series := c.s.Metrics()
	for _, sr := range series {
		kind := prometheus.CounterValue
		if sr.Metric.Gauge {
			kind = prometheus.GaugeValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[sr.Metric.Name], kind, sr.Value, sr.Labels...)
	}
}

// Handler serves the admin endpoints of s, for a listener off the public
// port: /metrics (Prometheus), /healthz (the process answers), /readyz
// (200 when ready reports the process takes traffic, false while it shuts
// down, and the media root is available: see origin.Server.CheckRoot) and,
// with Config.AdminPprof, /debug/pprof/.
func Handler(s *origin.Server, ready func() bool) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(s), s.Latency(),
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("ok\n")) })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		if ready != nil && !ready() {
			http.Error(w, "shutting down", http.StatusServiceUnavailable)
			return
		}
		if err := s.CheckRoot(); err != nil {
			http.Error(w, "media root unavailable", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	if !s.AdminPprof() {
		return mux
	}
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}
