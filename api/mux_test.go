package api

import (
	"slices"
	"strings"
	"testing"
)

// TestMuxResolve: which resource takes a path, and the parameters it
// reads, for the paths the router must tell apart and hostile ones: a
// parameter holding a slash, empty parameters, a literal suffix that
// overlaps the prefix, paths that are near a route but none.
func TestMuxResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		path, want string
		params     []string
	}{
		{"/healthz", "/healthz", nil},
		{"/healthz/", "", nil},
		{"", "", nil},
		{"/", "", nil},
		{"//", "", nil},
		{"/v1/kv", "", nil},
		{"/v1/kv/", "/v1/kv/{key...}", []string{""}},
		{"/v1/kv/k", "/v1/kv/{key...}", []string{"k"}},
		{"/v1/kv/a/b/", "/v1/kv/{key...}", []string{"a/b/"}},
		{"/v1/kv/k/renew", "/v1/kv/{key...}", []string{"k/renew"}},
		{"/v1/kv/%2F", "/v1/kv/{key...}", []string{"%2F"}},
		{"/v1/records/export", exportPath, nil},
		{"/v1/records/export/x", "/v1/records/{scope}/{key...}", []string{"export", "x"}},
		{"/v1/records/pay", "", nil},
		{"/v1/records/pay/", "/v1/records/{scope}/{key...}", []string{"pay", ""}},
		{"/v1/records//k", "/v1/records/{scope}/{key...}", []string{"", "k"}},
		{"/v1/records/pay/a/b", "/v1/records/{scope}/{key...}", []string{"pay", "a/b"}},
		{"/v1/once/pay", "", nil},
		{"/v1/once/pay/k", "/v1/once/{scope}/{key}", []string{"pay", "k"}},
		{"/v1/once/pay/k/", "", nil},
		{"/v1/once/pay/k/begin", "/v1/once/{scope}/{key}/begin", []string{"pay", "k"}},
		{"/v1/once/pay/k/beginx", "", nil},
		{"/v1/once/pay/k/begin/more", "", nil},
		{"/v1/once//begin", "/v1/once/{scope}/{key}", []string{"", "begin"}},
		{"/v1/once/sms//begin", "/v1/once/{scope}/{key}/begin", []string{"sms", ""}},
		{"/v1/locks/", "/v1/locks/{name...}", []string{""}},
		{"/v1/locks/renew", "/v1/locks/{name...}", []string{"renew"}},
		{"/v1/locks//renew", "/v1/locks/{name...}/renew", []string{""}},
		{"/v1/locks/x/renew", "/v1/locks/{name...}/renew", []string{"x"}},
		{"/v1/locks/x/renew/renew", "/v1/locks/{name...}/renew", []string{"x/renew"}},
		{"/v1/cluster/nodes", "/v1/cluster/nodes", nil},
		{"/v1/cluster/nodes/", "/v1/cluster/nodes/{id...}", []string{""}},
		{"/v1/cluster/nodes/promote", "/v1/cluster/nodes/{id...}", []string{"promote"}},
		{"/v1/cluster/nodes/n1/promote", "/v1/cluster/nodes/{id...}/promote", []string{"n1"}},
		{"/v1/cluster/nodes/promote/promote", "/v1/cluster/nodes/{id...}/promote", []string{"promote"}},
		{"/V1/STATUS", "", nil},
		{"/v1/status\x00", "", nil},
		{"/v1/kv/" + strings.Repeat("k", 1<<16), "/v1/kv/{key...}", []string{strings.Repeat("k", 1<<16)}},
	} {
		r, p := roles.resolve(tc.path)
		got := ""
		if r != nil {
			got = r.path
		}
		if got != tc.want || !slices.Equal(p, tc.params) {
			t.Errorf("resolve(%.60q) = %q %.60q, want %q %.60q", tc.path, got, p, tc.want, tc.params)
		}
	}
}

// TestMuxAllow: a 405's Allow and detail name every method of the
// resource, HEAD beside GET, in one order.
func TestMuxAllow(t *testing.T) {
	t.Parallel()
	for path, want := range map[string][2]string{
		"/v1/kv/k":             {"GET, HEAD, PUT, POST, DELETE", "use GET, HEAD, PUT, POST (an increment) or DELETE"},
		"/v1/records/pay/k":    {"GET, HEAD, DELETE", "use GET, HEAD or DELETE"},
		"/v1/locks/x":          {"GET, HEAD, POST, DELETE", "use GET, HEAD, POST or DELETE"},
		"/v1/snapshot":         {"GET, HEAD, POST", "use GET, HEAD or POST"},
		"/v1/status":           {"GET, HEAD", "use GET, HEAD"},
		"/v1/tokens":           {"POST", "use POST"},
		"/v1/cluster/nodes/n1": {"DELETE", "use DELETE"},
	} {
		r, _ := roles.resolve(path)
		if r == nil || r.allow != want[0] || r.allowed != want[1] {
			t.Errorf("%s: 405 Allow and detail = %v, want %q", path, r, want)
		}
	}
}

// FuzzMuxResolve: any path is resolved without a panic, to a resource
// whose pattern takes it with the parameters answered.
func FuzzMuxResolve(f *testing.F) {
	for _, s := range []string{"/v1/kv/a/b", "/v1/locks//renew", "/v1/once/a/b/begin", "/v1/cluster/nodes/promote", "/v1/records/a/", "{", "/v1/kv/{key...}"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, path string) {
		r, p := roles.resolve(path)
		if r == nil {
			return
		}
		if q, ok := match(r.pat, path); !ok || !slices.Equal(p, q) {
			t.Fatalf("resolve(%q) = %s %q, which does not match it", path, r.path, p)
		}
		if r.find("GET") == nil && r.find("POST") == nil && r.find("PUT") == nil && r.find("DELETE") == nil {
			t.Fatalf("%s answers no method", r.path)
		}
	})
}
