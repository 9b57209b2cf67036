package main

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers is the house's layering, lowest first: a package imports only
// packages of layers below its own, never one of its own layer (the three
// faces never import each other) or above. A package not listed fails the
// test: adding one means placing it here.
var layers = [][]string{
	{"tracing"}, // OpenTelemetry's export and W3C context: nothing of ours
	{"ttl", "certs", "config", "version", "client", "internal/boltcheck", "internal/conncap", "internal/loopback",
		"internal/testsupport", "internal/history", "internal/faults", "examples/checkout", "examples/idp", "script"},
	{"command"}, // the store's vocabulary: commands, results, errors
	{"fsm", "datadir"},
	{"backup", "storeapi", "raftstore/transport", "fence"},
	{"raftstore", "tokens", "internal/localcluster"},
	{"internal/memstore", "auth", "jwtauth", "internal/httpx", "internal/testcluster", "once", "locks"},
	{"gateway", "api", "resp"},
	{"node", "bench", "reconcile"},
	{"internal/democluster"},
	{"cmd"},
	{"", "examples/payments", "examples/smsconsumer", "tests/e2e"}, // "": the idemgate command itself (main.go)
}

// testOnly are packages no production package may import.
var testOnly = []string{"internal/testsupport", "internal/history", "internal/faults", "internal/memstore",
	"internal/localcluster", "internal/testcluster"}

// storeFree are the listeners and the HTTP plumbing they share: each
// reaches the store through an interface of its own, declared in
// command's and storeapi's terms, and package node wires raftstore in;
// none imports raftstore, nor the state machine (fsm) or its bbolt (their
// tests may, for a real cluster).
var storeFree = []string{"gateway", "api", "resp", "internal/httpx"}

// storeFreeExempt are the storeFree packages that still import raftstore,
// each with what for. The test fails when one no longer needs its
// exemption, so the list only shrinks.
var storeFreeExempt = map[string]string{}

// engineFreeExempt are the storeFree packages that still import fsm, each
// with what for; as storeFreeExempt, it only shrinks.
var engineFreeExempt = map[string]string{}

const module = "github.com/idemgate/idemgate"

// TestLayering holds every package's imports (not its tests') to layers.
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	layerOf := map[string]int{}
	for i, l := range layers {
		for _, p := range l {
			layerOf[p] = i
		}
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return "", true
		}
		return strings.CutPrefix(p, module+"/")
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	n := 0
	for dec.More() {
		var pkg struct {
			ImportPath string
			Imports    []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		name, _ := rel(pkg.ImportPath)
		mine, ok := layerOf[name]
		if !ok {
			t.Errorf("package %q is in no layer: place it in layering_test.go", pkg.ImportPath)
			continue
		}
		n++
		free := slices.Contains(storeFree, name)
		usesStore, usesEngine := false, false
		for _, imp := range pkg.Imports {
			dep, ours := rel(imp)
			if !ours {
				continue
			}
			if free && dep == "raftstore" {
				usesStore = true
				if _, ok := storeFreeExempt[name]; !ok {
					t.Errorf("%s imports %s: declare the store interface it needs in fsm's and storeapi's terms", pkg.ImportPath, imp)
				}
			}
			if free && dep == "fsm" {
				usesEngine = true
				if _, ok := engineFreeExempt[name]; !ok {
					t.Errorf("%s imports %s: speak package command's terms", pkg.ImportPath, imp)
				}
			}
			if theirs, ok := layerOf[dep]; ok && theirs >= mine {
				t.Errorf("%s (layer %d) imports %s (layer %d): imports point down", pkg.ImportPath, mine, imp, theirs)
			}
			for _, to := range testOnly {
				if dep == to && !strings.HasPrefix(name, "internal/") {
					t.Errorf("%s imports %s, which only tests may", pkg.ImportPath, imp)
				}
			}
		}
		if free && slices.ContainsFunc(pkg.Imports, func(imp string) bool { return strings.HasPrefix(imp, "go.etcd.io/bbolt") }) {
			t.Errorf("%s imports bbolt: the store's storage is the state machine's", pkg.ImportPath)
		}
		if why, ok := engineFreeExempt[name]; ok && !usesEngine {
			t.Errorf("%s no longer imports fsm (for %s): drop it from engineFreeExempt", pkg.ImportPath, why)
		}
		if why, ok := storeFreeExempt[name]; ok && !usesStore {
			t.Errorf("%s no longer imports raftstore (for %s): drop it from storeFreeExempt", pkg.ImportPath, why)
		}
	}
	if n < 15 {
		t.Fatalf("only %d packages checked: go list found too few", n)
	}
}

// engine is what the faces and the vocabulary they speak never reach, not
// even through another package: the state machine, its storage and the
// store over it (and bbolt itself, engineOf).
var engine = []string{"fsm", "raftstore", "datadir", "backup"}

// engineFree are the faces and their vocabulary: package command and
// storeapi. A face declares what it needs in their terms, so swapping the
// engine under them changes none of them.
var engineFree = slices.Concat(storeFree, []string{"command", "storeapi"})

// engineOf says which part of the engine dep (an import path) is, if any:
// bbolt for all of bbolt's packages, else the package itself.
func engineOf(dep string) (string, bool) {
	if dep == "go.etcd.io/bbolt" || strings.HasPrefix(dep, "go.etcd.io/bbolt/") {
		return "bbolt", true
	}
	name, ours := strings.CutPrefix(dep, module+"/")
	return name, ours && slices.Contains(engine, name)
}

// TestLayeringReach holds engineFree to their whole dependency graph (go
// list's Deps), where TestLayering looks at direct imports only: a face
// that imports a package of its own layer rules, which imports bbolt for
// one file, reaches bbolt all the same. Each finding names the chain of
// imports that leads there.
func TestLayeringReach(t *testing.T) {
	out, err := exec.Command("go", "list", "-json", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	imports := map[string][]string{}
	deps := map[string][]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var pkg struct {
			ImportPath    string
			Imports, Deps []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		imports[pkg.ImportPath], deps[pkg.ImportPath] = pkg.Imports, pkg.Deps
	}
	for _, name := range engineFree {
		p := module + "/" + name
		ds, ok := deps[p]
		if !ok {
			t.Errorf("go list did not list %s: the check is broken", p)
			continue
		}
		if len(ds) == 0 {
			t.Errorf("go list gave %s no dependencies: the check is broken", p)
		}
		found := map[string]bool{}
		for _, dep := range ds { // sorted: bbolt before its own packages
			part, ok := engineOf(dep)
			if !ok || found[part] {
				continue
			}
			found[part] = true
			t.Errorf("%s reaches %s (%s): speak command's and storeapi's terms, and move what they need out of the engine",
				name, part, strings.Join(importChain(imports, p, dep), " -> "))
		}
	}
}

// importChain is a shortest chain of imports from one package to another,
// through the packages imports lists (this module's); just the two ends
// when the way goes through another module's package.
func importChain(imports map[string][]string, from, to string) []string {
	prev := map[string]string{from: ""}
	queue := []string{from}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		if p == to {
			var chain []string
			for ; p != ""; p = prev[p] {
				chain = append(chain, strings.TrimPrefix(p, module+"/"))
			}
			slices.Reverse(chain)
			return chain
		}
		for _, next := range imports[p] {
			if _, seen := prev[next]; !seen {
				prev[next] = p
				queue = append(queue, next)
			}
		}
	}
	return []string{strings.TrimPrefix(from, module+"/"), "…", to}
}
