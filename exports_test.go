package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"strings"
	"testing"

	"golang.org/x/tools/go/packages"
)

// contract are the packages whose exported names are the product itself,
// for programs outside the module: what the module's own code does not
// call, its tests do.
var contract = map[string]string{
	"client": "the Go client a program imports to call a cluster",
}

// unusedAllowed are exported names no code of the module uses that stay
// because a user programs against them.
var unusedAllowed = map[string]string{}

// testOnlyLeft are the names only tests use that are not moved yet, each
// with what it waits for. The list only shrinks: a new test-only name goes
// in an export_test.go file of its package or in a package under
// internal/ that only tests import.
var testOnlyLeft = map[string]string{
	"fsm.FSM.DataHash":                  "a backup's state compared with its restore in raftstore's tests: another package, so no export_test.go; an operator's hash check (as etcdctl endpoint hashkv) would make it product",
	"raftstore.Store.Raft":              "api's and raftstore's tests stop a node's Raft under a live listener; the listener tests are in other packages",
	"bench.StdRequests":                 "the binary's bench test checks that the std client carried the requests; the bench report does not count them",
	"internal/boltcheck.OverwritePages": "the damage the tests of fsm, raftstore and the binary inflict; internal, and beside the meta-page parser TruncateHalf needs",
	"internal/boltcheck.TruncateHalf":   "as OverwritePages",
}

// TestExportsUsedByProduct fails when a production package exports a name
// (function, type, variable, constant, or method of an exported type) that
// only tests use, or that nothing uses at all and is not allowed above.
// Production code is every non-_test.go file of a package that is not test
// support (testOnly in layering_test.go), in the default build: what the
// mutants and chaos tags add exists only in those test builds. A name of
// a test-support package fails it when not even a test uses it.
func TestExportsUsedByProduct(t *testing.T) {
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedCompiledGoFiles |
			packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Tests: true,
	}
	pkgs, err := packages.Load(cfg, "./...")
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	if n := packages.PrintErrors(pkgs); n > 0 {
		t.Fatalf("%d errors loading the module", n)
	}
	u := newUses()
	for _, p := range pkgs {
		if strings.HasSuffix(p.ID, ".test") { // the generated test main
			continue
		}
		u.add(p)
	}
	if len(u.exported) < 100 {
		t.Fatalf("only %d exported names found: the load missed packages", len(u.exported))
	}
	testOnlyNames, unused := u.verdict()
	for _, k := range testOnlyNames {
		if _, ok := testOnlyLeft[strings.TrimPrefix(k, module+"/")]; ok {
			continue
		}
		t.Errorf("%s is exported but only tests use it: move it to an export_test.go or under internal/", k)
	}
	for _, k := range u.unusedSupport() {
		t.Errorf("%s is exported by test support but nothing uses it: remove it", k)
	}
	for _, k := range unused {
		if _, ok := unusedAllowed[strings.TrimPrefix(k, module+"/")]; !ok {
			t.Errorf("%s is exported but nothing uses it: remove it, or allow it in exports_test.go with a reason", k)
		}
	}
	for what, names := range map[string][]string{"unusedAllowed": unused, "testOnlyLeft": testOnlyNames} {
		list := unusedAllowed
		if what == "testOnlyLeft" {
			list = testOnlyLeft
		}
		for k := range list {
			if !slices.Contains(names, module+"/"+k) {
				t.Errorf("%s names %s, which is gone or used by the product now: remove it from the list", what, k)
			}
		}
	}
}

// use is one reference to a module object: from which top-level
// declaration ("" for none, as a package's init expressions) of which
// package, and whether from a test file.
type use struct {
	from string
	test bool
}

// uses gathers, over every package and test variant, the module's
// exported names and where each is referenced.
type uses struct {
	exported map[string]token.Position // name -> where it is declared
	support  map[string]token.Position // the same, of test-support packages
	refs     map[string]map[use]bool
	// methods of exported types, to find those called only through an
	// interface: name -> the method.
	methods    map[string]*types.Func
	interfaces map[*types.Interface]bool // every interface a production file or a dependency names
	seenPkgs   map[*types.Package]bool
}

func newUses() *uses {
	return &uses{
		exported:   map[string]token.Position{},
		support:    map[string]token.Position{},
		refs:       map[string]map[use]bool{},
		methods:    map[string]*types.Func{},
		interfaces: map[*types.Interface]bool{},
		seenPkgs:   map[*types.Package]bool{},
	}
}

// testSupport reports whether the package at import path p exists only for
// tests, so its files count as test files and its names are not checked.
func testSupport(p string) bool {
	rel, _ := strings.CutPrefix(p, module+"/")
	return slices.Contains(testOnly, rel)
}

// key names a package-level object or a method as pkg.Name or
// pkg.Type.Method; "" for what the check ignores (locals, fields, methods
// of unexported types or of interfaces, other modules).
func key(obj types.Object) string {
	if obj == nil || obj.Pkg() == nil || !strings.HasPrefix(obj.Pkg().Path(), module) {
		return ""
	}
	path := strings.TrimSuffix(obj.Pkg().Path(), "_test")
	switch o := obj.(type) {
	case *types.Func:
		o = o.Origin()
		sig := o.Type().(*types.Signature)
		if sig.Recv() == nil {
			if o.Parent() != o.Pkg().Scope() {
				return ""
			}
			return path + "." + o.Name()
		}
		rt := sig.Recv().Type()
		if p, ok := rt.(*types.Pointer); ok {
			rt = p.Elem()
		}
		n, ok := types.Unalias(rt).(*types.Named)
		if !ok || types.IsInterface(n) {
			return ""
		}
		return path + "." + n.Origin().Obj().Name() + "." + o.Name()
	case *types.Var:
		if o.IsField() || o.Parent() != o.Pkg().Scope() {
			return ""
		}
	case *types.TypeName, *types.Const:
		if o.Parent() != o.Pkg().Scope() {
			return ""
		}
	default:
		return ""
	}
	return path + "." + obj.Name()
}

// add records p's declarations and references.
func (u *uses) add(p *packages.Package) {
	if p.ID == p.PkgPath { // not a test variant
		u.addInterfaces(p.Types)
	}
	support := testSupport(p.PkgPath)
	for i, f := range p.Syntax {
		name := p.CompiledGoFiles[i]
		test := support || strings.HasSuffix(name, "_test.go")
		for _, d := range f.Decls {
			from := declKey(p.TypesInfo, d)
			if !strings.HasSuffix(name, "_test.go") {
				u.declare(p, d)
			}
			ast.Inspect(d, func(n ast.Node) bool {
				id, ok := n.(*ast.Ident)
				if !ok {
					if e, ok := n.(ast.Expr); ok && !test {
						if tv, ok := p.TypesInfo.Types[e]; ok {
							if it, ok := tv.Type.Underlying().(*types.Interface); ok {
								u.interfaces[it] = true
							}
						}
					}
					return true
				}
				k := key(p.TypesInfo.Uses[id])
				if k == "" || k == from {
					return true
				}
				if u.refs[k] == nil {
					u.refs[k] = map[use]bool{}
				}
				u.refs[k][use{from: from, test: test}] = true
				return true
			})
		}
	}
}

// declare records the exported names declaration d of package p declares:
// in exported for a production package, in support for a test-support one.
func (u *uses) declare(p *packages.Package, d ast.Decl) {
	rel, _ := strings.CutPrefix(p.PkgPath, module+"/")
	if _, ok := contract[rel]; ok || p.Name == "main" { // a command's names are no API
		return
	}
	into := u.exported
	if testSupport(p.PkgPath) {
		into = u.support
	}
	var ids []*ast.Ident
	switch d := d.(type) {
	case *ast.FuncDecl:
		ids = append(ids, d.Name)
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				ids = append(ids, s.Name)
			case *ast.ValueSpec:
				ids = append(ids, s.Names...)
			}
		}
	}
	for _, id := range ids {
		obj := p.TypesInfo.Defs[id]
		if obj == nil || !obj.Exported() {
			continue
		}
		k := key(obj)
		if k == "" {
			continue
		}
		if fn, ok := obj.(*types.Func); ok && fn.Type().(*types.Signature).Recv() != nil {
			// A method of an unexported type is not part of the API.
			if n := strings.Split(strings.TrimPrefix(k, p.PkgPath+"."), ".")[0]; !token.IsExported(n) {
				continue
			}
			u.methods[k] = fn
		}
		into[k] = p.Fset.Position(id.Pos())
	}
}

// addInterfaces records the interface types declared at the top of tp and
// of every package it imports: a method matching one may be called through
// it (fmt calls String, raft calls Apply) with no reference to the method.
func (u *uses) addInterfaces(tp *types.Package) {
	if tp == nil || u.seenPkgs[tp] {
		return
	}
	u.seenPkgs[tp] = true
	s := tp.Scope()
	for _, n := range s.Names() {
		if tn, ok := s.Lookup(n).(*types.TypeName); ok {
			if it, ok := tn.Type().Underlying().(*types.Interface); ok {
				u.interfaces[it] = true
			}
		}
	}
	for _, imp := range tp.Imports() {
		u.addInterfaces(imp)
	}
}

// declKey is the key of the top-level object d declares (its first, for a
// group), or "" when it declares none (an init, a blank var).
func declKey(info *types.Info, d ast.Decl) string {
	switch d := d.(type) {
	case *ast.FuncDecl:
		return key(info.Defs[d.Name])
	case *ast.GenDecl:
		for _, s := range d.Specs {
			switch s := s.(type) {
			case *ast.TypeSpec:
				return key(info.Defs[s.Name])
			case *ast.ValueSpec:
				for _, n := range s.Names {
					if k := key(info.Defs[n]); k != "" {
						return k
					}
				}
			}
		}
	}
	return ""
}

// implicit are methods the standard library calls through interfaces it
// declares inside functions (errors.Is and errors.As), out of the reach of
// the scan of package-level interfaces.
var implicit = map[string]bool{"Unwrap": true, "Is": true, "As": true}

// viaInterface reports whether method m of an exported type has the name
// and signature of a method of an interface the program names, so it may
// be called through that interface with no reference to m (fmt calls
// String, raft calls Apply, a listener calls its Store's methods). The
// type need not implement the whole interface: one embedding it may.
func (u *uses) viaInterface(m *types.Func) bool {
	if implicit[m.Name()] {
		return true
	}
	want := sigString(m)
	for it := range u.interfaces {
		for i := range it.NumMethods() {
			if im := it.Method(i); im.Name() == m.Name() && sigString(im) == want {
				return true
			}
		}
	}
	return false
}

// sigString is fn's signature without its receiver or parameter names,
// its types named by package path: packages loaded twice (from source,
// from export data, in a test variant) give the same type distinct objects
// but one string.
func sigString(fn *types.Func) string {
	sig := fn.Type().(*types.Signature)
	q := func(p *types.Package) string { return p.Path() }
	list := func(t *types.Tuple) string {
		var s []string
		for v := range t.Variables() {
			s = append(s, types.TypeString(types.Unalias(v.Type()), q))
		}
		return strings.Join(s, ",")
	}
	return fmt.Sprintf("(%s|%t)(%s)", list(sig.Params()), sig.Variadic(), list(sig.Results()))
}

// verdict returns, sorted, the exported names only tests reference and
// those nothing references. A reference from inside a declaration that is
// itself test-only does not count for production: what only test support
// uses is test support too, so the check repeats until nothing changes.
func (u *uses) verdict() (testOnlyNames, unused []string) {
	flagged := map[string]bool{}
	for changed := true; changed; {
		changed = false
		for k := range u.exported {
			if flagged[k] {
				continue
			}
			inProduct := false
			for r := range u.refs[k] {
				if !r.test && !flagged[r.from] {
					inProduct = true
					break
				}
			}
			if !inProduct {
				if m, ok := u.methods[k]; ok && u.viaInterface(m) {
					continue
				}
				flagged[k] = true
				changed = true
			}
		}
	}
	for k := range flagged {
		if len(u.refs[k]) == 0 {
			unused = append(unused, k)
		} else {
			testOnlyNames = append(testOnlyNames, k)
		}
	}
	slices.Sort(testOnlyNames)
	slices.Sort(unused)
	return testOnlyNames, unused
}

// unusedSupport returns, sorted, the exported names of test-support
// packages that nothing references: test support no test needs.
func (u *uses) unusedSupport() []string {
	var out []string
	for k := range u.support {
		if len(u.refs[k]) > 0 {
			continue
		}
		if m, ok := u.methods[k]; ok && u.viaInterface(m) {
			continue
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
