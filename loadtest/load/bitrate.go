package load

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ParseBitrate parses a bit rate in bits a second: a number, optionally
// with kbit, Mbit or Gbit (powers of 1000, as links are rated; any case,
// "/s" allowed after), e.g. "2000000", "2Mbit", "1.5mbit/s".
func ParseBitrate(s string) (float64, error) {
	num := strings.TrimSuffix(strings.ToLower(strings.TrimSpace(s)), "/s")
	mult := 1.0
	for _, u := range []struct {
		suffix string
		mult   float64
	}{{"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}, {"bit", 1}} {
		if n, ok := strings.CutSuffix(num, u.suffix); ok {
			num, mult = n, u.mult
			break
		}
	}
	v, err := strconv.ParseFloat(strings.TrimSpace(num), 64)
	if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, fmt.Errorf("bit rate %q: want bits a second, or a number with kbit, Mbit or Gbit", s)
	}
	return v * mult, nil
}

// FormatBitrate writes bits a second for people: "2 Mbit/s", "640 kbit/s".
func FormatBitrate(bps float64) string {
	switch {
	case bps >= 1e9:
		return strconv.FormatFloat(bps/1e9, 'g', 4, 64) + " Gbit/s"
	case bps >= 1e6:
		return strconv.FormatFloat(bps/1e6, 'g', 4, 64) + " Mbit/s"
	case bps >= 1e3:
		return strconv.FormatFloat(bps/1e3, 'g', 4, 64) + " kbit/s"
	case bps > 0:
		return strconv.FormatFloat(bps, 'g', 4, 64) + " bit/s"
	}
	return "unpaced"
}
