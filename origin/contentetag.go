package origin

import (
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

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

// contentTags makes and keeps content validators (-etag content): from
// the cache entry, the file's extended attribute, or a hash of its bytes
// on a cold reader. It takes from the server only what it needs.
type contentTags struct {
	cold     *coldread.Pool // hashes run on its readers; nil: where the request waits
	st       *ContentCounters[atomic.Int64]
	now      func() time.Time
	log      *slog.Logger
	loggable func(string) string
	hashLog  *rateLimitedLog // hashes that failed: shared with the cold reads' failures
	attrLog  rateLimitedLog  // validators that could not be stored, once per interval
}

func newContentTags(cfg Config, cold *coldread.Pool, st *ContentCounters[atomic.Int64], hashLog *rateLimitedLog, loggable func(string) string) *contentTags {
	t := &contentTags{cold: cold, st: st, now: cfg.Now, log: cfg.Logger, loggable: loggable, hashLog: hashLog}
	t.attrLog.Every, t.attrLog.Now = 10*time.Second, cfg.Now
	return t
}

// content returns h's content validator when it is known without a hash:
// kept with the cache entry, or (when block is true: one fgetxattr) in the
// file's extended attribute. nil: not known yet.
func (t *contentTags) content(h *cache.Handle, block bool) *cache.Content {
	if c := h.Content(); c != nil || !block {
		return c
	}
	stored, ok, err := etag.Load(h.Fd(), handleVersion(h))
	if err != nil {
		t.st.AttrReadErr.Add(1)
		return nil
	}
	if !ok {
		return nil
	}
	t.st.FromAttr.Add(1)
	h.SetContent(&cache.Content{ETag: stored.ETag, Changed: stored.Changed})
	return h.Content()
}

// hashContent returns h's content validator, hashing the file on a cold
// reader when it is not known: the request waits at most -cold-deadline
// (then coldread.ErrDeadline: 503 with Retry-After; the hash goes on, and
// a later request finds it). Without cold readers the hash runs here.
func (t *contentTags) hashContent(h *cache.Handle) (*cache.Content, error) {
	if t.cold == nil {
		t.hash(h)
	}
	// Twice at most: a request may join the hash of an older version of
	// the same name, which leaves h's unknown.
	for range 2 {
		if c := h.Content(); c != nil {
			return c, nil
		}
		if t.cold == nil {
			break
		}
		err := t.cold.Do(coldread.Key{Name: h.Name, Off: hashOff}, false, func() {
			// The request may stop waiting and release h meanwhile:
			// the job holds its own reference, if h is still open.
			if !h.Retain() {
				return
			}
			defer h.Release()
			t.hash(h)
		})
		switch {
		case errors.Is(err, coldread.ErrClosed):
			t.hash(h) // draining: no readers left, and this request may block
		case err != nil:
			t.st.Refused.Add(1)
			return nil, err
		}
	}
	if c := h.Content(); c != nil {
		return c, nil
	}
	t.st.Refused.Add(1)
	return nil, errContentUnknown
}

// hash computes h's validator, keeps it with h and stores it in the
// file's extended attribute. It blocks on storage: it runs on a cold
// reader (or where the request may block).
func (t *contentTags) hash(h *cache.Handle) {
	if h.Content() != nil {
		return
	}
	v := handleVersion(h)
	start := t.now()
	buf := make([]byte, min(h.Size, hashBuf)+1) // one per version of a file: rare, and a pool would pin 1 MiB per reader
	tag, err := etag.Sum(h.File, h.Size, buf)
	t.st.HashNanos.Add(int64(t.now().Sub(start)))
	if err != nil {
		t.st.ReadErrors.Add(1)
		if t.hashLog.Allow() {
			t.log.Warn("content hash failed", "path", t.loggable(h.Name), "err", err)
		}
		return
	}
	fi, err := h.File.Stat()
	if err != nil || etag.VersionOf(fi) != v {
		// Written meanwhile (etag rule 2): the settle rule holds the
		// file back until it is still again.
		t.st.Changed.Add(1)
		return
	}
	t.st.Hashed.Add(1)
	t.st.HashBytes.Add(h.Size)
	h.SetContent(&cache.Content{ETag: tag, Changed: v.Ctime})
	err = etag.Store(h.Fd(), v, etag.Tag{ETag: tag, Changed: v.Ctime}, func() int64 { return t.now().UnixNano() })
	if err != nil {
		t.st.AttrFailed.Add(1)
		if t.attrLog.Allow() {
			t.log.Warn("content ETag kept in memory only: a restart hashes the file again (segorigin etag DIR stores them ahead)",
				"path", t.loggable(h.Name), "err", err, "suppressed", t.attrLog.Suppressed())
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
