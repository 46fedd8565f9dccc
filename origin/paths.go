package origin

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"segorigin/internal/percent"
)

// Path errors. Each maps to a status in statusFor.
var (
	errBadPath     = errors.New("origin: malformed request path")
	errPathEscapes = errors.New("origin: request path climbs above the root")
	errDirPath     = errors.New("origin: request path names a directory")
	errHiddenPath  = errors.New("origin: request path has a segment starting with '.'")
	// errHiddenTarget is also fs.ErrNotExist, so that the cache remembers
	// it as a negative entry: for the client the file is not there.
	errHiddenTarget = fmt.Errorf("origin: a symlink on the path resolves to a segment starting with '.': %w: %w",
		errHiddenPath, fs.ErrNotExist)
)

// cleanPath turns a raw request path (as received, still percent-encoded)
// into a cache key: a slash-separated path relative to the media root, with
// no leading slash, no empty, "." or ".." segments.
//
// It is written by hand rather than with url.PathUnescape + path.Clean for
// two reasons: path.Clean silently clamps "/../x" to "/x", while an origin
// should refuse a path that tries to climb above its root (nginx answers 400
// too), and the decode must refuse NUL and other control bytes that no media
// file name carries. Percent-decoding happens before dot-segment removal, so
// "%2e%2e" and "%2f" are treated exactly like ".." and "/": they can only ever
// name something inside the root. Symlinks are the opener's concern (os.Root).
//
// A path whose last segment is empty, "." or ".." ("/a.m3u8/",
// "/a.m3u8/x/..") names a directory: it is refused with errDirPath, since
// directories are never served, so that a file is reachable under one
// cache key and not also under its name plus a trailing slash.
//
// scratch is working space; only the returned string survives.
func cleanPath(scratch []byte, raw []byte) (string, error) {
	b, err := cleanPathInto(scratch, raw)
	return string(b), err
}

// cleanPathInto is cleanPath returning the key in scratch's memory: the
// handler looks it up without allocating a string per request (see
// Server.route).
func cleanPathInto(scratch []byte, raw []byte) ([]byte, error) {
	if len(raw) == 0 || raw[0] != '/' {
		return nil, errBadPath
	}
	dec, err := percentDecode(scratch[:0], raw)
	if err != nil {
		return nil, err
	}
	dirPath := namesDirectory(dec)
	// Remove dot segments in place: out grows behind the read position.
	out := dec[:0]
	for i := 0; i < len(dec); {
		for i < len(dec) && dec[i] == '/' {
			i++
		}
		j := i
		for j < len(dec) && dec[j] != '/' {
			j++
		}
		seg := dec[i:j]
		i = j
		switch {
		case len(seg) == 0, len(seg) == 1 && seg[0] == '.':
			continue
		case len(seg) == 2 && seg[0] == '.' && seg[1] == '.':
			k := lastSlash(out)
			if k < 0 && len(out) == 0 {
				return nil, errPathEscapes
			}
			out = out[:max(k, 0)]
			continue
		}
		if len(out) > 0 {
			out = append(out, '/')
		}
		out = append(out, seg...)
	}
	if dirPath {
		return nil, errDirPath
	}
	return out, nil
}

// namesDirectory reports whether a decoded path ends in a directory-only
// segment: empty (a trailing slash), "." or "..".
func namesDirectory(dec []byte) bool {
	last := dec[lastSlash(dec)+1:]
	return len(last) == 0 || string(last) == "." || string(last) == ".."
}

// hiddenSegment reports whether a cleaned path has a segment starting with
// '.': dotfiles and dot-directories (.env, .git/config, .htaccess) are
// deployment debris, never media, and are 404 unless ServeDotfiles.
func hiddenSegment(name string) bool {
	return strings.HasPrefix(name, ".") || strings.Contains(name, "/.")
}

// hiddenTarget applies hiddenSegment to where a file really is (real, every
// symlink resolved) rather than to the name it was asked for:
// "link-to-dotenv.txt -> .env" is as hidden as ".env". root is the media
// root's own real path. A target outside the root (FollowSymlinks) is
// hidden when any segment of its absolute path is.
func hiddenTarget(root, real string) bool {
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return hiddenSegment(filepath.ToSlash(real))
	}
	return rel != "." && hiddenSegment(filepath.ToSlash(rel))
}

func lastSlash(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '/' {
			return i
		}
	}
	return -1
}

// percentDecode appends the decoded form of raw to dst. A '%' not followed by
// two hex digits, and any decoded byte below 0x20 or 0x7f (NUL above all), is
// an error: such a path can only be an attack or a broken client.
func percentDecode(dst, raw []byte) ([]byte, error) {
	n := len(dst)
	dst, ok := percent.Decode(dst, raw)
	if !ok {
		return dst, errBadPath
	}
	for _, c := range dst[n:] {
		if c < 0x20 || c == 0x7f {
			return dst, errBadPath
		}
	}
	return dst, nil
}

// extOf returns the lower-case extension of name without the dot.
func extOf(name string) string {
	i := strings.LastIndexByte(name, '.')
	if i < 0 || strings.IndexByte(name[i:], '/') >= 0 {
		return ""
	}
	return strings.ToLower(name[i+1:])
}
