package deploy_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/cache"
	"segorigin/fixtures/synth"
)

// prime fetches the first slice of every file of the sets and returns which
// origin the hash ring gave each path (from the access log): the ring
// follows the origin addresses, so the test learns it rather than assuming.
func (r *rig) prime(t *testing.T, ctx context.Context, sets ...synthSet) map[string]string {
	t.Helper()
	var reqs []request
	for _, s := range sets {
		reqs = append(reqs, s.primeFirstSlice()...)
	}
	l := &load{client: r.client, base: r.shield.base, workers: 4}
	var tl tally
	for _, o := range l.run(ctx, reqs) {
		tl.add(o)
	}
	failOutcomes(t, "prime", &tl, nil)
	own := owners(r.newLog(t))
	for _, s := range sets {
		for _, p := range s.paths() {
			if own[p] == "" {
				t.Fatalf("prime: no origin fetch of %s in the access log", p)
			}
		}
	}
	return own
}

// mostOwned is the index of the origin that owns the most paths, given
// the counts owned returns.
func mostOwned(counts []int) int {
	b := 0
	for i := range counts {
		if counts[i] > counts[b] {
			b = i
		}
	}
	return b
}

// owned counts, per origin index, the paths of set it owns.
func (r *rig) owned(own map[string]string, set synthSet) []int {
	n := make([]int, len(r.addrs))
	for _, p := range set.paths() {
		for i, a := range r.addrs {
			if own[p] == a {
				n[i]++
			}
		}
	}
	return n
}

// testCrash kills one origin (SIGKILL, by PID) in the middle of a cold
// verifying load, restarts it later in the same load, then checks that
// the shield sends it its share again.
func (r *rig) testCrash(t *testing.T, ctx context.Context) {
	crash, after := r.synthSet(t, "crash"), r.synthSet(t, "after")
	own := r.prime(t, ctx, after)
	// The victim: the origin that owns the most files of the after set,
	// so that its return to the ring shows.
	inAfter := r.owned(own, after)
	victim := mostOwned(inAfter)
	v := r.origins[victim]
	t.Logf("victim %s (%s, pid %d) owns %d of %d after files", v.name, v.addr, v.proc.PID(), inAfter[victim], len(after.files))

	outs, killAt, restartAt := r.crashLoad(t, ctx, crash, v)
	var tl tally
	inFlight := 0
	for _, o := range outs {
		tl.add(o)
	}
	// A crash cuts the responses the dead origin was sending at that
	// instant: the shield has already sent their headers and cannot switch
	// origins mid-body, so the client sees a short body (never a wrong
	// byte). Every other request must succeed.
	crashCut := func(o outcome) bool {
		if o.start.Before(killAt) && o.end.After(killAt) {
			inFlight++
			return true
		}
		return false
	}
	failOutcomes(t, "crash", &tl, crashCut)
	lines := r.newLog(t)
	// Split by the time each line was written (a request's end): a
	// request that began before the kill may show in the next stretch.
	var before, outage, back []logLine
	for _, ln := range lines {
		switch {
		case ln.at.Before(killAt):
			before = append(before, ln)
		case ln.at.Before(restartAt):
			outage = append(outage, ln)
		default:
			back = append(back, ln)
		}
	}
	t.Logf("crash: client: %v; %d cut by the crash (in flight at the kill)", &tl, inFlight)
	r.report(t, "crash: before the kill", nil, before)
	r.report(t, "crash: "+v.name+" down", nil, outage)
	r.report(t, "crash: after the restart", nil, back)

	// Once fail_timeout has passed, the restarted origin is back in the
	// ring: the second slices of its after files come from it. nginx keeps
	// time for fail_timeout in whole seconds: allow one more. It then lets
	// one request probe the origin and keeps others away until that one
	// succeeds, so these requests go one at a time.
	time.Sleep(time.Until(restartAt.Add(failTimeout + 1500*time.Millisecond)))
	var ta tally
	one := &load{client: r.client, base: r.shield.base, workers: 1}
	for _, o := range one.run(ctx, after.wholeAll()) {
		ta.add(o)
	}
	failOutcomes(t, "after restart", &ta, nil)
	lines = r.newLog(t)
	st := r.report(t, "after restart", &ta, lines)
	if st.fetches[v.addr] != inAfter[victim] {
		t.Errorf("after restart: %s served %d slice fetches, want %d (its share of the after set): not back in the ring?",
			v.name, st.fetches[v.addr], inAfter[victim])
		for _, ln := range lines {
			if p := ln.path(); len(ln.upstream) > 0 && (own[p] == v.addr) != (ln.upstream[len(ln.upstream)-1] == v.addr) {
				t.Logf("after restart: %s (owner %s) fetched from %v at %s (restart at %s)",
					p, r.label(own[p]), ln.upstream, ln.at.Format("15:04:05.000"), restartAt.Format("15:04:05.000"))
			}
		}
	}
}

// crashLoad runs a paced cold verifying load over set, kills v (SIGKILL, by
// PID) after a sixth of it, starts v again once fail_timeout (+1 s) has
// passed, and returns every outcome with the kill and restart times.
func (r *rig) crashLoad(t *testing.T, ctx context.Context, crash synthSet, v *origin) (outs []outcome, killAt, restartAt time.Time) {
	t.Helper()
	rng := rand.New(rand.NewPCG(3, 4))
	// Every file cold and fetched whole once, plus ranges: the origins are
	// sending slices all through the load. Each worker pauses between
	// requests, as players do, so that the load outlasts an outage longer
	// than fail_timeout, as a real crash and restart would be.
	reqs := append(crash.wholeAll(), crash.mix(rng, 96)...)
	rng.Shuffle(len(reqs), func(i, j int) { reqs[i], reqs[j] = reqs[j], reqs[i] })
	l := &load{client: r.client, base: r.shield.base, workers: 6, pace: 250 * time.Millisecond}
	finished := make(chan []outcome, 1)
	// The load goroutine ends when every request is done or ctx ends.
	go func() { finished <- l.run(ctx, reqs) }()
	// reach waits (at most 30 s) until n requests are done and it is
	// notBefore; false if the load ended first.
	reach := func(n int64, notBefore time.Time) bool {
		for range 15000 {
			if l.done.Load() >= n && !time.Now().Before(notBefore) {
				return true
			}
			select {
			case outs = <-finished:
				return false
			case <-time.After(2 * time.Millisecond):
			}
		}
		return false
	}
	if reach(int64(len(reqs))/6, time.Time{}) {
		killAt = time.Now()
		v.kill(t)
		t.Logf("killed %s (SIGKILL) after %d of %d requests", v.name, l.done.Load(), len(reqs))
		if reach(0, killAt.Add(failTimeout+1200*time.Millisecond)) {
			v.start(t)
			restartAt = time.Now() // listening again
			t.Logf("restarted %s (pid %d) after %d of %d requests, %v after the kill",
				v.name, v.proc.PID(), l.done.Load(), len(reqs), restartAt.Sub(killAt).Round(time.Millisecond))
		}
	}
	if outs == nil {
		outs = <-finished
	}
	if killAt.IsZero() || restartAt.IsZero() {
		if !v.running() {
			v.start(t)
		}
		t.Fatalf("the load of %d requests ended before the kill and restart points (done %d)", len(reqs), l.done.Load())
	}

	return outs, killAt, restartAt
}

// testBadDeploy replaces one origin's copies of the bad set with different
// files (other content, other mtime, some another size), as a botched
// deploy would, after the shield has cached their first slices. Every
// response must be wholly the old file, wholly the new one, or an error:
// the slice module compares each slice's ETag with the first one's and
// fails the request on a difference rather than stitching.
func (r *rig) testBadDeploy(t *testing.T, ctx context.Context) {
	set := r.synthSet(t, "bad")
	own := r.prime(t, ctx, set)
	counts := r.owned(own, set)
	b := mostOwned(counts)
	bad := r.origins[b]

	v2 := r.deployDifferent(t, set, bad)
	t.Logf("bad deploy: %s now holds different copies of %d files (%d of them the ones the ring gives it); the other origins keep the old ones",
		bad.name, len(set.files), counts[b])

	// First the files the bad origin owns and a third of the others; the
	// other two thirds stay cold (but for their cached first slices) for
	// the failover steps below.
	var first, spareA, spareB []int
	others := 0
	for i := range set.files {
		if own[set.path(i)] == bad.addr {
			first = append(first, i)
			continue
		}
		switch others % 3 {
		case 0:
			first = append(first, i)
		case 1:
			spareA = append(spareA, i)
		case 2:
			spareB = append(spareB, i)
		}
		others++
	}
	refused := r.badOwnerStep(t, ctx, set, v2, bad, own, first)

	// Now an origin that keeps the old files dies: its files fail over to
	// the next origin in the ring, which may be the bad one; the answer is
	// then refused too, never stitched.
	spareBy := make([][]int, len(r.addrs))
	for _, i := range spareA {
		for j, a := range r.addrs {
			if own[set.path(i)] == a {
				spareBy[j] = append(spareBy[j], i)
			}
		}
	}
	other := -1
	for j := range spareBy {
		if len(spareBy[j]) > 0 && (other < 0 || len(spareBy[j]) > len(spareBy[other])) {
			other = j
		}
	}
	if other < 0 {
		t.Errorf("bad deploy: no file for the first failover step (ownership %v): change the set size", counts)
	} else {
		r.failover(t, ctx, set, v2, bad, []*origin{r.origins[other]}, spareBy[other])
	}
	// Then both origins with the old files die: everything fails over to
	// the bad one, and every request whose first slice is cached is refused.
	var good []*origin
	for j, o := range r.origins {
		if j != b {
			good = append(good, o)
		}
	}
	if len(spareB) == 0 {
		t.Errorf("bad deploy: no file for the second failover step (ownership %v): change the set size", counts)
	} else {
		refused += r.failover(t, ctx, set, v2, bad, good, spareB)
	}

	n := 0
	for range r.shield.mismatches(t, 0) {
		n++
	}
	if refused > 0 && n == 0 {
		t.Errorf("bad deploy: %d requests refused but nginx's error.log has no \"etag mismatch in slice response\"", refused)
	}
	if counts[b] > 0 && refused == 0 {
		t.Errorf("bad deploy: no request was refused; want the slice ETag check to fail the old-first-slice requests")
	}
	t.Logf("bad deploy: nginx error.log: \"etag mismatch in slice response\" for %d files", n)
}

// deployDifferent replaces bad's copy of every file of set with another
// file, as a botched deploy would: other bytes (synth name "v2-"+name),
// an mtime an hour later, every other one 4 KiB longer; written beside and
// renamed over the old one. It returns the new versions by name, once bad
// serves all of them.
func (r *rig) deployDifferent(t *testing.T, set synthSet, bad *origin) map[string]version {
	t.Helper()
	// The new versions, written beside and renamed over the old ones.
	v2 := map[string]version{}
	for i, f := range set.files {
		nv := version{name: "v2-" + f.name, size: f.size}
		if i%2 == 1 {
			nv.size += 4096
		}
		mtime := time.Now().Add(time.Hour).Truncate(time.Second)
		final := filepath.Join(bad.root, "synth", "bad", f.name)
		tmp := filepath.Join(bad.root, "synth", "bad", ".deploy-"+f.name)
		if err := synth.WriteFile(tmp, nv.name, nv.size); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(tmp, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, final); err != nil {
			t.Fatal(err)
		}
		nv.etag = cache.ETag(nv.size, mtime)
		v2[f.name] = nv
	}
	// segorigin sees the rename (fsnotify) and serves the new file; wait
	// until it does, so the test does not race its watcher.
	for _, f := range set.files {
		p := set.dir + "/" + f.name
		for i := 0; ; i++ {
			resp, err := r.direct.Head("http://" + bad.addr + p)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.Header.Get("ETag") == v2[f.name].etag {
				break
			}
			if i == 100 {
				t.Fatalf("%s still serves %s with ETag %s 5s after the replace, want %s", bad.name, p, resp.Header.Get("ETag"), v2[f.name].etag)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return v2
}

// badOwnerStep requests the files idx (those bad owns and some others)
// whole, across the first slice boundary and inside the second slice, and
// checks each answer against where its slices come from: the first slice
// is cached (old) for every file, later ones come from the ring owner. It
// returns how many requests the shield refused.
func (r *rig) badOwnerStep(t *testing.T, ctx context.Context, set synthSet, v2 map[string]version, bad *origin, own map[string]string, idx []int) int {
	t.Helper()
	var reqs []request
	for _, i := range idx {
		f := set.files[i]
		vs := []version{f, v2[f.name]}
		p := set.path(i)
		reqs = append(reqs,
			request{path: p, versions: vs},
			request{path: p, versions: vs},
			request{path: p, versions: vs, rangeHdr: fmt.Sprintf("bytes=%d-%d", mib-1000, mib+999), first: mib - 1000, last: mib + 999},
			request{path: p, versions: vs, rangeHdr: fmt.Sprintf("bytes=%d-%d", mib+10, mib+20009), first: mib + 10, last: mib + 20009},
		)
	}
	l := &load{client: r.client, base: r.shield.base, workers: 4}
	var tl tally
	outs := l.run(ctx, reqs)
	for _, o := range outs {
		tl.add(o)
	}
	failOutcomes(t, "bad deploy", &tl, func(o outcome) bool { return own[o.req.path] == bad.addr })
	// What each request must get follows from who holds its slices: slice
	// 0 is cached (old) everywhere; later slices come from the ring owner.
	refused := 0
	for _, o := range outs {
		onBad := own[o.req.path] == bad.addr
		spansSlice0 := o.req.rangeHdr == "" || o.req.first < mib
		switch {
		case onBad && spansSlice0:
			if o.err == nil && o.wrong == "" {
				t.Errorf("bad deploy: GET %s Range %q got a whole %s body; want a refused request (old first slice, new later slices)",
					o.req.path, o.req.rangeHdr, o.version)
			}
			if o.err != nil {
				refused++
			}
		case onBad:
			if o.version != v2[baseName(o.req.path)].name {
				t.Errorf("bad deploy: GET %s Range %q (second slice only, from %s) = %q, err %v; want the new version whole",
					o.req.path, o.req.rangeHdr, bad.name, o.version, o.err)
			}
		default:
			if o.version != baseName(o.req.path) {
				t.Errorf("bad deploy: GET %s Range %q (owner %s keeps the old file) = %q, err %v; want the old version",
					o.req.path, o.req.rangeHdr, own[o.req.path], o.version, o.err)
			}
		}
	}
	t.Logf("bad deploy: client: %v; bodies by version %v; %d refused by the shield", &tl, tl.versions, refused)
	r.report(t, "bad deploy", nil, r.newLog(t))
	return refused
}

// failover kills the origins down (by PID), requests each file of idx
// whole, checks each answer against the origin that served the file's later
// slices (refused if the bad one, the old version whole otherwise), starts
// the origins again, and returns how many requests were refused.
func (r *rig) failover(t *testing.T, ctx context.Context, set synthSet, v2 map[string]version, bad *origin, down []*origin, idx []int) int {
	t.Helper()
	errOff := fileSize(t, r.shield.errorLog)
	var names []string
	for _, o := range down {
		o.kill(t)
		names = append(names, o.name)
	}
	defer func() {
		for _, o := range down {
			o.start(t)
		}
	}()
	var reqs []request
	for _, i := range idx {
		f := set.files[i]
		reqs = append(reqs, request{path: set.path(i), versions: []version{f, v2[f.name]}})
	}
	l := &load{client: r.client, base: r.shield.base, workers: 4}
	var tl tally
	outs := l.run(ctx, reqs)
	for _, out := range outs {
		tl.add(out)
	}
	// path → origin that answered after the failover: from the access log,
	// or for a refused request (nginx logs no line for the refused slice)
	// from the error log's "etag mismatch" line.
	via := r.shield.mismatches(t, errOff)
	for _, ln := range r.newLog(t) {
		if n := len(ln.upstream); n > 0 {
			via[ln.path()] = ln.upstream[n-1]
		}
	}
	phase := "bad deploy + " + strings.Join(names, ", ") + " killed"
	failOutcomes(t, phase, &tl, func(out outcome) bool { return via[out.req.path] == bad.addr })
	var routes []string
	refused := 0
	for _, out := range outs {
		p := out.req.path
		what := "old version whole"
		switch {
		case out.err != nil:
			what = "refused"
			refused++
		case out.wrong != "":
			what = "WRONG"
		case out.version != baseName(p):
			what = "new version whole"
		}
		routes = append(routes, fmt.Sprintf("%s via %s: %s", baseName(p), r.label(via[p]), what))
		if via[p] == bad.addr && out.err == nil {
			t.Errorf("%s: GET %s failed over to %s and got %s; want refused", phase, p, bad.name, what)
		}
		if via[p] != bad.addr && out.version != baseName(p) {
			t.Errorf("%s: GET %s failed over to %s and got %s; want the old version", phase, p, r.label(via[p]), what)
		}
		if len(down) == len(r.origins)-1 && via[p] != bad.addr {
			t.Errorf("%s: GET %s answered via %q; want %s, the only origin up", phase, p, r.label(via[p]), bad.name)
		}
	}
	t.Logf("%s: client: %v; %s", phase, &tl, strings.Join(routes, "; "))
	return refused
}

// label is the o1/o2/o3 name of an origin address.
func (r *rig) label(addr string) string {
	for i, a := range r.addrs {
		if a == addr {
			return r.labels[i]
		}
	}
	return addr
}
