package main

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

const tsv = "workload\tserver\trps\tp99_ms\tcpu_us_per_req\n" +
	"W1\tsegorigin\t1000\t10\t300\n" +
	"W1\tnginx\t1200\t5\t390\n" +
	"W3\tsegorigin\t20000\t2\t30\n"

func TestReadMediansAndRatio(t *testing.T) {
	m, err := readMedians(strings.NewReader(tsv))
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(m.workloads, ","); got != "W1,W3" {
		t.Errorf("workloads = %s, want W1,W3", got)
	}
	if got := m.ratio("W1", "nginx", "segorigin", "cpu_us_per_req"); math.Abs(got-1.3) > 1e-9 {
		t.Errorf("ratio(W1, nginx, cpu) = %v, want 1.3", got)
	}
	if got := m.ratio("W3", "nginx", "segorigin", "rps"); !math.IsNaN(got) {
		t.Errorf("ratio of a missing row = %v, want NaN", got)
	}
	var svg bytes.Buffer
	draw(&svg, m, "t <&>", "segorigin")
	if s := svg.String(); !strings.HasPrefix(s, "<svg") || !strings.Contains(s, "t &lt;&amp;&gt;") || !strings.Contains(s, "W1 nginx: 1.20") {
		t.Errorf("draw: want an escaped title and a bar titled %q in\n%.400s", "W1 nginx: 1.20", s)
	}
}

func TestReadMediansErrors(t *testing.T) {
	for name, in := range map[string]string{
		"empty":      "",
		"bad header": "a\tb\tc\n",
		"short row":  "workload\tserver\trps\nW1\tsegorigin\n",
		"not number": "workload\tserver\trps\nW1\tsegorigin\tfast\n",
		"no rows":    "workload\tserver\trps\n",
	} {
		if _, err := readMedians(strings.NewReader(in)); err == nil {
			t.Errorf("readMedians(%s) = nil error, want one", name)
		}
	}
}

func TestNiceCeil(t *testing.T) {
	for in, want := range map[float64]float64{0.9: 1, 1.1: 1.5, 2.2: 2.5, 36: 40, 41: 50, 0.07: 0.075} {
		if got := niceCeil(in); math.Abs(got-want) > 1e-9 {
			t.Errorf("niceCeil(%v) = %v, want %v", in, got, want)
		}
	}
}
