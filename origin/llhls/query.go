package llhls

import (
	"bytes"
	"errors"
	"strconv"
)

// Errors of ParseQuery: each is a 400 (§6.2.5.2 for ErrPartWithoutMSN;
// a directive whose value is not of its type is a malformed request).
var (
	ErrPartWithoutMSN = errors.New("llhls: _HLS_part without _HLS_msn")
	ErrBadDirective   = errors.New("llhls: malformed delivery directive")
)

// Skip is the _HLS_skip directive (§6.2.5.1).
type Skip uint8

const (
	SkipNone Skip = iota // no _HLS_skip
	SkipYes              // _HLS_skip=YES: skip segments
	SkipV2               // _HLS_skip=v2: skip segments and old EXT-X-DATERANGE tags
)

// Request is a request's Delivery Directives (§6.2.5).
type Request struct {
	MSN, Part       int64
	HasMSN, HasPart bool
	Skip            Skip
}

// Any reports whether the request carries a directive.
func (r Request) Any() bool { return r.HasMSN || r.HasPart || r.Skip != SkipNone }

// ParseQuery reads the directives from a request's raw query (the bytes
// after "?"). Other parameters are ignored. The names and values of the
// directives are ASCII the spec spells out, so no percent-decoding is
// done: an encoded value is malformed.
func ParseQuery(query []byte) (Request, error) {
	var r Request
	for len(query) > 0 {
		var pair []byte
		pair, query, _ = bytes.Cut(query, []byte("&"))
		if !bytes.HasPrefix(pair, []byte("_HLS_")) {
			continue
		}
		name, value, _ := bytes.Cut(pair, []byte("="))
		var ok bool
		switch string(name) {
		case "_HLS_msn":
			r.MSN, ok = decimal(value)
			r.HasMSN = true
		case "_HLS_part":
			r.Part, ok = decimal(value)
			r.HasPart = true
		case "_HLS_skip":
			switch string(value) {
			case "YES":
				r.Skip, ok = SkipYes, true
			case "v2":
				r.Skip, ok = SkipV2, true
			}
		default:
			continue
		}
		if !ok {
			return Request{}, ErrBadDirective
		}
	}
	// §6.2.5.2: "If the Playlist URI contains an _HLS_part directive but
	// no _HLS_msn directive, the Server MUST return Bad Request".
	if r.HasPart && !r.HasMSN {
		return Request{}, ErrPartWithoutMSN
	}
	return r, nil
}

// decimal reads a decimal-integer (§4.2) that fits an int64.
func decimal(b []byte) (int64, bool) {
	n, err := strconv.ParseUint(string(b), 10, 63)
	return int64(n), err == nil
}
