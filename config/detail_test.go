package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestDetail: a command's complaint names the file, line and field once,
// without the package's prefix; other errors are left as they are.
func TestDetail(t *testing.T) {
	_, parseErr := Parse([]byte("nodes: [{id: n1, raft: \"127.0.0.1:7001\", api: \"127.0.0.1:9001\"}]\nraft: {heartbeat_timeout: soon}\n"))
	if parseErr == nil {
		t.Fatal("Parse took heartbeat_timeout: soon")
	}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{&Error{File: "c.yaml", Line: 3, Field: "routes[0].ttl", Msg: `"24hours" is not a duration`}, `c.yaml:3: routes[0].ttl: "24hours" is not a duration`},
		{&Error{Msg: "line\nbroken  message"}, "line broken message"},
		{fmt.Errorf("node n1: %w", &Error{Field: "tls.cert", Msg: "missing"}), "node n1: config: tls.cert: missing"},
		{errors.New("open c.yaml: no such file"), "open c.yaml: no such file"},
	} {
		if got := Detail(tc.err); got != tc.want {
			t.Errorf("Detail(%q) = %q, want %q", tc.err, got, tc.want)
		}
	}
	if got := Detail(parseErr); got == parseErr.Error() || strings.HasPrefix(got, "config") {
		t.Errorf("Detail(%q) = %q: the prefix stays", parseErr, got)
	}
}
