package cmcd

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// ErrMalformed wraps every error Add returns: an entry that breaks the
// grammar or the type of its key. The entries that parsed are kept.
var ErrMalformed = errors.New("cmcd: malformed")

// MaxStringLen bounds nor (CTA-5004 gives it no limit; a path longer than
// this is no hint worth keeping). cid and sid are bounded by the
// specification's 64 characters.
const (
	MaxStringLen = 1024
	maxIDLen     = 64
	maxIntDigits = 15 // RFC 8941 §3.3.1 sf-integer
)

// Key is a reserved CMCD key.
type Key uint8

// The reserved keys of CTA-5004 §3.3, in the order of their names.
const (
	KeyBL  Key = iota // bl: buffer length, ms
	KeyBR             // br: encoded bitrate, kbps
	KeyBS             // bs: buffer starvation since the last request
	KeyCID            // cid: content ID
	KeyD              // d: object duration, ms
	KeyDL             // dl: deadline, ms
	KeyMTP            // mtp: measured throughput, kbps
	KeyNOR            // nor: next object request, a relative URL
	KeyNRR            // nrr: next range request, "first-last"
	KeyOT             // ot: object type
	KeyPR             // pr: playback rate
	KeyRTP            // rtp: requested maximum throughput, kbps
	KeySF             // sf: streaming format
	KeySID            // sid: session ID
	KeyST             // st: stream type
	KeySU             // su: startup
	KeyTB             // tb: top bitrate, kbps
	KeyV              // v: CMCD version
	numKeys
)

var keyNames = [numKeys]string{"bl", "br", "bs", "cid", "d", "dl", "mtp", "nor", "nrr", "ot", "pr", "rtp", "sf", "sid", "st", "su", "tb", "v"}

// String returns the key as it appears on the wire.
func (k Key) String() string {
	if k < numKeys {
		return keyNames[k]
	}
	return "Key(" + strconv.Itoa(int(k)) + ")"
}

// lookupKey returns the reserved key named name.
func lookupKey(name string) (Key, bool) {
	switch name { // a switch, which the compiler searches by length and bytes
	case "bl":
		return KeyBL, true
	case "br":
		return KeyBR, true
	case "bs":
		return KeyBS, true
	case "cid":
		return KeyCID, true
	case "d":
		return KeyD, true
	case "dl":
		return KeyDL, true
	case "mtp":
		return KeyMTP, true
	case "nor":
		return KeyNOR, true
	case "nrr":
		return KeyNRR, true
	case "ot":
		return KeyOT, true
	case "pr":
		return KeyPR, true
	case "rtp":
		return KeyRTP, true
	case "sf":
		return KeySF, true
	case "sid":
		return KeySID, true
	case "st":
		return KeyST, true
	case "su":
		return KeySU, true
	case "tb":
		return KeyTB, true
	case "v":
		return KeyV, true
	}
	return 0, false
}

// Data is one request's CMCD, merged from every place it came in. A field
// is meaningful only when Has reports its key.
type Data struct {
	present uint32 // bit k set: Key k was given

	BufferLength        int64   // bl, ms
	Bitrate             int64   // br, kbps
	Duration            int64   // d, ms
	Deadline            int64   // dl, ms
	Throughput          int64   // mtp, kbps
	RequestedThroughput int64   // rtp, kbps
	TopBitrate          int64   // tb, kbps
	Version             int64   // v
	PlaybackRate        float64 // pr

	BufferStarvation bool // bs
	Startup          bool // su

	ContentID  string // cid
	SessionID  string // sid
	NextObject string // nor, as sent (percent-encoded); see Next
	NextRange  string // nrr, "first-last" with either end possibly empty

	ObjectType      ObjectType      // ot
	StreamingFormat StreamingFormat // sf
	StreamType      StreamType      // st
}

// Has reports whether key k was given.
func (d *Data) Has(k Key) bool { return d.present&(1<<k) != 0 }

// Empty reports whether no reserved key was given.
func (d *Data) Empty() bool { return d.present == 0 }

// Next returns the player's hint of its next request: the object (nor,
// percent-decoded, relative to the current request's URL; "" when the
// next range is of this same object) and the byte range (nrr, in the form
// of an RFC 9110 int-range or suffix-range without the "bytes=" unit; ""
// for the whole object). ok is false when the player gave neither.
func (d *Data) Next() (object, byteRange string, ok bool) {
	if !d.Has(KeyNOR) && !d.Has(KeyNRR) {
		return "", "", false
	}
	object = d.NextObject
	if u, err := url.PathUnescape(object); err == nil {
		object = u
	}
	return object, d.NextRange, true
}

// Parse parses one payload; see Add.
func Parse(payload string) (Data, error) {
	var d Data
	err := d.Add(payload)
	return d, err
}

// Add parses payload (the value of a CMCD header, or the percent-decoded
// value of the CMCD query parameter) into d, over what d already holds.
// Well-formed entries are kept even when others are not; the error, if
// any, names the first entry dropped and wraps ErrMalformed.
func (d *Data) Add(payload string) error {
	var first error
	for rest := payload; rest != ""; {
		var entry string
		var err error
		entry, rest, err = nextEntry(rest)
		if err == nil {
			err = d.addEntry(strings.TrimSpace(entry))
		}
		if err != nil && first == nil {
			first = err
		}
	}
	return first
}

// nextEntry splits payload at the first comma outside a quoted string.
func nextEntry(payload string) (entry, rest string, err error) {
	quoted := false
	for i := 0; i < len(payload); i++ {
		switch c := payload[i]; {
		case c == '\\' && quoted:
			i++ // the escaped byte cannot end the string or the entry
		case c == '"':
			quoted = !quoted
		case c == ',' && !quoted:
			return payload[:i], payload[i+1:], nil
		}
	}
	if quoted {
		return "", "", fmt.Errorf("%w: unterminated string in %.32q", ErrMalformed, payload)
	}
	return payload, "", nil
}

// addEntry parses one key[=value] into d.
func (d *Data) addEntry(entry string) error {
	if entry == "" {
		return nil // "a,,b" or a trailing comma: nothing to keep
	}
	name, value, hasValue := strings.Cut(entry, "=")
	k, reserved := lookupKey(name)
	if !reserved {
		if !validKeyName(name) {
			return fmt.Errorf("%w: key %.32q", ErrMalformed, name)
		}
		return nil // CTA-5004 §3.4: custom and future keys are ignored
	}
	if err := d.set(k, value, hasValue); err != nil {
		return fmt.Errorf("%w: %s=%.32s: %w", ErrMalformed, k, value, err)
	}
	d.present |= 1 << k
	return nil
}

// validKeyName: RFC 8941 §3.1.2 key, which CTA-5004 custom keys follow
// ("com.example-key" included).
func validKeyName(name string) bool {
	if name == "" || !(name[0] >= 'a' && name[0] <= 'z' || name[0] == '*') {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.' || c == '*') {
			return false
		}
	}
	return true
}

var (
	errType     = errors.New("wrong type")
	errTooLong  = errors.New("too long")
	errEnum     = errors.New("not a value the specification lists")
	errNotRange = errors.New("not a byte range")
)

// set stores value as key k's field, checked against k's type.
func (d *Data) set(k Key, value string, hasValue bool) error {
	switch k {
	case KeyBS, KeySU:
		b, err := parseBool(value, hasValue)
		if err != nil {
			return err
		}
		if k == KeyBS {
			d.BufferStarvation = b
		} else {
			d.Startup = b
		}
		return nil
	}
	if !hasValue {
		return errType
	}
	switch k {
	case KeyBL, KeyBR, KeyD, KeyDL, KeyMTP, KeyRTP, KeyTB, KeyV:
		n, err := parseInt(value)
		if err != nil {
			return err
		}
		*d.intField(k) = n
	case KeyPR:
		f, err := parseDecimal(value)
		if err != nil {
			return err
		}
		d.PlaybackRate = f
	case KeyOT, KeySF, KeyST:
		return d.setToken(k, value)
	case KeyCID, KeySID, KeyNOR, KeyNRR:
		s, err := parseString(value)
		if err != nil {
			return err
		}
		return d.setString(k, s)
	}
	return nil
}

func (d *Data) intField(k Key) *int64 {
	switch k {
	case KeyBL:
		return &d.BufferLength
	case KeyBR:
		return &d.Bitrate
	case KeyD:
		return &d.Duration
	case KeyDL:
		return &d.Deadline
	case KeyMTP:
		return &d.Throughput
	case KeyRTP:
		return &d.RequestedThroughput
	case KeyTB:
		return &d.TopBitrate
	}
	return &d.Version
}

func (d *Data) setToken(k Key, value string) error {
	switch k {
	case KeyOT:
		t := parseObjectType(value)
		if t == ObjectNone {
			return errEnum
		}
		d.ObjectType = t
	case KeySF:
		f := parseStreamingFormat(value)
		if f == FormatNone {
			return errEnum
		}
		d.StreamingFormat = f
	case KeyST:
		t := parseStreamType(value)
		if t == StreamNone {
			return errEnum
		}
		d.StreamType = t
	}
	return nil
}

func (d *Data) setString(k Key, s string) error {
	switch k {
	case KeyCID, KeySID:
		if len(s) > maxIDLen {
			return errTooLong
		}
		if k == KeyCID {
			d.ContentID = s
		} else {
			d.SessionID = s
		}
	case KeyNOR:
		if len(s) > MaxStringLen {
			return errTooLong
		}
		d.NextObject = s
	case KeyNRR:
		if !validRange(s) {
			return errNotRange
		}
		d.NextRange = s
	}
	return nil
}

// parseBool: CTA-5004 sends a true Boolean as the bare key and omits a
// false one; RFC 8941's ?1 and ?0, and true and false, are accepted too.
func parseBool(value string, hasValue bool) (bool, error) {
	if !hasValue {
		return true, nil
	}
	switch value {
	case "?1", "true":
		return true, nil
	case "?0", "false":
		return false, nil
	}
	return false, errType
}

// parseInt accepts 1 to 15 digits: every CMCD integer is a count, a size
// or a time, never negative.
func parseInt(value string) (int64, error) {
	if value == "" || len(value) > maxIntDigits {
		return 0, errType
	}
	var n int64
	for i := 0; i < len(value); i++ {
		c := value[i]
		if c < '0' || c > '9' {
			return 0, errType
		}
		n = n*10 + int64(c-'0')
	}
	return n, nil
}

// parseDecimal: RFC 8941 §3.3.2 sf-decimal, 1-12 integer digits and 1-3
// fraction digits, or an integer. A playback rate may be negative
// (rewind), so a leading "-" is allowed.
func parseDecimal(value string) (float64, error) {
	digits := strings.TrimPrefix(value, "-")
	whole, frac, hasFrac := strings.Cut(digits, ".")
	if whole == "" || len(whole) > 12 || hasFrac && (frac == "" || len(frac) > 3) {
		return 0, errType
	}
	for _, part := range []string{whole, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, errType
			}
		}
	}
	return strconv.ParseFloat(value, 64)
}

// parseString: RFC 8941 §3.3.3 sf-string, printable ASCII between double
// quotes, with \" and \\ the only escapes.
func parseString(value string) (string, error) {
	if len(value) < 2 || value[0] != '"' || value[len(value)-1] != '"' {
		return "", errType
	}
	inner := value[1 : len(value)-1]
	if strings.IndexByte(inner, '\\') < 0 {
		if !printable(inner) || strings.IndexByte(inner, '"') >= 0 {
			return "", errType
		}
		return inner, nil
	}
	var b strings.Builder
	for i := 0; i < len(inner); i++ {
		c := inner[i]
		if c == '\\' {
			if i+1 == len(inner) || inner[i+1] != '"' && inner[i+1] != '\\' {
				return "", errType
			}
			i++
			c = inner[i]
		} else if c == '"' || c < 0x20 || c > 0x7e {
			return "", errType
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

func printable(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// validRange: nrr is "<range-start>-<range-end>" of RFC 7233 §2.1, either
// end optional but not both, first <= last when both are given.
func validRange(s string) bool {
	first, last, ok := strings.Cut(s, "-")
	if !ok || first == "" && last == "" {
		return false
	}
	var f, l int64 = 0, -1
	var err error
	if first != "" {
		if f, err = parseInt(first); err != nil {
			return false
		}
	}
	if last != "" {
		if l, err = parseInt(last); err != nil {
			return false
		}
		return first == "" || f <= l
	}
	return true
}
