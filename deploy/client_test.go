package deploy_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"segorigin/fixtures/synth"
)

const mib = 1 << 20

// version is one content a URL may legitimately have: the synth name its
// bytes follow, its size and the ETag the origins give it. Normally a URL
// has one; after a bad deploy it has two, and a response must be wholly
// one of them.
type version struct {
	name string
	size int64
	etag string
}

// request is one verified GET: the whole file, or one byte range.
type request struct {
	path      string    // URL path; its base name is the synth name of versions[0]
	versions  []version // what the body may be
	rangeHdr  string    // "" for the whole file
	rangeOpen bool      // rangeHdr is bytes=first- (length follows the version's size)
	suffix    int64     // > 0 for bytes=-suffix
	first     int64     // first byte asked for, when not open or suffix
	last      int64
}

// span returns the bytes [first, last] that r asks of a file of size n.
func (r request) span(n int64) (first, last int64) {
	switch {
	case r.rangeHdr == "":
		return 0, n - 1
	case r.suffix > 0:
		return max(n-r.suffix, 0), n - 1
	case r.rangeOpen:
		return r.first, n - 1
	}
	return r.first, min(r.last, n-1)
}

// outcome is what one request got.
type outcome struct {
	req     request
	start   time.Time
	end     time.Time
	status  int
	cache   string // X-Cache-Status
	etag    string
	got     int64 // body bytes received
	version string
	// err: the request failed (transport error, short body, bad status or
	// headers) without a wrong byte.
	err error
	// wrong: a byte that belongs to no version of the file, or a body that
	// starts as one version and goes on as another (stitched), or an ETag
	// naming another version than the body. The one thing that must never
	// happen.
	wrong string
}

// verifyGet performs r and checks every header and body byte against each
// version the URL may have. A body is accepted only if it is entirely one
// version (bytes, Content-Range total, ETag); a short body is an error, and
// the part received must still be a single version.
func verifyGet(ctx context.Context, client *http.Client, base string, r request) (o outcome) {
	o = outcome{req: r, start: time.Now()}
	defer func() { o.end = time.Now() }()
	req, err := http.NewRequestWithContext(ctx, "GET", base+r.path, nil)
	if err != nil {
		o.err = err
		return o
	}
	if r.rangeHdr != "" {
		req.Header.Set("Range", r.rangeHdr)
	}
	resp, err := client.Do(req)
	if err != nil {
		o.err = err
		return o
	}
	defer resp.Body.Close()
	o.status, o.cache, o.etag = resp.StatusCode, resp.Header.Get("X-Cache-Status"), resp.Header.Get("ETag")
	what := fmt.Sprintf("GET %s Range %q", r.path, r.rangeHdr)
	wantStatus := http.StatusOK
	if r.rangeHdr != "" {
		wantStatus = http.StatusPartialContent
	}
	if resp.StatusCode != wantStatus {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		o.err = fmt.Errorf("%s: status %d, want %d", what, resp.StatusCode, wantStatus)
		return o
	}
	cands, off, err := candidates(r, resp, what)
	if err != nil {
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		o.err = err
		return o
	}
	if cands = readVerified(&o, resp, cands, off, what); cands == nil {
		return o
	}
	var names []string
	for _, v := range cands {
		if v.etag == "" || v.etag == o.etag {
			names = append(names, v.name)
		}
	}
	if len(names) != 1 {
		o.wrong = fmt.Sprintf("%s: body is %v but ETag %s names %v", what, cands, o.etag, r.versions)
		return o
	}
	o.version = names[0]
	return o
}

// candidates returns the versions of the file whose size gives exactly the
// response's Content-Range and Content-Length, and the offset of the body's
// first byte.
func candidates(r request, resp *http.Response, what string) ([]version, int64, error) {
	var off, total int64 = 0, resp.ContentLength
	if resp.StatusCode == http.StatusPartialContent {
		var last int64
		cr := resp.Header.Get("Content-Range")
		if n, _ := fmt.Sscanf(cr, "bytes %d-%d/%d", &off, &last, &total); n != 3 || last-off+1 != resp.ContentLength {
			return nil, 0, fmt.Errorf("%s: Content-Range %q with Content-Length %d", what, cr, resp.ContentLength)
		}
	}
	var cands []version
	for _, v := range r.versions {
		first, last := r.span(v.size)
		if resp.StatusCode == http.StatusOK {
			first, last = 0, v.size-1
		}
		if total == v.size && off == first && resp.ContentLength == last-first+1 {
			cands = append(cands, v)
		}
	}
	if len(cands) == 0 {
		return nil, 0, fmt.Errorf("%s: Content-Range/Length (offset %d, total %d, length %d) fit no version of the file %v",
			what, off, total, resp.ContentLength, r.versions)
	}
	return cands, off, nil
}

// readVerified reads the body 256 KiB at a time, keeping the candidate
// versions every byte so far agrees with. It returns them, or nil after
// setting o.wrong (no version fits) or o.err (a short body).
func readVerified(o *outcome, resp *http.Response, cands []version, off int64, what string) []version {
	buf := make([]byte, 256<<10)
	pos := off
	for {
		n, rerr := io.ReadFull(resp.Body, buf)
		if n > 0 {
			keep := cands[:0]
			for _, v := range cands {
				if _, ok := synth.Verify(v.name, pos, buf[:n]); ok {
					keep = append(keep, v)
				}
			}
			if len(keep) == 0 {
				o.wrong = fmt.Sprintf("%s: bytes %d-%d are no single version of the file (versions %v, received %d bytes before them)",
					what, pos, pos+int64(n)-1, o.req.versions, o.got)
				return nil
			}
			cands = keep
			pos += int64(n)
			o.got += int64(n)
		}
		if rerr == io.EOF || errors.Is(rerr, io.ErrUnexpectedEOF) && o.got == resp.ContentLength {
			break
		}
		if rerr != nil {
			o.err = fmt.Errorf("%s: body cut after %d of %d bytes: %v", what, o.got, resp.ContentLength, rerr)
			return nil
		}
	}
	if o.got != resp.ContentLength {
		o.err = fmt.Errorf("%s: body %d bytes, Content-Length %d", what, o.got, resp.ContentLength)
		return nil
	}
	return cands
}

// tally sums outcomes.
type tally struct {
	requests int
	errors   []outcome
	wrong    []outcome
	cache    map[string]int // X-Cache-Status of successful responses
	versions map[string]int // which version each successful body was
	bytes    int64
}

func (tl *tally) add(o outcome) {
	if tl.cache == nil {
		tl.cache, tl.versions = map[string]int{}, map[string]int{}
	}
	tl.requests++
	tl.bytes += o.got
	switch {
	case o.wrong != "":
		tl.wrong = append(tl.wrong, o)
	case o.err != nil:
		tl.errors = append(tl.errors, o)
	default:
		tl.cache[o.cache]++
		tl.versions[o.version]++
	}
}

// hitRatio is the share of successful responses whose X-Cache-Status is HIT
// (for a sliced response: its first slice).
func (tl *tally) hitRatio() float64 {
	ok := tl.requests - len(tl.errors) - len(tl.wrong)
	if ok == 0 {
		return 0
	}
	return float64(tl.cache["HIT"]) / float64(ok)
}

func (tl *tally) String() string {
	keys := make([]string, 0, len(tl.cache))
	for k := range tl.cache {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var cs []string
	for _, k := range keys {
		cs = append(cs, fmt.Sprintf("%s %d", k, tl.cache[k]))
	}
	if len(cs) == 0 {
		return fmt.Sprintf("%d requests, %d errors, %d wrong, %.1f MiB verified",
			tl.requests, len(tl.errors), len(tl.wrong), float64(tl.bytes)/mib)
	}
	return fmt.Sprintf("%d requests, %d errors, %d wrong, %.1f MiB verified, X-Cache-Status %s (hit ratio %.0f%%)",
		tl.requests, len(tl.errors), len(tl.wrong), float64(tl.bytes)/mib, strings.Join(cs, ", "), 100*tl.hitRatio())
}

// load runs requests with a fixed number of workers. done counts finished
// requests, so the test goroutine can act mid-load (kill an origin).
type load struct {
	client  *http.Client
	base    string
	workers int
	pace    time.Duration // each worker's pause between requests
	done    atomic.Int64
}

// run performs every request once (in the given order, spread over the
// workers) and returns every outcome in completion order. It returns when
// all are done or ctx ends; each worker goroutine ends with it.
func (l *load) run(ctx context.Context, reqs []request) []outcome {
	var (
		mu   sync.Mutex // protects outs
		outs []outcome
		wg   sync.WaitGroup
		next atomic.Int64
	)
	for range l.workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if i >= int64(len(reqs)) {
					return
				}
				o := verifyGet(ctx, l.client, l.base, reqs[i])
				mu.Lock()
				outs = append(outs, o)
				mu.Unlock()
				l.done.Add(1)
				if l.pace > 0 {
					select {
					case <-ctx.Done():
					case <-time.After(l.pace):
					}
				}
			}
		}()
	}
	wg.Wait()
	return outs
}

// newClient is an HTTP/1.1 client with keep-alive to the shield and no
// compression, bounded in time per request.
func newClient(workers int) *http.Client {
	return &http.Client{
		Timeout: 20 * time.Second,
		Transport: &http.Transport{
			MaxIdleConnsPerHost:   workers,
			DisableCompression:    true,
			ResponseHeaderTimeout: 15 * time.Second,
		},
	}
}

// synthSet is a group of synth files under one URL directory.
type synthSet struct {
	dir   string // URL path prefix, "/synth/load"
	files []version
}

func (s synthSet) path(i int) string { return s.dir + "/" + s.files[i].name }

// mix returns n requests over the set, drawn with rng: whole files, ranges
// inside one slice, ranges across slice boundaries, open and suffix ranges.
func (s synthSet) mix(rng *rand.Rand, n int) []request {
	reqs := make([]request, 0, n)
	for range n {
		i := rng.IntN(len(s.files))
		v := s.files[i]
		r := request{path: s.path(i), versions: []version{v}}
		k := rng.IntN(10)
		switch {
		case k < 3: // whole file
		case k < 5: // inside one slice
			slice := rng.Int64N((v.size + mib - 1) / mib)
			r.first = slice*mib + rng.Int64N(min(mib/2, v.size-slice*mib))
			r.last = min(r.first+rng.Int64N(mib/2), v.size-1)
		case k < 8: // across one or two slice boundaries
			b := (1 + rng.Int64N(max((v.size-1)/mib, 1))) * mib
			r.first = max(b-1-rng.Int64N(256<<10), 0)
			r.last = min(b+rng.Int64N(mib+mib/2), v.size-1)
		case k < 9: // open-ended, as players' bytes=N-
			r.first, r.rangeOpen = rng.Int64N(v.size), true
		default: // suffix
			r.suffix = 1 + rng.Int64N(2*mib)
		}
		switch {
		case k < 3:
		case r.rangeOpen:
			r.rangeHdr = "bytes=" + strconv.FormatInt(r.first, 10) + "-"
		case r.suffix > 0:
			r.rangeHdr = "bytes=-" + strconv.FormatInt(r.suffix, 10)
		default:
			r.rangeHdr = fmt.Sprintf("bytes=%d-%d", r.first, r.last)
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// wholeAll returns one whole-file request per file of the set.
func (s synthSet) wholeAll() []request {
	var reqs []request
	for i, v := range s.files {
		reqs = append(reqs, request{path: s.path(i), versions: []version{v}})
	}
	return reqs
}

// primeFirstSlice returns, per file, a request for byte 0 only: it makes the
// shield fetch and cache exactly the first slice, and the access log then
// names the origin the hash ring gives the file.
func (s synthSet) primeFirstSlice() []request {
	var reqs []request
	for i, v := range s.files {
		reqs = append(reqs, request{path: s.path(i), versions: []version{v}, rangeHdr: "bytes=0-0", last: 0})
	}
	return reqs
}

// slices is how many 1 MiB slices the files of the set have in all.
func (s synthSet) slices() int {
	n := 0
	for _, f := range s.files {
		n += int((f.size + mib - 1) / mib)
	}
	return n
}

// paths lists the URL paths of the set.
func (s synthSet) paths() []string {
	var ps []string
	for i := range s.files {
		ps = append(ps, s.path(i))
	}
	return ps
}

// baseName is the synth name of a URL path.
func baseName(p string) string { return path.Base(p) }
