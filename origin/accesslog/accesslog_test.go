package accesslog

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"segorigin/origin/cmcd"
)

func testEntry(t *testing.T) *Entry {
	t.Helper()
	d, err := cmcd.Parse(`br=3200,bs,ot=v,sf=h,sid="6e2fb550",nor="seg2.ts",nrr="0-99",pr=1.5`)
	if err != nil {
		t.Fatal(err)
	}
	return &Entry{
		Time:         time.Date(2026, 12, 1, 9, 30, 15, 123456789, time.FixedZone("", 3600)),
		Client:       []byte("192.0.2.7"),
		Method:       []byte("GET"),
		Path:         []byte("/t/…/hls/ts/seg1.ts"),
		Query:        []byte("CMCD=br%3D3200"),
		Proto:        []byte("HTTP/1.1"),
		Host:         []byte("origin.example"),
		Status:       206,
		Bytes:        100,
		Range:        []byte("bytes=0-99"),
		Duration:     1420 * time.Microsecond,
		Via:          "sendfile",
		Cache:        "hit",
		Referer:      []byte("https://player.example/"),
		UserAgent:    []byte(`Mozilla/5.0 "quoted" \ ` + "\x01"),
		TokenKeyID:   "k1",
		TokenExpires: "1796000000",
		CMCD:         &d,
	}
}

func TestCombined(t *testing.T) {
	got := string(Combined.Append(nil, testEntry(t)))
	want := `192.0.2.7 - - [01/Dec/2026:09:30:15 +0100] "GET /t/…/hls/ts/seg1.ts?CMCD=br%3D3200 HTTP/1.1" 206 100 "https://player.example/" "Mozilla/5.0 \x22quoted\x22 \x5C \x01"` + "\n"
	if got != want {
		t.Errorf("Combined.Append =\n%s\nwant\n%s", got, want)
	}
}

// TestCombinedEmpty: absent headers are "-", as nginx writes them; invalid
// UTF-8 is escaped.
func TestCombinedEmpty(t *testing.T) {
	e := &Entry{Time: time.Unix(0, 0).UTC(), Client: []byte("::1"), Method: []byte("GET"), Path: []byte("/a\xff"), Proto: []byte("HTTP/1.0"), Status: 404, Bytes: 14}
	got := string(Combined.Append(nil, e))
	want := `::1 - - [01/Jan/1970:00:00:00 +0000] "GET /a\xFF HTTP/1.0" 404 14 "-" "-"` + "\n"
	if got != want {
		t.Errorf("Combined.Append =\n%s\nwant\n%s", got, want)
	}
}

// TestCombinedRefusedRequest: the request line of a request refused before
// it was parsed shows as nginx's $request does: the parts that arrived,
// with no space for a missing one, and "-" when no line arrived.
func TestCombinedRefusedRequest(t *testing.T) {
	for _, tt := range []struct {
		method, path, query, proto, want string
	}{
		{"", "", "", "", `"-"`},
		{"\x16\x03\x01", "", "", "", `"\x16\x03\x01"`},
		{"GET", "/", "", "", `"GET /"`},
		{"GET", "/a", "b=c", "", `"GET /a?b=c"`},
		{"GET", "", "", "HTTP/1.1", `"GET  HTTP/1.1"`},
		{"PRI", "*", "", "HTTP/2.0", `"PRI * HTTP/2.0"`},
	} {
		e := &Entry{Time: time.Unix(0, 0).UTC(), Client: []byte("::1"), Method: []byte(tt.method), Path: []byte(tt.path),
			Query: []byte(tt.query), Proto: []byte(tt.proto), Status: 400, Bytes: 16}
		want := `::1 - - [01/Jan/1970:00:00:00 +0000] ` + tt.want + ` 400 16 "-" "-"` + "\n"
		if got := string(Combined.Append(nil, e)); got != want {
			t.Errorf("Combined.Append(%q %q %q %q) =\n%s\nwant\n%s", tt.method, tt.path, tt.query, tt.proto, got, want)
		}
	}
}

// TestJSONDecodes: a line is one valid JSON object with every field, of
// the documented type.
func TestJSONDecodes(t *testing.T) {
	line := JSON.Append(nil, testEntry(t))
	if line[len(line)-1] != '\n' || strings.Count(string(line), "\n") != 1 {
		t.Fatalf("JSON line %q: want exactly one trailing newline", line)
	}
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", line, err)
	}
	want := map[string]any{
		"time": "2026-12-01T08:30:15.123456Z", "client": "192.0.2.7", "method": "GET",
		"path": "/t/…/hls/ts/seg1.ts", "query": "CMCD=br%3D3200", "proto": "HTTP/1.1", "host": "origin.example",
		"status": 206.0, "bytes": 100.0, "range": "bytes=0-99", "duration": 0.00142, "via": "sendfile",
		"cache": "hit", "referer": "https://player.example/", "user_agent": "Mozilla/5.0 \"quoted\" \\ \x01",
		"token_kid": "k1", "token_exp": 1796000000.0,
		"cmcd": map[string]any{"br": 3200.0, "bs": true, "ot": "v", "sf": "h", "sid": "6e2fb550",
			"nor": "seg2.ts", "nrr": "0-99", "pr": 1.5},
		"cmcd_malformed": false,
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("JSON line %s\ndecodes to %v\nwant       %v", line, got, want)
	}
}

// TestJSONEmpty: absent values keep their field and type.
func TestJSONEmpty(t *testing.T) {
	line := JSON.Append(nil, &Entry{Path: []byte("/\xff\u2028"), Status: 400})
	var got map[string]any
	if err := json.Unmarshal(line, &got); err != nil {
		t.Fatalf("json.Unmarshal(%s): %v", line, err)
	}
	if got["token_exp"] != nil || !reflect.DeepEqual(got["cmcd"], map[string]any{}) || got["path"] != "/\ufffd\u2028" || got["query"] != "" {
		t.Errorf("JSON of an empty entry %s: want token_exp null, cmcd {}, path \"/\\ufffd\\u2028\", query \"\"", line)
	}
}

func TestAppendAllocs(t *testing.T) {
	full, empty := testEntry(t), &Entry{Status: 200}
	buf := make([]byte, 0, 2048)
	for _, f := range []Format{Combined, JSON} {
		for _, e := range []*Entry{full, empty} {
			if n := testing.AllocsPerRun(100, func() { buf = f.Append(buf[:0], e) }); n != 0 {
				t.Errorf("%v.Append(%+v): %v allocations, want 0", f, e, n)
			}
		}
	}
}

func TestParseFormat(t *testing.T) {
	for name, want := range map[string]Format{"combined": Combined, "json": JSON} {
		if got, err := ParseFormat(name); got != want || err != nil {
			t.Errorf("ParseFormat(%q) = %v, %v; want %v, nil", name, got, err, want)
		}
	}
	if _, err := ParseFormat("text"); err == nil {
		t.Errorf("ParseFormat(\"text\"): no error")
	}
}

// TestFileReopen: after the file is renamed and Reopen called, lines go to
// a new file of the original name; the renamed one keeps what came before.
func TestFileReopen(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.Write([]byte("before\n"))
	if err := os.Rename(path, path+".1"); err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("after rename\n"))
	if err := f.Reopen(); err != nil {
		t.Fatalf("Reopen: %v", err)
	}
	f.Write([]byte("after reopen\n"))
	for name, want := range map[string]string{path + ".1": "before\nafter rename\n", path: "after reopen\n"} {
		if b, err := os.ReadFile(name); err != nil || string(b) != want {
			t.Errorf("%s = %q, %v; want %q", filepath.Base(name), b, err, want)
		}
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := f.Write([]byte("x\n")); err == nil {
		t.Errorf("Write after Close: no error")
	}
}

// TestFileReopenConcurrent: writers racing with Reopen lose no line and
// split none (run with -race), written a line at a time or buffered (a
// buffer that fills every few lines, and a flush timer that races with
// both).
func TestFileReopenConcurrent(t *testing.T) {
	for name, b := range map[string]Buffer{"unbuffered": {}, "buffered": {Size: 64, Flush: time.Millisecond}} {
		t.Run(name, func(t *testing.T) { reopenConcurrent(t, b) })
	}
}

func reopenConcurrent(t *testing.T, b Buffer) {
	dir := t.TempDir()
	path := filepath.Join(dir, "access.log")
	f, err := OpenBuffered(path, b)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const writers, lines = 4, 200
	done := make(chan struct{})
	for w := 0; w < writers; w++ {
		go func() {
			defer func() { done <- struct{}{} }()
			for i := 0; i < lines; i++ {
				if _, err := f.Write([]byte("0123456789\n")); err != nil {
					t.Errorf("Write: %v", err)
					return
				}
			}
		}()
	}
	for i := 0; i < 5; i++ {
		os.Rename(path, path+"."+string(rune('1'+i)))
		if err := f.Reopen(); err != nil {
			t.Errorf("Reopen: %v", err)
		}
	}
	for w := 0; w < writers; w++ {
		<-done
	}
	if err := f.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	total := 0
	names, _ := filepath.Glob(path + "*")
	for _, name := range names {
		b, _ := os.ReadFile(name)
		for _, l := range strings.SplitAfter(string(b), "\n") {
			if l != "" && l != "0123456789\n" {
				t.Fatalf("%s holds a split line %q", name, l)
			}
		}
		total += strings.Count(string(b), "\n")
	}
	if total != writers*lines {
		t.Errorf("%d lines across %d files, want %d", total, len(names), writers*lines)
	}
}
