package raftstore

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// codeRejectReasons reads, from the sources, every reason the Raft port's
// refusal counter can be given: the string passed to a Reject call, the
// transport mux's refuse calls and the strings its rejectReason returns,
// the reasons admission returns (members.Admit, joiner.admit), and the
// reasons of certs.PeerError on the accepting side (PeerClient's are the
// dialling side's own check, never counted here).
func codeRejectReasons(t *testing.T) []string {
	t.Helper()
	var reasons []string
	add := func(lit ast.Expr) {
		if b, ok := lit.(*ast.BasicLit); ok && b.Kind == token.STRING {
			s, err := strconv.Unquote(b.Value)
			if err != nil {
				t.Fatal(err)
			}
			if s != "" && !slices.Contains(reasons, s) { // "" is admit's "let in"
				reasons = append(reasons, s)
			}
		}
	}
	for _, glob := range []string{"*.go", filepath.Join("transport", "*.go"), filepath.Join("..", "certs", "*.go")} {
		files, err := filepath.Glob(glob)
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				fd, ok := d.(*ast.FuncDecl)
				if !ok || fd.Body == nil || fd.Name.Name == "PeerClient" {
					continue
				}
				ast.Inspect(fd.Body, func(n ast.Node) bool {
					switch n := n.(type) {
					case *ast.CallExpr:
						name := ""
						switch fn := n.Fun.(type) {
						case *ast.Ident:
							name = fn.Name
						case *ast.SelectorExpr:
							name = fn.Sel.Name
						}
						if (name == "reject" || name == "Reject") && len(n.Args) == 1 {
							add(n.Args[0])
						}
						if name == "refuse" && len(n.Args) == 4 { // mux.refuse(from, node, reason, err)
							add(n.Args[2])
						}
					case *ast.ReturnStmt:
						if fd.Name.Name == "rejectReason" && len(n.Results) == 1 {
							add(n.Results[0])
						}
						if (fd.Name.Name == "admit" || fd.Name.Name == "Admit") && len(n.Results) == 2 { // (reason, err)
							add(n.Results[0])
						}
					case *ast.CompositeLit:
						typeName := ""
						switch ty := n.Type.(type) {
						case *ast.Ident:
							typeName = ty.Name
						case *ast.SelectorExpr:
							typeName = ty.Sel.Name
						}
						if typeName == "PeerError" && len(n.Elts) > 0 {
							if kv, ok := n.Elts[0].(*ast.KeyValueExpr); ok {
								add(kv.Value)
							} else {
								add(n.Elts[0])
							}
						}
					}
					return true
				})
			}
		}
	}
	slices.Sort(reasons)
	return reasons
}

// docRejectReasons is the list docs/security.md gives after
// idemgate_peer_rejected_total{reason}.
func docRejectReasons(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)counted in `idemgate_peer_rejected_total\\{reason\\}` \\(([^)]*)\\)").FindSubmatch(b)
	if m == nil {
		t.Fatal("docs/security.md lists no reasons after idemgate_peer_rejected_total{reason} (")
	}
	var out []string
	for _, w := range regexp.MustCompile("`([a-z_]+)`").FindAllSubmatch(m[1], -1) {
		out = append(out, string(w[1]))
	}
	slices.Sort(out)
	return out
}

// TestRejectReasonsListed: every reason the code can count a refused Raft
// connection under is in rejectReasons and in docs/security.md's list, and each has
// a series at 0 on a node that has refused nothing yet.
func TestRejectReasonsListed(t *testing.T) {
	code := codeRejectReasons(t)
	if len(code) < 10 {
		t.Fatalf("found only %d reasons in the sources: %v (the scan is broken)", len(code), code)
	}
	listed := slices.Sorted(slices.Values(rejectReasons))
	if !slices.Equal(code, listed) {
		t.Errorf("reasons in the code %v, in rejectReasons %v", code, listed)
	}
	if doc := docRejectReasons(t); !slices.Equal(doc, listed) {
		t.Errorf("docs/security.md's reasons %v, rejectReasons %v", doc, listed)
	}

	c := StartTestCluster(t, 1, nil)
	reg := prometheus.NewRegistry()
	if err := c.Store(0).Register(reg); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c.Store(0).members.rejected); n != len(rejectReasons) {
		t.Errorf("a fresh node has %d idemgate_peer_rejected_total series, want %d", n, len(rejectReasons))
	}
	for _, r := range rejectReasons {
		if v := testutil.ToFloat64(c.Store(0).members.rejected.WithLabelValues(r)); v != 0 {
			t.Errorf("reason %s at %v on a fresh node", r, v)
		}
	}
}
