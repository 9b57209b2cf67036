package config

import (
	"fmt"
	"strings"
)

// Default is the embedded configuration of `idemgate serve` without flags:
// a single-node cluster on loopback, data in ./idemgate-data, and one route
// that makes every POST or PATCH carrying an Idempotency-Key idempotent
// (Stripe's convention; requests without a key pass through).
func Default() *File {
	f := &File{
		Nodes:    []Node{{ID: "n1", Raft: "127.0.0.1:8082", API: "127.0.0.1:8081", Listen: "127.0.0.1:8080"}},
		DataDir:  "./idemgate-data",
		Upstream: "http://127.0.0.1:3000",
		Routes: []Route{{Name: "default", Methods: []string{"POST", "PATCH"}, Path: "/*",
			RequireKey: new(bool)}},
	}
	if err := f.validate(); err != nil {
		panic("config: the embedded default is invalid: " + err.Error())
	}
	return f
}

// Node returns the node called id.
func (f *File) Node(id string) (Node, error) {
	for _, n := range f.Nodes {
		if n.ID == id {
			return n, nil
		}
	}
	ids := make([]string, len(f.Nodes))
	for i, n := range f.Nodes {
		ids[i] = n.ID
	}
	in := "the file"
	if f.Name != "" {
		in = f.Name
	}
	return Node{}, &Error{Field: "--node", Msg: fmt.Sprintf("%q is not in %s (nodes: %s)", id, in, strings.Join(ids, ", "))}
}

// DataDirFor is the data directory of node id: data_dir with {id}
// replaced, relative to the file's directory.
func (f *File) DataDirFor(id string) string { return f.Path(f.DataDir, id) }
