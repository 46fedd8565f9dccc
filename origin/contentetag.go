package origin

import (
	"errors"

	"segorigin/cache"
	"segorigin/origin/coldread"
	"segorigin/origin/etag"
)

// ETagMode is where strong validators come from (Config.ETag).
type ETagMode string

const (
	// ETagSizeMtime: from size and mtime (cache.ETag). Copies on several
	// origins agree only if every copy kept its mtime.
	ETagSizeMtime ETagMode = "size-mtime"
	// ETagContent: a hash of the bytes (origin/etag), computed once per
	// version of a file off the request path and kept in the cache entry
	// and in an extended attribute. Copies agree whatever their mtimes.
	ETagContent ETagMode = "content"
)

// hashOff is the coldread.Key offset of a hashing job (reads use
// offsets >= 0), so that concurrent requests for one file share one hash.
const hashOff = -1

// hashBuf is the read size of a hash: large reads keep the syscall count
// of a 1 GiB file at a thousand.
const hashBuf = 1 << 20

// errContentUnknown: the file's hash could not be had for this request
// (it changed while hashed, or its read failed). Answered 503.
var errContentUnknown = errors.New("origin: content validator not known yet")

// ContentCounters count content validators (-etag content).
type ContentCounters[C any] struct {
	Hashed      C // files hashed
	HashBytes   C // bytes they held
	HashNanos   C // time spent hashing
	FromAttr    C // validators read from the extended attribute (no hash)
	AttrFailed  C // attributes that could not be written (kept in memory only)
	Changed     C // hashes thrown away: the file changed while hashed
	Refused     C // requests answered 503: the hash was not known by -cold-deadline
	ReadErrors  C // hashes that failed to read the file
	AttrReadErr C // attributes that could not be read (hashed instead)
}

// content returns h's content validator when it is known without a hash:
// kept with the cache entry, or (when block is true: one fgetxattr) in the
// file's extended attribute. nil: not known yet.
func (s *Server) content(h *cache.Handle, block bool) *cache.Content {
	if c := h.Content(); c != nil || !block {
		return c
	}
	t, ok, err := etag.Load(h.Fd(), handleVersion(h))
	if err != nil {
		s.stats.Content.AttrReadErr.Add(1)
		return nil
	}
	if !ok {
		return nil
	}
	s.stats.Content.FromAttr.Add(1)
	h.SetContent(&cache.Content{ETag: t.ETag, Changed: t.Changed})
	return h.Content()
}

// hashContent returns h's content validator, hashing the file on a cold
// reader when it is not known: the request waits at most -cold-deadline
// (then coldread.ErrDeadline: 503 with Retry-After; the hash goes on, and
// a later request finds it). Without cold readers the hash runs here.
func (s *Server) hashContent(h *cache.Handle) (*cache.Content, error) {
	if s.cold == nil {
		s.hash(h)
	}
	// Twice at most: a request may join the hash of an older version of
	// the same name, which leaves h's unknown.
	for range 2 {
		if c := h.Content(); c != nil {
			return c, nil
		}
		if s.cold == nil {
			break
		}
		err := s.cold.Do(coldread.Key{Name: h.Name, Off: hashOff}, false, func() {
			// The request may stop waiting and release h meanwhile:
			// the job holds its own reference, if h is still open.
			if !h.Retain() {
				return
			}
			defer h.Release()
			s.hash(h)
		})
		switch {
		case errors.Is(err, coldread.ErrClosed):
			s.hash(h) // draining: no readers left, and this request may block
		case err != nil:
			s.stats.Content.Refused.Add(1)
			return nil, err
		}
	}
	if c := h.Content(); c != nil {
		return c, nil
	}
	s.stats.Content.Refused.Add(1)
	return nil, errContentUnknown
}

// hash computes h's validator, keeps it with h and stores it in the
// file's extended attribute. It blocks on storage: it runs on a cold
// reader (or where the request may block).
func (s *Server) hash(h *cache.Handle) {
	if h.Content() != nil {
		return
	}
	v := handleVersion(h)
	start := s.cfg.Now()
	buf := make([]byte, min(h.Size, hashBuf)+1) // one per version of a file: rare, and a pool would pin 1 MiB per reader
	tag, err := etag.Sum(h.File, h.Size, buf)
	s.stats.Content.HashNanos.Add(int64(s.cfg.Now().Sub(start)))
	if err != nil {
		s.stats.Content.ReadErrors.Add(1)
		if s.coldLog.Allow() {
			s.log.Warn("content hash failed", "path", s.loggable(h.Name), "err", err)
		}
		return
	}
	fi, err := h.File.Stat()
	if err != nil || etag.VersionOf(fi) != v {
		// Written meanwhile (etag rule 2): the settle rule holds the
		// file back until it is still again.
		s.stats.Content.Changed.Add(1)
		return
	}
	s.stats.Content.Hashed.Add(1)
	s.stats.Content.HashBytes.Add(h.Size)
	h.SetContent(&cache.Content{ETag: tag, Changed: v.Ctime})
	err = etag.Store(h.Fd(), v, etag.Tag{ETag: tag, Changed: v.Ctime}, func() int64 { return s.cfg.Now().UnixNano() })
	if err != nil {
		s.stats.Content.AttrFailed.Add(1)
		if s.attrLog.Allow() {
			s.log.Warn("content ETag kept in memory only: a restart hashes the file again (segorigin etag DIR stores them ahead)",
				"path", s.loggable(h.Name), "err", err, "suppressed", s.attrLog.Suppressed())
		}
	}
}

// handleVersion is the version of the file h has open.
func handleVersion(h *cache.Handle) etag.Version {
	return etag.Version{Size: h.Size, ModTime: h.ModTime.UnixNano(), Ctime: h.ChangeTime()}
}

// contentMetrics declares content validators' metrics.
func contentMetrics(t *table, st *ContentStats) {
	events := t.counter("content_etag_total", "Content validators (-etag content): hashed, attr_loaded (read from the extended attribute), attr_unwritable (kept in memory only), attr_read_error, changed (file written while hashed), read_error, refused (503: not known by -cold-deadline).", "event")
	t.byLabel(events, map[string]int64{
		"hashed": st.Hashed, "attr_loaded": st.FromAttr, "attr_unwritable": st.AttrFailed, "attr_read_error": st.AttrReadErr,
		"changed": st.Changed, "read_error": st.ReadErrors, "refused": st.Refused,
	})
	t.one("content_hash_bytes_total", "Bytes hashed for content validators.", st.HashBytes)
	t.addFloat(t.counter("content_hash_seconds_total", "Time spent hashing for content validators."), seconds(st.HashNanos))
}
