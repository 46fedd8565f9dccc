package deploy_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"segorigin/fixtures/synth"
	"segorigin/internal/testproc"
)

// TestShieldCopiesWithoutMtimes: three origins behind the slice shield
// hold copies of the same files made without keeping mtimes (cp without
// -a: each copy is dated when it was made). The shield caches each file's
// first slice from its ring owner; the owner dies and the other slices
// come from the next origin in the ring. With -etag content every answer
// is the whole file, right to the byte: 0 refusals, 0 wrong bytes. With
// -etag size-mtime the copies' ETags differ and the slice module refuses
// every such answer ("etag mismatch in slice response"), which is what
// content validators are for.
func TestShieldCopiesWithoutMtimes(t *testing.T) {
	requireTools(t)
	bin := testproc.Build(t, "./cmd/segorigin")
	for _, mode := range []string{"content", "size-mtime"} {
		t.Run(mode, func(t *testing.T) { testCopiesWithoutMtimes(t, bin, mode) })
	}
}

// newCopiesRig starts three origins (with args) over plain cp -r copies
// of the master tree content writes, and the shield in front of them.
func newCopiesRig(t *testing.T, bin string, args []string, content func(master string)) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{master: filepath.Join(dir, "master"), client: newClient(4), direct: newClient(2)}
	content(r.master)
	r.build(t, bin, dir, cpR, args)
	return r
}

// cpR copies the tree src to dst with plain cp -r: each copy gets its own
// mtime, as cp, rsync without -t or an object-store sync give.
func cpR(t *testing.T, src, dst string) {
	t.Helper()
	if out, err := exec.Command("cp", "-r", src, dst).CombinedOutput(); err != nil {
		t.Fatalf("cp -r %s %s: %v\n%s", src, dst, err, out)
	}
}

func testCopiesWithoutMtimes(t *testing.T, bin, mode string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	r := newCopiesRig(t, bin, []string{"-etag", mode}, func(master string) {
		d := filepath.Join(master, "synth", "copies")
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for i := range 12 {
			name := fmt.Sprintf("copies%02d.m4s", i)
			if err := synth.WriteFile(filepath.Join(d, name), name, synthSize(i, 2*mib, 3*mib)); err != nil {
				t.Fatal(err)
			}
		}
	})
	var mtimes []time.Time
	for _, o := range r.origins {
		fi, err := os.Stat(filepath.Join(o.root, "synth", "copies", "copies00.m4s"))
		if err != nil {
			t.Fatal(err)
		}
		mtimes = append(mtimes, fi.ModTime())
	}
	if mtimes[0].Equal(mtimes[1]) || mtimes[1].Equal(mtimes[2]) {
		t.Fatalf("copies share an mtime (%v): the test needs them to differ", mtimes)
	}

	// Any ETag will do for the verifying client (it checks every byte);
	// whether the origins agree is what the shield judges.
	set := r.synthSet(t, "copies")
	for i := range set.files {
		set.files[i].etag = ""
	}
	own := r.prime(t, ctx, set)
	counts := r.owned(own, set)
	down := r.origins[mostOwned(counts)]
	var idx []int
	for i := range set.files {
		if own[set.path(i)] == down.addr {
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		t.Fatalf("no file owned by %s (ownership %v): change the set size", down.name, counts)
	}

	errOff := fileSize(t, r.shield.errorLog)
	down.kill(t)
	var reqs []request
	for _, i := range idx {
		reqs = append(reqs, request{path: set.path(i), versions: []version{set.files[i]}})
	}
	l := &load{client: r.client, base: r.shield.base, workers: 4}
	var tl tally
	outs := l.run(ctx, reqs)
	for _, o := range outs {
		tl.add(o)
	}
	via := r.shield.mismatches(t, errOff)
	refusedByShield := len(via)
	for _, ln := range r.newLog(t) {
		if n := len(ln.upstream); n > 0 {
			via[ln.path()] = ln.upstream[n-1]
		}
	}
	refused, wrong := 0, 0
	var routes []string
	for _, o := range outs {
		what := "whole"
		switch {
		case o.wrong != "":
			wrong++
			what = "WRONG: " + o.wrong
		case o.err != nil:
			refused++
			what = "refused"
		}
		routes = append(routes, fmt.Sprintf("%s via %s: %s", baseName(o.req.path), r.label(via[o.req.path]), what))
		if v := via[o.req.path]; v == "" || v == down.addr {
			t.Errorf("%s: later slices via %q; want another origin than the dead owner %s", o.req.path, r.label(v), down.name)
		}
	}
	t.Logf("-etag %s, %s killed, %d files it owned: %d whole, %d refused (%d etag mismatches in error.log), %d wrong; %s",
		mode, down.name, len(outs), len(outs)-refused-wrong, refused, refusedByShield, wrong, strings.Join(routes, "; "))
	if wrong > 0 {
		t.Errorf("-etag %s: %d responses with wrong bytes, want 0", mode, wrong)
	}
	switch mode {
	case "content":
		if refused > 0 || refusedByShield > 0 {
			t.Errorf("-etag content: %d refused, %d etag mismatches; want 0: identical bytes give one ETag whatever the mtimes", refused, refusedByShield)
		}
	default:
		if refused != len(outs) || refusedByShield != len(outs) {
			t.Errorf("-etag size-mtime: %d of %d refused, %d etag mismatches; want every one: copies with other mtimes have other ETags",
				refused, len(outs), refusedByShield)
		}
	}
}
