package accesslog

import (
	"strconv"
	"time"
	"unicode/utf8"

	"segorigin/origin/cmcd"
)

// appendJSON writes e as one JSON object. It is written by hand rather
// than with encoding/json so that a logged request costs no allocation
// and the field order is fixed; TestJSONDecodes checks it against
// encoding/json.
func appendJSON(dst []byte, e *Entry) []byte {
	dst = append(dst, `{"time":"`...)
	dst = e.Time.UTC().AppendFormat(dst, "2006-01-02T15:04:05.000000Z07:00")
	dst = append(dst, '"')
	dst = appendField(dst, "client", e.Client, maxClient)
	dst = appendField(dst, "method", e.Method, maxMethod)
	dst = appendField(dst, "path", e.Path, maxPath)
	dst = appendField(dst, "query", e.Query, maxQuery)
	dst = appendField(dst, "proto", e.Proto, maxProto)
	dst = appendField(dst, "host", e.Host, maxHost)
	dst = append(dst, `,"status":`...)
	dst = strconv.AppendInt(dst, int64(e.Status), 10)
	dst = append(dst, `,"bytes":`...)
	dst = strconv.AppendInt(dst, e.Bytes, 10)
	dst = appendField(dst, "range", e.Range, maxRange)
	dst = append(dst, `,"duration":`...)
	dst = appendSeconds(dst, e.Duration)
	dst = appendField(dst, "via", e.Via, maxShort)
	dst = appendField(dst, "cache", e.Cache, maxShort)
	dst = appendField(dst, "referer", e.Referer, maxReferer)
	dst = appendField(dst, "user_agent", e.UserAgent, maxUserAgent)
	dst = appendField(dst, "token_kid", e.TokenKeyID, maxShort)
	dst = append(dst, `,"token_exp":`...)
	if isDigits(e.TokenExpires) {
		dst = append(dst, e.TokenExpires...)
	} else {
		dst = append(dst, "null"...)
	}
	dst = append(dst, `,"cmcd":`...)
	dst = appendCMCD(dst, e.CMCD)
	dst = append(dst, `,"cmcd_malformed":`...)
	dst = strconv.AppendBool(dst, e.CMCDError)
	return append(dst, "}\n"...)
}

// isDigits reports whether s is a JSON-safe unsigned integer: 1 to 18
// digits, no leading zero (the token grammar's exp=).
func isDigits(s string) bool {
	if s == "" || len(s) > 18 || s[0] == '0' && len(s) > 1 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// appendSeconds writes d in seconds with microsecond precision.
func appendSeconds(dst []byte, d time.Duration) []byte {
	return strconv.AppendFloat(dst, d.Seconds(), 'f', 6, 64)
}

func appendField[T string | []byte](dst []byte, name string, v T, limit int) []byte {
	dst = append(append(append(dst, ",\""...), name...), "\":"...)
	return appendJSONString(dst, v, limit)
}

// appendCMCD writes the keys d holds as one object, each with its
// CTA-5004 name and its type: numbers, booleans, strings.
func appendCMCD(dst []byte, d *cmcd.Data) []byte {
	dst = append(dst, '{')
	if d == nil {
		return append(dst, '}')
	}
	first := true
	key := func(k cmcd.Key) {
		if !first {
			dst = append(dst, ',')
		}
		first = false
		dst = append(append(append(dst, '"'), k.String()...), "\":"...)
	}
	for _, f := range [...]struct {
		k cmcd.Key
		v int64
	}{
		{cmcd.KeyBL, d.BufferLength}, {cmcd.KeyBR, d.Bitrate}, {cmcd.KeyD, d.Duration},
		{cmcd.KeyDL, d.Deadline}, {cmcd.KeyMTP, d.Throughput}, {cmcd.KeyRTP, d.RequestedThroughput},
		{cmcd.KeyTB, d.TopBitrate}, {cmcd.KeyV, d.Version},
	} {
		if d.Has(f.k) {
			key(f.k)
			dst = strconv.AppendInt(dst, f.v, 10)
		}
	}
	if d.Has(cmcd.KeyPR) {
		key(cmcd.KeyPR)
		dst = strconv.AppendFloat(dst, d.PlaybackRate, 'f', -1, 64)
	}
	for _, f := range [...]struct {
		k cmcd.Key
		v bool
	}{{cmcd.KeyBS, d.BufferStarvation}, {cmcd.KeySU, d.Startup}} {
		if d.Has(f.k) {
			key(f.k)
			dst = strconv.AppendBool(dst, f.v)
		}
	}
	for _, f := range [...]struct {
		k     cmcd.Key
		v     string
		limit int
	}{
		{cmcd.KeyCID, d.ContentID, maxCMCDID}, {cmcd.KeySID, d.SessionID, maxCMCDID},
		{cmcd.KeyNOR, d.NextObject, maxCMCDNext}, {cmcd.KeyNRR, d.NextRange, maxCMCDNext},
		{cmcd.KeyOT, d.ObjectType.String(), maxShort},
		{cmcd.KeySF, d.StreamingFormat.String(), maxShort}, {cmcd.KeyST, d.StreamType.String(), maxShort},
	} {
		if d.Has(f.k) {
			key(f.k)
			dst = appendJSONString(dst, f.v, f.limit)
		}
	}
	return append(dst, '}')
}

// appendJSONString writes s as a JSON string (RFC 8259 §7): '"', '\\' and
// control bytes escaped, invalid UTF-8 as U+FFFD, and U+2028/U+2029
// escaped as encoding/json does, so a line is safe for JavaScript too. The
// string's content is cut at limit bytes (see limits.go).
func appendJSONString[T string | []byte](dst []byte, s T, limit int) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	fc := newFieldCut(dst, limit)
	for i := 0; i < len(s); {
		fc.mark(dst)
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c == '\n':
				dst = append(dst, '\\', 'n')
			case c == '\r':
				dst = append(dst, '\\', 'r')
			case c == '\t':
				dst = append(dst, '\\', 't')
			case c < 0x20 || c == 0x7f:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
		} else {
			r, n := utf8.DecodeRuneInString(string(s[i:min(i+utf8.UTFMax, len(s))]))
			switch {
			case r == utf8.RuneError && n == 1:
				dst = append(dst, `\ufffd`...)
			case r == '\u2028' || r == '\u2029':
				dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			default:
				dst = append(dst, s[i:i+n]...)
			}
			i += n
		}
		if fc.over(dst) {
			dst = fc.cut(dst)
			break
		}
	}
	return append(dst, '"')
}
