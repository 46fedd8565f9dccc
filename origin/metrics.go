package origin

import "segorigin/watcher"

// Metric is one metric the server exports: declared once, in its
// subsystem's metric table, beside the counters it reads.
type Metric struct {
	Name   string   // the full name, segorigin_...
	Help   string   // what it counts, as /metrics says it
	Labels []string // label names: each Series gives one value for each
	Gauge  bool     // a level, up and down; otherwise a counter, which only grows
}

// Series is one labelled value of a Metric, as a scrape sees it.
type Series struct {
	Metric *Metric
	Labels []string // label values, in Metric.Labels' order
	Value  float64
}

// table collects what the subsystems declare: every metric, and the
// series of those whose subsystem is on. Built anew for each scrape from
// one Stats snapshot, so a table holds no state between scrapes.
type table struct {
	metrics []*Metric
	series  []Series
	off     bool // the subsystem declaring now is off: its metrics are declared, its series left out
}

// counter declares a counter; its series follow with add.
func (t *table) counter(name, help string, labels ...string) *Metric {
	return t.declare(&Metric{Name: "segorigin_" + name, Help: help, Labels: labels})
}

// gauge declares a gauge; its series follow with add.
func (t *table) gauge(name, help string, labels ...string) *Metric {
	return t.declare(&Metric{Name: "segorigin_" + name, Help: help, Labels: labels, Gauge: true})
}

func (t *table) declare(m *Metric) *Metric {
	t.metrics = append(t.metrics, m)
	return m
}

// one declares a counter without labels and its only series, v.
func (t *table) one(name, help string, v int64) { t.add(t.counter(name, help), v) }

// add gives m the series v with the label values values.
func (t *table) add(m *Metric, v int64, values ...string) { t.addFloat(m, float64(v), values...) }

// addFloat is add for a value that is not a count (seconds).
func (t *table) addFloat(m *Metric, v float64, values ...string) {
	if !t.off {
		t.series = append(t.series, Series{Metric: m, Labels: values, Value: v})
	}
}

// each gives m one series for each of vs, labelled label(i).
func (t *table) each(m *Metric, vs []int64, label func(int) string) {
	for i, v := range vs {
		t.add(m, v, label(i))
	}
}

// byLabel gives m one series for each entry of vs, labelled by its key.
func (t *table) byLabel(m *Metric, vs map[string]int64) {
	for label, v := range vs {
		t.add(m, v, label)
	}
}

// gaugeFlag is a gauge's value for a condition: 1 while it holds.
func gaugeFlag(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// seconds converts a sum of nanoseconds for a _seconds_total metric.
func seconds(nanos int64) float64 { return float64(nanos) / 1e9 }

// Metrics returns every metric the server declares, whether it exports
// it now or not (a subsystem that is off, such as the cold path, exports
// none of its own), and the series it exports now, all read from one
// Stats snapshot. An exporter (origin/admin) describes the first and
// sends the second; it keeps no list of its own.
func (s *Server) Metrics() ([]*Metric, []Series) {
	st := s.Stats()
	t := &table{}
	serverMetrics(t, &st, s.Build(), !s.root.down.Load(), logSuppressed(s))
	listenerMetrics(t, &st.ListenerCounters)
	transportMetrics(t, &st.Transport)
	authMetrics(t, &st.Auth)
	fileErrorMetrics(t, &st.FileErrors)
	accessMetrics(t, &st.Access)
	rewriteMetrics(t, &st.Rewrite)
	gzipMetrics(t, &st.Gzip)
	reloadMetrics(t, &st.Reload)
	tlsMetrics(t, &st.TLS)
	contentMetrics(t, &st.Content)
	cmcdMetrics(t, &st.CMCD)
	loopMetrics(t, &st.Loop)
	cacheMetrics(t, s.CacheStats())
	liveMetrics(t, &st.Live)
	growMetrics(t, &st.Grow)
	t.off = s.cold == nil
	coldMetrics(t, &st.Cold, s.cold.poolStats())
	t.off = s.ra == nil
	readAheadMetrics(t, &st.ReadAhead)
	t.off = s.watch == nil
	var ws watcher.Stats
	if s.watch != nil {
		ws = s.watch.Stats()
	}
	watchMetrics(t, ws)
	return t.metrics, t.series
}
