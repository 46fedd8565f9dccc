package load

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/url"
	"strconv"
	"strings"
)

// HLSPlan walks an HLS title the way a player does: fetch the playlist; if
// it is a multivariant (master) playlist, fetch one of its renditions (each
// session picks one at random); then fetch the init section (EXT-X-MAP) and
// every segment in order, as a Range GET where the playlist gives
// EXT-X-BYTERANGE. At the end it starts over from the first playlist, as the
// next viewer would.
type HLSPlan struct {
	// Path is the playlist's path below the server (e.g.
	// "/w4/p00.m3u8" or "/hls/byterange/master.m3u8"), or an absolute URL.
	Path string
}

func (p HLSPlan) String() string { return "HLS " + p.Path }

func (p HLSPlan) walker(base string, rng *rand.Rand) walker {
	u := p.Path
	if !strings.Contains(u, "://") {
		u = base + "/" + strings.TrimPrefix(u, "/")
	}
	return &hlsWalker{first: u, rng: rng}
}

type hlsWalker struct {
	first string
	rng   *rand.Rand
	queue []step // requests still to make in this walk
}

func (w *hlsWalker) next() step {
	if len(w.queue) == 0 {
		return step{url: w.first, n: -1, size: -1, keep: true}
	}
	s := w.queue[0]
	w.queue = w.queue[1:]
	return s
}

func (w *hlsWalker) got(s step, body []byte) error {
	base, err := url.Parse(s.url)
	if err != nil {
		return err
	}
	pl, err := parsePlaylist(base, body)
	if err != nil {
		return fmt.Errorf("%s: %w", s.url, err)
	}
	if len(pl.variants) > 0 {
		v := pl.variants[w.rng.IntN(len(pl.variants))]
		w.queue = append(w.queue[:0], step{url: v, n: -1, size: -1, keep: true})
		return nil
	}
	w.queue = append(w.queue[:0], pl.segments...)
	return nil
}

// mediaPlaylist is what a walk needs from a playlist.
type mediaPlaylist struct {
	variants []string // multivariant playlist: rendition URLs
	segments []step   // media playlist: init sections and segments, in order
}

var errNotPlaylist = errors.New("not an HLS playlist (no #EXTM3U)")

// parsePlaylist reads the tags a VOD walk needs (RFC 8216 §4.4):
// EXT-X-STREAM-INF and EXT-X-MEDIA URIs of a multivariant playlist, and the
// EXT-X-MAP, EXT-X-BYTERANGE and URI lines of a media playlist. A
// BYTERANGE without an offset continues where the previous range of the
// same resource ended (§4.4.4.2).
func parsePlaylist(base *url.URL, body []byte) (mediaPlaylist, error) {
	var pl mediaPlaylist
	sc := bufio.NewScanner(bytes.NewReader(body))
	if !sc.Scan() || strings.TrimSpace(sc.Text()) != "#EXTM3U" {
		return pl, errNotPlaylist
	}
	var (
		streamInf bool      // the next URI line is a rendition
		rng       *[2]int64 // pending EXT-X-BYTERANGE: length, offset
		lastEnd   = map[string]int64{}
		lastMap   string
	)
	resolve := func(ref string) (string, error) { return resolveRef(base, ref) }
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case line == "":
		case strings.HasPrefix(line, "#EXT-X-STREAM-INF:"):
			streamInf = true
		case strings.HasPrefix(line, "#EXT-X-MEDIA:"):
			if ref := attr(line, "URI"); ref != "" {
				u, err := resolve(ref)
				if err != nil {
					return pl, err
				}
				pl.variants = append(pl.variants, u)
			}
		case strings.HasPrefix(line, "#EXT-X-MAP:"):
			u, err := resolve(attr(line, "URI"))
			if err != nil {
				return pl, err
			}
			s, err := mapStep(u, attr(line, "BYTERANGE"))
			if err != nil {
				return pl, err
			}
			if key := fmt.Sprint(s.url, s.off, s.n); key != lastMap {
				pl.segments = append(pl.segments, s)
				lastMap = key
			}
		case strings.HasPrefix(line, "#EXT-X-BYTERANGE:"):
			n, off, ok := parseByteRange(strings.TrimPrefix(line, "#EXT-X-BYTERANGE:"))
			if !ok {
				return pl, fmt.Errorf("bad %q", line)
			}
			rng = &[2]int64{n, off}
		case strings.HasPrefix(line, "#"):
		default:
			u, err := resolve(line)
			if err != nil {
				return pl, err
			}
			if streamInf {
				pl.variants = append(pl.variants, u)
				streamInf = false
				continue
			}
			s := step{url: u, n: -1, size: -1}
			if rng != nil {
				s.n, s.off = rng[0], rng[1]
				if s.off < 0 {
					s.off = lastEnd[u]
				}
				lastEnd[u] = s.off + s.n
				rng = nil
			}
			pl.segments = append(pl.segments, s)
		}
	}
	if err := sc.Err(); err != nil {
		return pl, err
	}
	if len(pl.variants) == 0 && len(pl.segments) == 0 {
		return pl, errors.New("playlist lists no renditions and no segments")
	}
	return pl, nil
}

// resolveRef is ref resolved against the playlist's URL.
func resolveRef(base *url.URL, ref string) (string, error) {
	u, err := base.Parse(ref)
	if err != nil {
		return "", err
	}
	return u.String(), nil
}

// mapStep is the fetch of an EXT-X-MAP's init section at URL u, with its
// BYTERANGE attribute br (empty: the whole resource; an offset is
// required, RFC 8216 §4.4.4.5).
func mapStep(u, br string) (step, error) {
	s := step{url: u, n: -1, size: -1}
	if br != "" {
		n, off, ok := parseByteRange(br)
		if !ok || off < 0 {
			return s, fmt.Errorf("bad EXT-X-MAP BYTERANGE %q", br)
		}
		s.off, s.n = off, n
	}
	return s, nil
}

// parseByteRange parses "n[@o]"; o is -1 when absent.
func parseByteRange(s string) (n, off int64, ok bool) {
	ns, offStr, hasOff := strings.Cut(strings.TrimSpace(s), "@")
	n, err := strconv.ParseInt(ns, 10, 64)
	if err != nil || n <= 0 {
		return 0, 0, false
	}
	off = -1
	if hasOff {
		if off, err = strconv.ParseInt(offStr, 10, 64); err != nil || off < 0 {
			return 0, 0, false
		}
	}
	return n, off, true
}

// attr returns a tag's attribute value, unquoted (RFC 8216 §4.2). Values
// here never hold commas inside quotes that matter: URI and BYTERANGE are
// quoted strings, read up to their closing quote.
func attr(line, name string) string {
	_, list, _ := strings.Cut(line, ":")
	for list != "" {
		k, rest, ok := strings.Cut(list, "=")
		if !ok {
			return ""
		}
		var v string
		if strings.HasPrefix(rest, `"`) {
			end := strings.IndexByte(rest[1:], '"')
			if end < 0 {
				return ""
			}
			v, rest = rest[1:1+end], rest[2+end:]
			rest = strings.TrimPrefix(rest, ",")
		} else {
			v, rest, _ = strings.Cut(rest, ",")
		}
		if strings.TrimSpace(k) == name {
			return v
		}
		list = rest
	}
	return ""
}
