package origin_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"sync"
	"testing"

	"segorigin/origin"
)

// serverMode is how a conformance test's servers speak: plain HTTP, or
// HTTPS in one tlsMode. Conformance tests take it as a parameter and start
// every server through it, so none can miss a mode.
type serverMode struct {
	tls    *tlsMode      // nil: plain HTTP
	run    *tlsRun       // over TLS: the servers started, for checkTLSPaths
	engine origin.Engine // plain HTTP's engine; "" the default
}

// start is startServer in mode.
func (mode serverMode) start(t *testing.T, root string, mod func(*origin.Config)) *testServer {
	t.Helper()
	if mode.engine != "" {
		inner := mod
		mod = func(c *origin.Config) {
			c.Engine = mode.engine
			if inner != nil {
				inner(c)
			}
		}
	}
	ts := startServerMode(t, root, mod, mode.tls)
	if mode.run != nil {
		mode.run.started(ts)
	}
	return ts
}

// tlsRun is the servers one conformance test started over TLS.
type tlsRun struct {
	mu      sync.Mutex // protects servers
	servers []*testServer
}

func (r *tlsRun) started(ts *testServer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.servers = append(r.servers, ts)
}

// everyMode runs fn, one test of the conformance suite (ranges,
// multipart, conditionals, HEAD, errors, paths, auth, pipelining),
// byte-exact, over plain HTTP on the loop engine ("HTTP") and on fasthttp
// ("HTTP-fasthttp"), and over TLS 1.2 and 1.3 in every
// tlsMode, each a subtest named by its mode; after a TLS run each
// server's counters must show which body path served (checkTLSPaths).
func everyMode(t *testing.T, fn func(*testing.T, serverMode)) {
	t.Run("HTTP", func(t *testing.T) { fn(t, serverMode{engine: origin.EngineLoop}) })
	t.Run("HTTP-fasthttp", func(t *testing.T) { fn(t, serverMode{engine: origin.EngineFastHTTP}) })
	for _, m := range tlsModes {
		t.Run(m.name, func(t *testing.T) {
			r := &tlsRun{}
			fn(t, serverMode{tls: &m, run: r})
			for _, ts := range r.servers {
				checkTLSPaths(t, ts, m)
			}
		})
	}
}

// conformanceFiles hold the conformance suite and nothing else.
var conformanceFiles = []string{"ranges_test.go", "conditional_test.go", "http_test.go", "auth_test.go"}

// TestConformanceRunsEveryMode: in the conformance files every test is
// one call of everyMode, so a test added there cannot run over plain HTTP
// only (a plain-only test belongs in another file).
func TestConformanceRunsEveryMode(t *testing.T) {
	fset := token.NewFileSet()
	for _, name := range conformanceFiles {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || !isTestName(fn.Name.Name) {
				continue
			}
			if !callsEveryMode(fn) {
				t.Errorf("%s: %s is not `{ everyMode(t, test...) }`: it would skip the TLS modes", fset.Position(fn.Pos()), fn.Name.Name)
			}
		}
	}
}

func isTestName(s string) bool { return len(s) > 4 && s[:4] == "Test" }

func callsEveryMode(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) != 1 {
		return false
	}
	es, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := es.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "everyMode"
}
