package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckConfigJWTFiles: check-config reads the jwt section's key file
// as serve does, and names the field of one it cannot use, on one line.
func TestCheckConfigJWTFiles(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("cluster.yaml", `nodes: [{id: n1, raft: "127.0.0.1:7001", api: "127.0.0.1:9001", listen: "127.0.0.1:8001"}]
upstream: http://127.0.0.1:3000
jwt: {keys_file: jwks.json}
routes: [{name: pay, path: /pay, tenant: "jwt:sub"}]
`)
	for _, tt := range []struct{ name, jwks, want string }{
		{"not JSON", `{"keys": [`, "jwt.keys_file: keys file "},
		{"no usable key", `{"keys": [{"kty": "oct", "k": "AAAA"}]}`, "no usable signature key"},
	} {
		write("jwks.json", tt.jwks)
		code, _, stderr := runArgs("check-config", filepath.Join(dir, "cluster.yaml"))
		if code != 2 || !strings.Contains(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%s: exit %d, %q; want 2 and one line with %q", tt.name, code, stderr, tt.want)
		}
	}
	write("jwks.json", `{"keys": [{"kty": "OKP", "crv": "Ed25519", "kid": "k", "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}`)
	if code, out, stderr := runArgs("check-config", filepath.Join(dir, "cluster.yaml")); code != 0 {
		t.Errorf("a good JWKS: exit %d, %s%s", code, out, stderr)
	}
}
