package origin

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/valyala/fasthttp"

	"segorigin/origin/predict"
)

// Preload hints (draft-pantos-hls-rfc8216bis §4.4.5.3): a client may ask
// for the part a playlist's EXT-X-PRELOAD-HINT names before the packager
// has written it. In a live directory, a request for a name that does not
// exist yet, or that is still being written, is held when the newest
// version of a live playlist in that directory hints at it: parked as a
// blocking reload is (liveWaits), listed under the part's own name, until
// the part is written whole, then answered with it. Three target
// durations of that playlist bound the wait (503 then, as a blocking
// reload's). Any other name is answered as before: 404, or the settle
// rule's 503.
//
// A directory is live while the newest version of a media playlist in it
// that the server has read has CAN-BLOCK-RELOAD=YES and no EXT-X-ENDLIST.
// A playlist is read for a request with delivery directives, and for a
// plain request when its bytes are held in memory (-inline-max): a
// low-latency player fetches the playlist before any part. When a name is
// missing in a live directory, its live playlists are read again as they
// are on disk now (from the cache, usually without a system call), so the
// hint is the packager's newest, not the one the server saw last.
//
// What wakes a held part: the watcher's event on its name (created,
// written) and any change of a playlist in its directory (the packager
// renames the playlist that lists the part once the part is whole: a
// close itself is no event the watcher sees). It is answered when the
// publishing rule finds the file whole: at once once its writer closed
// it where the kernel can tell (a read lease), else once -settle has
// passed since its last write, at the next event in the directory.

// errHintTimeout: a hinted part was not written whole in time.
var errHintTimeout = fmt.Errorf("origin: hinted part not written in time: %w", errLiveTimeout)

// liveKind is what a parked request waits for.
type liveKind uint8

const (
	liveReload liveKind = iota // a playlist that lists a segment or part (blocking reload)
	liveHint                   // a hinted part or segment to be written
	numLiveKinds
	// liveGrow: a stream of a growing file waiting for its next bytes
	// (grow.go), counted by GrowCounters rather than LiveCounters.
	liveGrow = numLiveKinds
)

func (k liveKind) String() string { return [...]string{"reload", "hint"}[k] }

// LiveCounters count the requests held for a playlist or a hinted part,
// by kind (LiveKindName).
type LiveCounters[C any] struct {
	Held     [numLiveKinds]C // parked now: a level, not a count
	Answered [numLiveKinds]C // parked, then answered with what they waited for
	TimedOut [numLiveKinds]C // parked, then answered 503 after three target durations
	Drained  [numLiveKinds]C // parked, then answered 503 by a drain
	// ClientLeft: parked, then let go when the client closed its
	// connection (the event loops see its FIN at once).
	ClientLeft [numLiveKinds]C
}

type liveCounters = LiveCounters[atomic.Int64]

// LiveKindName is the metric label of LiveCounters' index i: "reload" or
// "hint".
func LiveKindName(i int) string { return liveKind(i).String() }

func liveMetrics(t *table, st *LiveCounters[int64]) {
	t.each(t.gauge("live_held", "Requests held now: blocking playlist reloads (reload) and requests for a part a playlist hints at before it is written (hint).", "kind"), st.Held[:], LiveKindName)
	m := t.counter("live_held_total", "Held requests by how they ended: answered (what they waited for came), timed_out (503 after three target durations), drained (503 at shutdown), client_left (the client closed its connection first).", "kind", "outcome")
	for k := range numLiveKinds {
		t.add(m, st.Answered[k], k.String(), "answered")
		t.add(m, st.TimedOut[k], k.String(), "timed_out")
		t.add(m, st.Drained[k], k.String(), "drained")
		t.add(m, st.ClientLeft[k], k.String(), "client_left")
	}
}

// kind is what p waits for.
func (s *liveState) kind() liveKind {
	if s.hint {
		return liveHint
	}
	return liveReload
}

// finish counts the final answer of a request that was held.
func (lw *liveWaits) finish(p *plan) {
	if !p.live.held {
		return
	}
	k := p.live.kind()
	switch {
	case p.live.drained:
		lw.st.Drained[k].Add(1)
	case p.live.gaveUp:
		lw.st.TimedOut[k].Add(1)
	default:
		lw.st.Answered[k].Add(1)
	}
	p.live.held = false
}

// liveMaxDirs bounds the live directories remembered (past it the set
// starts over), liveMaxDirPlaylists the live playlists of one.
const (
	liveMaxDirs         = 1024
	liveMaxDirPlaylists = 8
)

// noteDirLocked keeps the directory of the playlist name listed as live
// while v, its newest version, says it is.
func (lw *liveWaits) noteDirLocked(name string, v *liveVersion) {
	dir := path.Dir(name)
	list := lw.dirs[dir]
	i := slices.Index(list, name)
	live := v.pl.CanBlockReload && !v.pl.EndList
	switch {
	case live && i < 0 && len(list) < liveMaxDirPlaylists:
		if len(lw.dirs) >= liveMaxDirs {
			lw.dirs = make(map[string][]string)
		}
		lw.dirs[dir] = append(list, name)
	case !live && i >= 0:
		if list = slices.Delete(list, i, i+1); len(list) == 0 {
			delete(lw.dirs, dir)
		} else {
			lw.dirs[dir] = list
		}
	}
}

// isLiveDir reports whether name's directory is live: a live playlist of
// it has been read, or it is under a live prefix.
func (lw *liveWaits) isLiveDir(name string) bool {
	dir := path.Dir(name)
	if lw.prefixes.limit(dir) > 0 {
		return true
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return len(lw.dirs[dir]) > 0
}

// playlistsIn is a copy of the live playlists of dir.
func (lw *liveWaits) playlistsIn(dir string) []string {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	return slices.Clone(lw.dirs[dir])
}

// takeHintsLocked unlists the hint waiters of the directory of name when
// name is a playlist: the packager's new playlist may follow the close of
// a part, which the watcher does not see.
func (lw *liveWaits) takeHintsLocked(name string) []*liveList {
	if lw.hintLists == 0 || !strings.HasSuffix(name, ".m3u8") {
		return nil
	}
	dir := path.Dir(name)
	var taken []*liveList
	for key, l := range lw.lists {
		if l.hint && path.Dir(key) == dir {
			lw.unlistLocked(key, l)
			taken = append(taken, l)
		}
	}
	return taken
}

// hints is what the playlist at name, of which v is a version, says a
// client may ask for before it exists, made once: the part its
// EXT-X-PRELOAD-HINT names, the name numbered after that one (the part
// after it), and the name numbered after its last whole segment (the
// segment whose parts are being written). None when the playlist cannot
// block.
func (v *liveVersion) hints(name string) []string {
	v.hintOnce.Do(func() {
		if !v.pl.CanBlockReload || v.pl.EndList {
			return
		}
		for _, ref := range [...]string{v.pl.PreloadHint, v.pl.LastURI} {
			n, ok := predict.Resolve(name, ref)
			if !ok {
				continue
			}
			if ref == v.pl.PreloadHint {
				v.hinted = append(v.hinted, n)
			}
			if next, ok := predict.NextNumber(n); ok {
				v.hinted = append(v.hinted, next)
			}
		}
	})
	return v.hinted
}

// notePlaylist reads the version of a playlist fetched without
// directives when its bytes are in memory (no I/O), so that its directory
// is known live before a hinted part is asked for, and a missing name in
// it is looked for again (stepOpen) and answered with
// -cache-control-notfound-live. Without the watcher too: nothing holds a
// request then (liveWaits.outcome), but a missing name is as likely to
// appear a moment later.
func (lv *liveSteps) notePlaylist(ctx *fasthttp.RequestCtx, p *plan) {
	if p.h.Bytes != nil {
		lv.liveVersion(ctx, p)
	}
}

// holdMissing is stepOpen's word on a name that does not exist: held
// (stepWait), suspended to read a playlist, answered 503 when its time is
// up, or stepNext: not hinted, answered as before.
func (lv *liveSteps) holdMissing(ctx *fasthttp.RequestCtx, p *plan, err error) stepResult {
	if !errors.Is(err, fs.ErrNotExist) {
		return stepNext
	}
	return lv.holdHinted(ctx, p)
}

// holdHinted holds a request for a name a live playlist hints at and that
// is not written whole yet. Once held, a request stays held, whatever the
// playlist says later, until the name is written or its time is up.
func (lv *liveSteps) holdHinted(ctx *fasthttp.RequestCtx, p *plan) stepResult {
	var limit int64
	if !p.live.hint {
		var res stepResult
		if limit, res = lv.hintedBy(p); limit == 0 {
			return res
		}
		p.live.hint = true
	}
	if res, held := lv.hold(ctx, p, limit, errHintTimeout); held {
		return res
	}
	p.live.hint, p.live.prefix = false, false // nothing would wake it: answered as before
	return stepNext
}

// hintedBy finds the live playlist of p's directory that hints at p's
// name, as it is on disk now: the wait's bound in seconds (three of its
// target durations), or 0 with stepNext (none does) or stepSuspend (a
// playlist is to be opened or read, which noBlock forbids).
func (lv *liveSteps) hintedBy(p *plan) (int64, stepResult) {
	name := p.name.view()
	for _, pl := range lv.live.playlistsIn(path.Dir(name)) {
		h, err, suspend := lv.acquireLive(pl, p.noBlock) // liveprefix.go
		if suspend {
			return 0, stepSuspend
		}
		if err != nil {
			continue // gone: no longer a live playlist here
		}
		v, suspend, err := lv.readVersion(h, p.noBlock)
		h.Release()
		switch {
		case suspend:
			return 0, stepSuspend
		case err != nil || v == nil:
			continue
		case slices.Contains(v.hints(pl), name):
			return v.pl.BlockLimit(), stepNext
		}
	}
	return lv.heldByPrefix(p) // liveprefix.go
}
