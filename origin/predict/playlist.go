package predict

import (
	"bytes"
	"errors"
	"strconv"
	"strings"
)

// MaxEntries bounds the segments one playlist may list here; a longer one
// is cut (read-ahead is a hint, never a reason to hold unbounded memory).
const MaxEntries = 1 << 16

// ErrNotMedia: the bytes are not an HLS media playlist (no #EXTM3U, or a
// master playlist that lists variants, not segments).
var ErrNotMedia = errors.New("predict: not an HLS media playlist")

type entryKey struct {
	name string
	off  int64
}

// Media is what a media playlist says: its segments in order.
type Media struct {
	Entries []Entry
	next    map[entryKey]int // entry key → index of the entry after it
}

// ParseMedia parses an HLS media playlist (RFC 8216 §4.3) named name (a
// clean relative path; segment URIs resolve against its directory).
// Segments whose URI is not a local path are skipped.
func ParseMedia(name string, data []byte) (*Media, error) {
	if !bytes.HasPrefix(data, []byte("#EXTM3U")) {
		return nil, ErrNotMedia
	}
	m := &Media{}
	lastEnd := map[string]int64{} // URI → end of its previous byte range
	var pending *Entry            // the next URI line's byte range, if any
	inSegment := false
	for len(data) > 0 && len(m.Entries) < MaxEntries {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte("\n"))
		l := strings.TrimSpace(string(line))
		switch {
		case l == "":
		case strings.HasPrefix(l, "#EXT-X-STREAM-INF"):
			return nil, ErrNotMedia
		case strings.HasPrefix(l, "#EXTINF:"):
			inSegment = true
		case strings.HasPrefix(l, "#EXT-X-BYTERANGE:"):
			// RFC 8216 §4.3.2.2: <n>[@<o>]; without o, "the sub-range
			// begins at the next byte following the sub-range of the
			// previous media segment" (of the same resource).
			n, o, ok := parseByteRange(strings.TrimPrefix(l, "#EXT-X-BYTERANGE:"))
			if !ok {
				pending = &Entry{Off: -2} // unusable: skip this segment
				continue
			}
			pending = &Entry{Off: o, Len: n}
		case strings.HasPrefix(l, "#"):
		case inSegment:
			inSegment = false
			e, ok := resolveEntry(name, l, pending, lastEnd)
			pending = nil
			if ok {
				m.Entries = append(m.Entries, e)
			}
		}
	}
	m.index()
	return m, nil
}

func resolveEntry(base, uri string, rng *Entry, lastEnd map[string]int64) (Entry, bool) {
	target, ok := Resolve(base, uri)
	if !ok {
		return Entry{}, false
	}
	e := Entry{Name: target, Off: 0, Len: -1}
	if rng != nil {
		switch {
		case rng.Off == -2:
			return Entry{}, false
		case rng.Off == -1:
			prev, seen := lastEnd[target]
			if !seen {
				return Entry{}, false // RFC 8216: o is required then
			}
			e.Off = prev
		default:
			e.Off = rng.Off
		}
		e.Len = rng.Len
		lastEnd[target] = e.Off + e.Len
	}
	return e, true
}

// parseByteRange parses "<n>[@<o>]"; o is -1 when absent.
func parseByteRange(s string) (n, o int64, ok bool) {
	ns, os, hasOff := strings.Cut(s, "@")
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || n <= 0 || n > 1<<40 {
		return 0, 0, false
	}
	o = -1
	if hasOff {
		if o, err = strconv.ParseInt(os, 10, 64); err != nil || o < 0 || o > 1<<50 {
			return 0, 0, false
		}
	}
	return n, o, true
}

func (m *Media) index() {
	m.next = make(map[entryKey]int, len(m.Entries))
	for i := 0; i+1 < len(m.Entries); i++ {
		k := entryKey{m.Entries[i].Name, m.Entries[i].Off}
		if _, dup := m.next[k]; !dup {
			m.next[k] = i + 1
		}
	}
}

// Next returns the entry after the one for name starting at off, if the
// playlist lists one.
func (m *Media) Next(name string, off int64) (Entry, bool) {
	i, ok := m.next[entryKey{name, off}]
	if !ok {
		return Entry{}, false
	}
	return m.Entries[i], true
}
