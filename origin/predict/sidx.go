package predict

import (
	"encoding/binary"
	"errors"
)

// ErrBox: the bytes are not a well-formed box of the kind asked for.
var ErrBox = errors.New("predict: malformed ISO BMFF box")

// MaxSubsegments bounds the references one sidx may give here.
const MaxSubsegments = 1 << 16

// ParseBoxHeader reads the header of the ISO BMFF box at the start of b
// (ISO/IEC 14496-12 §4.2): its four-character type, its whole size and the
// header's own length. Size 0 ("to the end of the file") is returned as 0.
func ParseBoxHeader(b []byte) (typ string, size, hdr int64, err error) {
	if len(b) < 8 {
		return "", 0, 0, ErrBox
	}
	size, hdr = int64(binary.BigEndian.Uint32(b)), 8
	typ = string(b[4:8])
	if size == 1 {
		if len(b) < 16 {
			return "", 0, 0, ErrBox
		}
		large := binary.BigEndian.Uint64(b[8:16])
		if large > 1<<62 {
			return "", 0, 0, ErrBox
		}
		size, hdr = int64(large), 16
	}
	if size != 0 && size < hdr {
		return "", 0, 0, ErrBox
	}
	return typ, size, hdr, nil
}

// ParseSidx parses the whole sidx box in b, found at file offset boxOff,
// into the byte spans of the subsegments it references, in order. Per
// §8.16.3 the first subsegment starts first_offset bytes after the end of
// the sidx box, and each follows the previous by its referenced_size.
func ParseSidx(b []byte, boxOff int64) ([]Entry, error) {
	typ, size, hdr, err := ParseBoxHeader(b)
	if err != nil || typ != "sidx" || size > int64(len(b)) || size == 0 {
		return nil, ErrBox
	}
	p := b[hdr:size]
	if len(p) < 12 {
		return nil, ErrBox
	}
	version := p[0]
	p = p[12:] // version+flags, reference_ID, timescale
	var first uint64
	switch {
	case version == 0 && len(p) >= 8:
		first, p = uint64(binary.BigEndian.Uint32(p[4:8])), p[8:]
	case version == 1 && len(p) >= 16:
		first, p = binary.BigEndian.Uint64(p[8:16]), p[16:]
	default:
		return nil, ErrBox
	}
	if len(p) < 4 || first > 1<<50 {
		return nil, ErrBox
	}
	count := int(binary.BigEndian.Uint16(p[2:4]))
	p = p[4:]
	if len(p) < 12*count || count > MaxSubsegments {
		return nil, ErrBox
	}
	off := boxOff + size + int64(first)
	spans := make([]Entry, 0, count)
	for i := range count {
		refSize := int64(binary.BigEndian.Uint32(p[12*i:]) & 0x7fffffff)
		spans = append(spans, Entry{Off: off, Len: refSize})
		off += refSize
	}
	return spans, nil
}

// NextSpan returns the first span that starts at or after end, the byte
// after the range just served: the subsegment a player reading in order
// asks for next.
func NextSpan(spans []Entry, end int64) (Entry, bool) {
	lo, hi := 0, len(spans)
	for lo < hi {
		mid := (lo + hi) / 2
		if spans[mid].Off < end {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo == len(spans) {
		return Entry{}, false
	}
	return spans[lo], true
}
