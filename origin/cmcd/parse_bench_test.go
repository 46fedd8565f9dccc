package cmcd

import (
	"net/url"
	"testing"
)

// BenchmarkParse: the CTA-5004 example with every key.
//
//	go test -run '^$' -bench BenchmarkParse -benchmem ./origin/cmcd
func BenchmarkParse(b *testing.B) {
	payload, _ := url.QueryUnescape(specQuery)
	b.ReportAllocs()
	for b.Loop() {
		var d Data
		if err := d.Add(payload); err != nil {
			b.Fatal(err)
		}
	}
}
