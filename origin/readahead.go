package origin

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
	"sync/atomic"
	"time"
	"unsafe"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/valyala/fasthttp"

	"segorigin/cache"
	"segorigin/origin/cmcd"
	"segorigin/origin/coldread"
	"segorigin/origin/predict"
	"segorigin/ranges"
)

// ReadAheadConfig says what to read ahead. Read-ahead runs on the cold
// readers (Config.ColdReaders): Readers must be 0 when they are off.
type ReadAheadConfig struct {
	// Readers is how many cold readers may read ahead at once; the others
	// only serve waiting requests. 0 turns read-ahead off.
	Readers int
	// Queue bounds predictions waiting for a reader; more are dropped.
	Queue int
	// MaxBytes bounds what one prediction reads (a longer object is read
	// ahead up to it).
	MaxBytes int64
	// The sources, each on by default: the next segment of the HLS media
	// playlist that lists the one served (Playlist), its next
	// EXT-X-BYTERANGE span (ByteRange), the next DASH SegmentTemplate
	// number (Template), the next sidx subsegment of an on-demand file
	// (Sidx), and the object CMCD nor/nrr names (CMCD).
	Playlist, ByteRange, Template, Sidx, CMCD bool
}

// raSource names where a prediction came from.
type raSource int

const (
	srcPlaylist raSource = iota
	srcByteRange
	srcTemplate
	srcSidx
	srcCMCD
	numSources
)

func (s raSource) String() string {
	return [...]string{"playlist", "byterange", "template", "sidx", "cmcd"}[s]
}

// raRefusal is why a prediction was dropped before anything was read: a
// read-ahead may read only what the request that prompted it could have
// fetched itself, and a client's hint must not make the server read the
// same bytes again and again.
type raRefusal int

const (
	refusedOutsideRoot  raRefusal = iota // not a clean name inside the root (a nor that climbs, names a host, or is malformed)
	refusedHidden                        // a segment starts with '.' (hidden files are never served)
	refusedUnauthorized                  // the request's token (or public prefix) does not cover it
	refusedSymlink                       // it resolves, through a symlink, outside the root or to a hidden file
	refusedRepeated                      // a CMCD hint inside what read-ahead just read for that file
	numRefusals
)

func (r raRefusal) String() string {
	return [...]string{"outside_root", "hidden", "unauthorized", "symlink", "repeated"}[r]
}

// ReadAheadCounters count predictions and what became of them.
type ReadAheadCounters[C any] struct {
	Predicted [numSources]C  // predictions handed to the pool, by source
	Dropped   C              // predictions the pool had no room for
	Refused   [numRefusals]C // predictions dropped before any read, by reason (ReadAheadRefusal names them)
	Missing   C              // predicted objects that do not exist (a numbering guess past the end)
	Resident  C              // predicted objects already resident: nothing to read
	Issued    C              // predictions read into the page cache
	Bytes     C              // bytes those reads covered
	Hit       C              // requests for a read-ahead object that found it resident
	Wasted    C              // requests for a read-ahead object that found it evicted again
	Unused    C              // read-ahead objects never requested before being forgotten
	Indexed   C              // playlists and sidx boxes parsed
	IndexErrs C              // playlists and sidx boxes that could not be read or parsed
}

// raCounters are read-ahead's live counters.
type raCounters = ReadAheadCounters[atomic.Int64]

const (
	raIssuedMax   = 8192             // read-ahead objects remembered until requested
	raIndexMax    = 4096             // directories and files whose playlists / sidx are remembered
	raIndexTTL    = 30 * time.Second // re-read a directory's playlists after this even without an event
	raPlaylistMax = 1 << 20          // largest playlist read
	raPlaylists   = 32               // most playlists read per directory
	raSidxMax     = 1 << 20          // largest sidx read
	raBoxesMax    = 16               // top-level boxes walked looking for the sidx
)

// readAhead predicts, from what the media says, the object a player asks
// for next, and makes it resident on the cold readers in the background.
// Its state is three bounded LRUs, each safe for concurrent use.
type readAhead struct {
	cfg   ReadAheadConfig
	stats *raCounters

	// What it reads through and checks against, given by New: it
	// reads as a request would, confined to the root, on the cold
	// readers, and only what the request's token opens.
	cold      *coldPath
	cache     *cache.Cache
	root      *mediaRoot
	admit     *admission
	now       func() time.Time
	dotfiles  bool // -serve-dotfiles
	followOut bool // -follow-symlinks

	dirs   *lru.Cache[string, *dirIndex]   // directory → what its playlists say
	sidx   *lru.Cache[string, *sidxIndex]  // file → its subsegments
	issued *lru.Cache[raKey, bool]         // read-ahead objects not yet requested (value: read by us)
	hinted *lru.Cache[string, ranges.Span] // file → the span CMCD hints last made us read of it
}

// dirIndex is what the media playlists of one directory list. A nil media
// slice with building set means a reader is parsing them.
type dirIndex struct {
	media    []*predict.Media
	etags    map[string]string // playlist name → ETag when parsed
	built    time.Time
	building bool
}

// raKey names a read-ahead object as its request will: file and first byte.
type raKey struct {
	name string
	off  int64
}

type sidxIndex struct {
	etag  string
	spans []predict.Entry // nil: the file has no sidx
}

func newReadAhead(s *Server) (*readAhead, error) {
	ra := &readAhead{cfg: s.cfg.ReadAhead, stats: &s.stats.ReadAhead,
		cold: s.cold, cache: s.cache, root: s.root, admit: s.admit, now: s.cfg.Now,
		dotfiles: s.cfg.ServeDotfiles, followOut: s.cfg.FollowSymlinks}
	var err error
	if ra.dirs, err = lru.New[string, *dirIndex](raIndexMax); err != nil {
		return nil, err
	}
	if ra.sidx, err = lru.New[string, *sidxIndex](raIndexMax); err != nil {
		return nil, err
	}
	if ra.hinted, err = lru.New[string, ranges.Span](raIssuedMax); err != nil {
		return nil, err
	}
	ra.issued, err = lru.NewWithEvict(raIssuedMax, func(_ raKey, loaded bool) {
		if loaded {
			ra.stats.Unused.Add(1)
		}
	})
	return ra, err
}

// raRequest is the request a prediction comes from: what it is checked
// against (see permitted).
type raRequest struct {
	ctx *fasthttp.RequestCtx
	g   grant // what authorized it
}

// served is called for every GET body the cold path checked: it scores
// earlier predictions against this request and predicts the next one
// (for a whole body, once per raRepeat: repeated). g is what authorized
// the request; every prediction must pass the same check (permitted).
func (ra *readAhead) served(ctx *fasthttp.RequestCtx, name string, k kind, h *cache.Handle, sp ranges.Span, resident bool, g grant) {
	req := raRequest{ctx: ctx, g: g}
	if sp.Start == 0 && sp.Length == h.Size && ra.repeated(h) {
		if k == kindSegment {
			ra.hint(req, name) // the player's own, per request
		}
		return
	}
	key := raKey{name, sp.Start}
	if loaded, ok := ra.issued.Peek(key); ok && loaded {
		// Its request came: score it once, and keep it listed (as not
		// read by us) so that it is not predicted again at once. The
		// eviction callback counts only values still true as unused, and
		// Add of a present key replaces the value without calling it.
		ra.issued.Add(key, false)
		if resident {
			ra.stats.Hit.Add(1)
		} else {
			ra.stats.Wasted.Add(1)
		}
	}
	switch k {
	case kindPlaylist:
		ra.playlistServed(name, h.ETag)
		return
	case kindSegment:
	default:
		return
	}
	ra.hint(req, name)
	listed := false
	if ra.cfg.Playlist || ra.cfg.ByteRange {
		var t predict.Entry
		if t, listed = ra.fromPlaylist(name, sp.Start); listed && t.Name != "" {
			src := srcPlaylist
			if t.Len >= 0 {
				src = srcByteRange
			}
			if (src == srcPlaylist && ra.cfg.Playlist) || (src == srcByteRange && ra.cfg.ByteRange) {
				ra.submit(req, t, src)
			}
		}
	}
	if ra.cfg.Sidx && !listed && (sp.Start != 0 || sp.Length != h.Size) && onDemandFile(name) {
		if t, ok := ra.fromSidx(name, h, sp); ok {
			ra.submit(req, t, srcSidx)
		}
	}
	if ra.cfg.Template && !listed && sp.Start == 0 && sp.Length == h.Size {
		// Only for whole files a playlist does not list: the numbering
		// is a guess, and a playlist that lists the file knows better.
		var buf [256]byte
		if next, ok := predict.AppendNextNumber(buf[:0], name); ok {
			// Looked up through the scratch; copied only when submitted.
			key := unsafe.String(unsafe.SliceData(next), len(next))
			if !ra.issued.Contains(raKey{key, 0}) {
				ra.submit(req, predict.Entry{Name: string(next), Off: 0, Len: -1}, srcTemplate)
			}
		}
	}
}

// hint submits what the request's CMCD data names next (nor, nrr), with
// -readahead-cmcd.
func (ra *readAhead) hint(req raRequest, name string) {
	if !ra.cfg.CMCD {
		return
	}
	switch t, ok, bad := ra.fromCMCD(req.ctx, name); {
	case ok:
		ra.submit(req, t, srcCMCD)
	case bad:
		// A nor that climbs above the root, names another host or
		// cannot be parsed.
		ra.stats.Refused[refusedOutsideRoot].Add(1)
	}
}

// raRepeat is how long a whole body's predictions stand for the same
// version of its file: another request for it within raRepeat predicts
// nothing from the media again (see repeated).
const raRepeat = time.Second

// repeated reports whether h's whole body was served within raRepeat,
// and notes this request as the latest if not. What the media says
// follows a whole body (the playlist's next entry, the next number) was
// predicted by that request, and submitted or refused then; and if a
// read-ahead had loaded it, that request scored it. A part or segment
// fetched by many players, or by a CDN's shields, one after the other,
// found the same predictions already issued each time, at the price of
// four lookups in locked LRUs and a name's guess a request (about a
// microsecond, 4% of a 64 KiB part's CPU). A request's CMCD hint is its
// own and is still read (hint). Left unscored: a file served, then
// evicted and loaded by a read-ahead, then asked for again, all within
// raRepeat. A clock that stepped back starts the window again.
func (ra *readAhead) repeated(h *cache.Handle) bool {
	now := ra.now().UnixNano()
	if last := h.Predicted(); last != 0 && now >= last && now-last < int64(raRepeat) {
		return true
	}
	h.SetPredicted(now)
	return false
}

// submit hands a prediction to the pool unless it was made recently or
// req could not have fetched it.
func (ra *readAhead) submit(req raRequest, t predict.Entry, src raSource) {
	if ra.issued.Contains(raKey{t.Name, t.Off}) {
		return
	}
	if r, ok := ra.permitted(req, t.Name); !ok {
		ra.stats.Refused[r].Add(1)
		return
	}
	if src == srcCMCD {
		var fresh bool
		if t, fresh = ra.unhinted(t); !fresh {
			ra.stats.Refused[refusedRepeated].Add(1)
			return
		}
	}
	switch err := ra.cold.pool.Go(coldread.Key{Name: t.Name, Off: t.Off}, func() { ra.prefetch(t) }); {
	case err == nil:
		ra.stats.Predicted[src].Add(1)
	case errors.Is(err, coldread.ErrBusy):
		ra.stats.Dropped.Add(1)
		if src == srcCMCD {
			ra.hinted.Remove(t.Name) // nothing was read: a later hint may try again
		}
	}
}

// permitted reports whether req could have fetched name itself, and if
// not, why: a clean name inside the root, no hidden segment (unless
// ServeDotfiles), and covered by the request's token or a public prefix.
// Where a symlink leads is checked by the open (mediaRoot.open), as for a
// request; prefetch counts its refusals.
func (ra *readAhead) permitted(req raRequest, name string) (raRefusal, bool) {
	if !cleanName(name) {
		return refusedOutsideRoot, false
	}
	if !ra.dotfiles && hiddenSegment(name) {
		return refusedHidden, false
	}
	if a := ra.admit.pol.of(req.ctx).auth; a != nil && !a.permits(req.ctx, req.g, name, ra.admit.client.ip(req.ctx), ra.now()) {
		return refusedUnauthorized, false
	}
	return 0, true
}

// cleanName reports whether name is a key cleanPath could have produced:
// relative, no empty, "." or ".." segment, no control byte. Every source
// resolves its names this way already (predict.Resolve); this is the check
// that does not trust them to.
func cleanName(name string) bool {
	if name == "" {
		return false
	}
	for seg := range strings.SplitSeq(name, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; c < 0x20 || c == 0x7f {
			return false
		}
	}
	return true
}

// unhinted trims a CMCD hint to the bytes no earlier hint for the same
// file made read-ahead read (or queue), and remembers them; ok false: it
// names nothing new. A client varying nrr by a byte must not have the same
// span read again each time. An open-ended hint covers MaxBytes, or to
// the end of the file when the cache knows its size.
func (ra *readAhead) unhinted(t predict.Entry) (predict.Entry, bool) {
	end := t.Off + ra.cfg.MaxBytes
	if t.Len >= 0 {
		end = t.Off + min(t.Len, ra.cfg.MaxBytes)
	}
	if h, _, err, ready := ra.cache.TryAcquire(t.Name); ready && err == nil {
		end = min(end, h.Size)
		h.Release()
	}
	start := t.Off
	if had, ok := ra.hinted.Get(t.Name); ok && had.Start <= start && start <= had.Start+had.Length {
		start = max(start, had.Start+had.Length)
		if start >= end {
			return t, false
		}
		ra.hinted.Add(t.Name, ranges.Span{Start: had.Start, Length: end - had.Start})
	} else {
		ra.hinted.Add(t.Name, ranges.Span{Start: start, Length: max(end-start, 0)})
	}
	return predict.Entry{Name: t.Name, Off: start, Len: max(end-start, 0)}, true
}

// prefetch runs on a cold reader: it makes t resident (up to MaxBytes)
// and remembers it, to score the request that should follow.
func (ra *readAhead) prefetch(t predict.Entry) {
	h, err := ra.cache.Acquire(t.Name)
	if err != nil {
		switch {
		case errors.Is(err, errHiddenPath), isRootEscape(err):
			// A symlink out of the root or to a hidden file: the
			// request would have been 404 too.
			ra.stats.Refused[refusedSymlink].Add(1)
		case errors.Is(err, fs.ErrNotExist):
			ra.stats.Missing.Add(1)
		}
		ra.issued.Add(raKey{t.Name, t.Off}, false)
		return
	}
	defer h.Release()
	n := t.Len
	if n < 0 || t.Off+n > h.Size {
		n = h.Size - t.Off
	}
	n = min(n, ra.cfg.MaxBytes)
	if n <= 0 {
		return
	}
	if ok, err := coldread.Resident(h.Fd(), t.Off, n, h.Size); err == nil && ok {
		ra.stats.Resident.Add(1)
		ra.issued.Add(raKey{t.Name, t.Off}, false)
		return
	}
	if err := ra.cold.pool.Load(h.Fd(), t.Off, n); err != nil {
		ra.cold.loadFailed(t.Name, t.Off, err)
		return
	}
	ra.stats.Issued.Add(1)
	ra.stats.Bytes.Add(n)
	ra.issued.Add(raKey{t.Name, t.Off}, true)
}

// fromCMCD reads CTA-5004 nor/nrr (package cmcd parses the CMCD query
// argument and the CMCD-Request header, where the keys belong): nor names
// the next object (relative to this one), nrr its range, or this object's
// next range when nor is absent. badName says a nor was given that names
// nothing inside the root.
func (ra *readAhead) fromCMCD(ctx *fasthttp.RequestCtx, name string) (t predict.Entry, ok, badName bool) {
	hdrs := [4][]byte{ctx.Request.Header.Peek("CMCD-Request")}
	var d cmcd.Data
	if present, _ := readCMCD(ctx, &hdrs, &d); !present {
		return predict.Entry{}, false, false
	}
	object, nrr, ok := d.Next()
	if !ok {
		return predict.Entry{}, false, false
	}
	t = predict.Entry{Name: name, Off: 0, Len: -1}
	if object != "" {
		if t.Name, ok = predict.Resolve(name, object); !ok {
			return predict.Entry{}, false, true
		}
	}
	if nrr != "" {
		if t.Off, t.Len, ok = predict.ParseNextRange(nrr); !ok {
			return predict.Entry{}, false, false
		}
	} else if object == "" {
		return predict.Entry{}, false, false
	}
	return t, true, false
}

// fromPlaylist looks the served span up in its directory's playlists.
// listed says a playlist lists it (t.Name is "" at the end of the list).
// Without an index yet it asks a reader to build one and says nothing.
func (ra *readAhead) fromPlaylist(name string, off int64) (t predict.Entry, listed bool) {
	dir := path.Dir(name)
	di, ok := ra.dirs.Get(dir)
	if !ok || (!di.building && ra.now().Sub(di.built) > raIndexTTL) {
		ra.buildDir(dir)
		return predict.Entry{}, false
	}
	for _, m := range di.media {
		if next, ok := m.Next(name, off); ok {
			return next, true
		}
		if last := m.Entries; len(last) > 0 && last[len(last)-1].Name == name && last[len(last)-1].Off == off {
			return predict.Entry{}, true
		}
	}
	return predict.Entry{}, false
}

// buildDir asks a reader to parse dir's media playlists, unless one is.
func (ra *readAhead) buildDir(dir string) {
	if di, ok := ra.dirs.Peek(dir); ok && di.building {
		return
	}
	ra.dirs.Add(dir, &dirIndex{building: true})
	if err := ra.cold.pool.Go(coldread.Key{Name: dir + "/", Off: -1}, func() { ra.indexDir(dir) }); err != nil && !errors.Is(err, coldread.ErrQueued) {
		ra.dirs.Remove(dir)
	}
}

// indexDir runs on a cold reader: read and parse dir's playlists.
func (ra *readAhead) indexDir(dir string) {
	di := &dirIndex{etags: map[string]string{}, built: ra.now()}
	names, err := ra.listPlaylists(dir, raPlaylists)
	if err != nil {
		ra.stats.IndexErrs.Add(1)
	}
	for _, pl := range names {
		data, etag, err := ra.readSmall(pl, raPlaylistMax)
		if err != nil {
			ra.stats.IndexErrs.Add(1)
			continue
		}
		di.etags[pl] = etag
		m, err := predict.ParseMedia(pl, data)
		if err != nil {
			continue // a master playlist, or not a playlist at all
		}
		ra.stats.Indexed.Add(1)
		di.media = append(di.media, m)
	}
	ra.dirs.Add(dir, di)
}

// playlistServed re-reads a directory's playlists when one of them was
// served with another ETag than the one parsed (a live playlist grew).
// A player fetches the playlist before its segments: index its directory
// now, so the first segment request already finds the next one.
func (ra *readAhead) playlistServed(name, etag string) {
	if !ra.cfg.Playlist && !ra.cfg.ByteRange {
		return
	}
	dir := path.Dir(name)
	di, ok := ra.dirs.Peek(dir)
	if !ok {
		ra.buildDir(dir)
		return
	}
	// Only a playlist that was parsed and changed: one beyond the
	// per-directory cap was never parsed and must not rebuild every time.
	if old, parsed := di.etags[name]; parsed && !di.building && old != etag {
		ra.buildDir(dir)
	}
}

// onDemandFile: the extensions a DASH SegmentBase (on-demand) file has,
// whose sidx indexes the whole file. Segments (.m4s) may carry a sidx too,
// but it indexes only themselves.
func onDemandFile(name string) bool {
	switch path.Ext(name) {
	case ".mp4", ".m4a", ".m4v", ".cmfv", ".cmfa":
		return true
	}
	return false
}

// fromSidx finds the subsegment after sp in name's sidx; without an index
// yet it asks a reader to build one.
func (ra *readAhead) fromSidx(name string, h *cache.Handle, sp ranges.Span) (predict.Entry, bool) {
	si, ok := ra.sidx.Get(name)
	if !ok || si.etag != h.ETag {
		ra.sidx.Add(name, &sidxIndex{etag: h.ETag}) // marker: being read
		etag := h.ETag
		if err := ra.cold.pool.Go(coldread.Key{Name: name, Off: -1}, func() { ra.indexSidx(name, etag) }); err != nil && !errors.Is(err, coldread.ErrQueued) {
			ra.sidx.Remove(name)
		}
		return predict.Entry{}, false
	}
	next, ok := predict.NextSpan(si.spans, sp.Start+sp.Length)
	next.Name = name
	return next, ok
}

// indexSidx runs on a cold reader: walk name's top-level boxes to its
// sidx and parse it.
func (ra *readAhead) indexSidx(name, etag string) {
	h, err := ra.cache.Acquire(name)
	if err != nil {
		ra.sidx.Remove(name)
		return
	}
	defer h.Release()
	var hdr [16]byte
	for off, i := int64(0), 0; i < raBoxesMax && off < h.Size; i++ {
		n, err := h.File.ReadAt(hdr[:], off)
		if err != nil && !errors.Is(err, io.EOF) {
			break
		}
		typ, size, _, err := predict.ParseBoxHeader(hdr[:n])
		if err != nil || size == 0 {
			break
		}
		if typ == "moof" || typ == "mdat" {
			break // media before any sidx: not an indexed on-demand file
		}
		if typ != "sidx" {
			off += size
			continue
		}
		if size > raSidxMax {
			break
		}
		box := make([]byte, size)
		if _, err := h.File.ReadAt(box, off); err != nil {
			break
		}
		spans, err := predict.ParseSidx(box, off)
		if err != nil {
			break
		}
		ra.stats.Indexed.Add(1)
		ra.sidx.Add(name, &sidxIndex{etag: etag, spans: spans})
		return
	}
	ra.sidx.Add(name, &sidxIndex{etag: etag}) // no sidx: remember, to not look again
}

// forget drops what the index says about name (the watcher saw it change).
func (ra *readAhead) forget(name string) {
	ra.sidx.Remove(name)
	if strings.HasSuffix(name, ".m3u8") {
		ra.dirs.Remove(path.Dir(name))
	}
}

// forgetAll drops every index.
func (ra *readAhead) forgetAll() {
	ra.sidx.Purge()
	ra.dirs.Purge()
}

// listPlaylists names up to max .m3u8 files in dir (a clean relative
// directory, "." for the root), under the same confinement as opens.
func (ra *readAhead) listPlaylists(dir string, max int) ([]string, error) {
	var fsys fs.FS = ra.root.now().dir.FS()
	if ra.followOut {
		fsys = os.DirFS(ra.root.now().real)
	}
	ents, err := fs.ReadDir(fsys, dir)
	var names []string
	for _, e := range ents {
		if len(names) == max {
			break
		}
		if !ra.dotfiles && strings.HasPrefix(e.Name(), ".") {
			continue // never served, so never read for an index either
		}
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".m3u8") {
			names = append(names, path.Join(dir, e.Name()))
		}
	}
	return names, err
}

// readSmall reads the whole of name, refusing files over max bytes, and
// returns its ETag with it.
func (ra *readAhead) readSmall(name string, max int64) ([]byte, string, error) {
	h, err := ra.cache.Acquire(name)
	if err != nil {
		return nil, "", err
	}
	defer h.Release()
	if h.Size > max {
		return nil, "", fmt.Errorf("%s: %d bytes, more than %d", name, h.Size, max)
	}
	b := make([]byte, h.Size)
	n, err := h.File.ReadAt(b, 0)
	if errors.Is(err, io.EOF) {
		err = nil
	}
	return b[:n], h.ETag, err
}

// ReadAheadSource names the source counted at index i of
// ReadAheadStats.Predicted, for metric labels.
func ReadAheadSource(i int) string { return raSource(i).String() }

// ReadAheadRefusal names the reason counted at index i of
// ReadAheadStats.Refused, for metric labels.
func ReadAheadRefusal(i int) string { return raRefusal(i).String() }

// readAheadMetrics declares read-ahead's metrics.
func readAheadMetrics(t *table, st *ReadAheadStats) {
	t.each(t.counter("readahead_predicted_total", "Read-ahead predictions handed to the cold readers, by source.", "source"),
		st.Predicted[:], ReadAheadSource)
	events := t.counter("readahead_total", "What became of read-ahead: issued (read into the page cache), hit, wasted (evicted before its request), unused (never requested), resident (nothing to read), missing, dropped (no room).", "outcome")
	t.byLabel(events, map[string]int64{
		"issued": st.Issued, "hit": st.Hit, "wasted": st.Wasted, "unused": st.Unused,
		"resident": st.Resident, "missing": st.Missing, "dropped": st.Dropped,
	})
	t.one("readahead_bytes_total", "Bytes read ahead.", st.Bytes)
	t.each(t.counter("readahead_refused_total", "Read-ahead predictions dropped before any read: outside_root, hidden, unauthorized (the request's token or a public prefix does not cover it), symlink (leads out of the root or to a hidden file), repeated (a CMCD hint inside what was just read).", "reason"),
		st.Refused[:], ReadAheadRefusal)
	indexed := t.counter("readahead_indexed_total", "Playlists and sidx boxes parsed for read-ahead, and those that failed.", "result")
	t.add(indexed, st.Indexed, "ok")
	t.add(indexed, st.IndexErrs, "error")
}
