// Command chart draws the medians that loadtest/compare.sh writes (its
// FILE.tsv) as an SVG bar chart for README.md: one panel per metric, a group
// of bars per workload, a bar per server, each bar the server's median
// divided by segorigin's (so segorigin is 1.0 everywhere and the dashed line
// marks it). SVG needs nothing beyond the standard library and renders on
// GitHub.
//
// Usage:
//
//	go run ./loadtest/chart -in loadtest/results/compare-DATE.tsv -o chart.svg [-title TEXT]
package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"html"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
)

// medians is compare.sh's medians table: metric values by workload and
// server, in the order they first appear.
type medians struct {
	workloads, servers []string
	value              map[[3]string]float64 // {workload, server, column} → median
}

// metric is one panel. CPU per GiB has none: within a workload every
// response has the same size, so its ratios are those of CPU per request.
type metric struct {
	column string // in the TSV header
	title  string
}

var metrics = []metric{
	{"rps", "requests/s ÷ segorigin's (higher is better)"},
	{"cpu_us_per_req", "server CPU per request ÷ segorigin's (lower is better)"},
	{"p99_ms", "p99 latency ÷ segorigin's (lower is better)"},
}

var colors = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

func main() {
	in := flag.String("in", "", "medians `TSV` written by compare.sh (FILE.tsv)")
	out := flag.String("o", "chart.svg", "SVG `file` to write")
	title := flag.String("title", "segorigin and its peers, medians relative to segorigin", "chart title")
	base := flag.String("base", "segorigin", "the `server` others are divided by")
	flag.Parse()
	if *in == "" {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*in, *out, *title, *base); err != nil {
		fmt.Fprintln(os.Stderr, "chart:", err)
		os.Exit(1)
	}
}

func run(in, out, title, base string) error {
	f, err := os.Open(in)
	if err != nil {
		return err
	}
	defer f.Close()
	m, err := readMedians(f)
	if err != nil {
		return fmt.Errorf("%s: %w", in, err)
	}
	w, err := os.Create(out)
	if err != nil {
		return err
	}
	bw := bufio.NewWriter(w)
	draw(bw, m, title, base)
	if err := bw.Flush(); err != nil {
		w.Close()
		return err
	}
	return w.Close()
}

func readMedians(r io.Reader) (*medians, error) {
	sc := bufio.NewScanner(r)
	if !sc.Scan() {
		return nil, errors.New("empty")
	}
	header := strings.Split(sc.Text(), "\t")
	if len(header) < 3 || header[0] != "workload" || header[1] != "server" {
		return nil, fmt.Errorf("header %q: want workload, server, metrics...", sc.Text())
	}
	m := &medians{value: map[[3]string]float64{}}
	seenW, seenS := map[string]bool{}, map[string]bool{}
	for line := 2; sc.Scan(); line++ {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != len(header) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", line, len(f), len(header))
		}
		w, s := f[0], f[1]
		if !seenW[w] {
			seenW[w] = true
			m.workloads = append(m.workloads, w)
		}
		if !seenS[s] {
			seenS[s] = true
			m.servers = append(m.servers, s)
		}
		for i := 2; i < len(f); i++ {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d, %s: %v", line, header[i], err)
			}
			m.value[[3]string{w, s, header[i]}] = v
		}
	}
	if len(m.workloads) == 0 {
		return nil, errors.New("no rows")
	}
	return m, sc.Err()
}

// ratio is a server's median over base's, or NaN when either is missing.
func (m *medians) ratio(w, s, base, col string) float64 {
	v, ok1 := m.value[[3]string{w, s, col}]
	b, ok2 := m.value[[3]string{w, base, col}]
	if !ok1 || !ok2 || b == 0 {
		return math.NaN()
	}
	return v / b
}

// Layout, in SVG user units.
const (
	width    = 960
	panelH   = 230
	top      = 60  // title and legend
	left     = 50  // y axis labels
	right    = 20  //
	gapPanel = 40  // between panels, for the panel title
	barGap   = 0.2 // fraction of a group left empty
)

func draw(w io.Writer, m *medians, title, base string) {
	height := top + len(metrics)*(panelH+gapPanel)
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		width, height, width, height)
	fmt.Fprintf(w, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(w, `<text x="%d" y="20" font-size="15" font-weight="bold">%s</text>`+"\n", left, html.EscapeString(title))
	for i, s := range m.servers {
		x := left + i*150
		fmt.Fprintf(w, `<rect x="%d" y="32" width="12" height="12" fill="%s"/><text x="%d" y="43">%s</text>`+"\n",
			x, colors[i%len(colors)], x+16, html.EscapeString(s))
	}
	for p, mt := range metrics {
		y0 := top + p*(panelH+gapPanel) + gapPanel // the panel's top
		panel(w, m, mt, base, y0)
	}
	fmt.Fprintln(w, "</svg>")
}

// panel draws one metric's bars between y0 and y0+panelH.
func panel(w io.Writer, m *medians, mt metric, base string, y0 int) {
	maxV := 1.0
	for _, wl := range m.workloads {
		for _, s := range m.servers {
			if r := m.ratio(wl, s, base, mt.column); !math.IsNaN(r) {
				maxV = math.Max(maxV, r)
			}
		}
	}
	maxV = niceCeil(maxV * 1.1)
	plotH := float64(panelH - 20) // room for workload labels
	plotW := float64(width - left - right)
	yOf := func(v float64) float64 { return float64(y0) + plotH*(1-v/maxV) }

	fmt.Fprintf(w, `<text x="%d" y="%d" font-weight="bold">%s</text>`+"\n", left, y0-8, html.EscapeString(mt.title))
	for _, t := range ticks(maxV) {
		y := yOf(t)
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", left, y, width-right, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" text-anchor="end">%g</text>`+"\n", left-4, y+4, t)
	}
	groupW := plotW / float64(len(m.workloads))
	barW := groupW * (1 - barGap) / float64(len(m.servers))
	for g, wl := range m.workloads {
		gx := float64(left) + float64(g)*groupW + groupW*barGap/2
		for i, s := range m.servers {
			r := m.ratio(wl, s, base, mt.column)
			if math.IsNaN(r) {
				continue
			}
			x, y := gx+float64(i)*barW, yOf(r)
			fmt.Fprintf(w, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s %s: %.2f</title></rect>`+"\n",
				x, y, barW-2, yOf(0)-y, colors[i%len(colors)], html.EscapeString(wl), html.EscapeString(s), r)
			fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle" font-size="10">%.2f</text>`+"\n", x+barW/2-1, y-3, r)
		}
		fmt.Fprintf(w, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", gx+groupW*(1-barGap)/2, yOf(0)+15, html.EscapeString(wl))
	}
	fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black" stroke-dasharray="4 3"/>`+"\n", left, yOf(1), width-right, yOf(1))
	fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="black"/>`+"\n", left, yOf(0), width-right, yOf(0))
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten, or a half step
// below it.
func niceCeil(v float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, k := range []float64{1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10} {
		if k*p >= v {
			return k * p
		}
	}
	return 10 * p
}

// ticks returns about five round values from 0 to max.
func ticks(max float64) []float64 {
	step := niceCeil(max / 5)
	var t []float64
	for v := 0.0; v <= max+step/1000; v += step {
		t = append(t, math.Round(v*1000)/1000)
	}
	return t
}
