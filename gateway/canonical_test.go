package gateway

import (
	"testing"

	"github.com/idemgate/idemgate/config"
)

func canonicalOf(t testing.TB, body string, ignore ...string) (string, error) {
	t.Helper()
	n, err := parseJSONBody([]byte(body))
	if err != nil {
		return "", err
	}
	var ptrs [][]string
	for _, p := range ignore {
		ptr, err := config.ParsePointer(p)
		if err != nil {
			t.Fatal(err)
		}
		ptrs = append(ptrs, ptr)
	}
	return string(canonicalJSON(nil, n, ptrs)), nil
}

func TestCanonicalJSON(t *testing.T) {
	tests := []struct {
		body   string
		ignore []string
		want   string
	}{
		{`{"b":1, "a":[true,false,null,"x"]}`, nil, `{"a":[true,false,null,"x"],"b":1}`},
		{"\t{ \"z\" : { \"y\":1,\"x\":2 } }\n", nil, `{"z":{"x":2,"y":1}}`},
		{`{"s":"\u0041\/"}`, nil, `{"s":"A/"}`},
		{`1.50`, nil, `1.50`},
		{`{"meta":{"t":1,"u":2},"a":1}`, []string{"/meta/t"}, `{"a":1,"meta":{"u":2}}`},
		{`{"meta":{"t":1},"a":1}`, []string{"/meta"}, `{"a":1}`},
		{`{"l":[1,2,3]}`, []string{"/l/1"}, `{"l":[1,null,3]}`},
		{`{"a/b":1,"m~n":2,"c":3}`, []string{"/a~1b", "/m~0n"}, `{"c":3}`},
		{`{"a":1}`, []string{"/missing/deep"}, `{"a":1}`},
		{`[{"b":1,"a":2}]`, []string{"/0/a"}, `[{"b":1}]`},
	}
	for _, tt := range tests {
		got, err := canonicalOf(t, tt.body, tt.ignore...)
		if err != nil || got != tt.want {
			t.Errorf("canonical(%s, ignore %v) = %s, %v; want %s", tt.body, tt.ignore, got, err, tt.want)
		}
	}
}

func TestJSONPointerLookup(t *testing.T) {
	n, err := parseJSONBody([]byte(`{"a":{"b":["x","y"]},"":"empty","01":"s"}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ptr  string
		want any // the scalar, or nil for no value
	}{
		{"/a/b/1", "y"}, {"/a/b/0", "x"}, {"/a/b/2", nil}, {"/a/b/01", nil}, {"/a/b/-1", nil},
		{"/", "empty"}, {"/01", "s"}, {"/a/b/x", nil}, {"/nope", nil},
	}
	for _, tt := range tests {
		ptr, _ := config.ParsePointer(tt.ptr)
		v := n.lookup(ptr)
		var got any
		if v != nil {
			got = v.scalar
		}
		if got != tt.want {
			t.Errorf("lookup(%s) = %v, want %v", tt.ptr, got, tt.want)
		}
	}
}

// FuzzCanonicalJSON: any body either fails to parse or has a canonical
// form that is itself valid and canonical (a fixed point), without a panic.
func FuzzCanonicalJSON(f *testing.F) {
	for _, s := range []string{`{"a":1}`, `[1,[2,{"x":null}]]`, `"s"`, `{"a":1,"a":2}`, `{`, `1e400`, `{"\u0000":"\ud800"}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c1, err := canonicalOf(t, body, "/a", "/0/x")
		if err != nil {
			return
		}
		c2, err := canonicalOf(t, c1, "/a", "/0/x")
		if err != nil || c2 != c1 {
			t.Fatalf("canonical(%q) = %q, whose canonical form is %q, %v", body, c1, c2, err)
		}
	})
}
