package config

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSecurityErrorsNameTheField(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	tests := []struct {
		name, yaml, want string
	}{
		{"tls without cert", base + "tls: {ca: ca.pem, key: k.pem}\n", "tls.cert"},
		{"tls gateway value", base + "tls: {ca: a, cert: b, key: c, gateway: maybe}\n", "tls.gateway"},
		{"gateway cert without key", base + "tls: {ca: a, cert: b, key: c, gateway_cert: d}\n", "tls.gateway_cert"},
		{"token without role", base + "api: {tokens: [{name: ops, sha256: '" + hash + "'}]}\n", "api.tokens[0].role"},
		{"token bad role", base + "api: {tokens: [{name: ops, role: root, sha256: '" + hash + "'}]}\n", "api.tokens[0].role"},
		{"token short hash", base + "api: {tokens: [{name: ops, role: admin, sha256: 'abcd'}]}\n", "api.tokens[0].sha256"},
		{"token both", base + "api: {tokens: [{name: ops, role: admin, sha256: '" + hash + "', secret_file: s}]}\n", "api.tokens[0]"},
		{"token neither", base + "api: {tokens: [{name: ops, role: admin}]}\n", "api.tokens[0]"},
		{"token missing file", base + "api: {tokens: [{name: ops, role: admin, secret_file: /nonexistent/s}]}\n", "api.tokens[0].secret_file"},
		{"duplicate names", base + "api: {tokens: [{name: a, role: app, sha256: '" + hash + "'}, {name: a, role: read, sha256: '" + hash + "'}]}\n", "api.tokens[1].name"},
		{"bad open", base + "api: {open: [healthz, cluster]}\n", "api.open[1]"},
		{"unknown tls field", base + "tls: {ca: a, cert: b, key: c, colour: red}\n", "tls.colour: unknown field"},
		{"api host with a scheme", base + "api: {hosts: [api.example.com, 'https://x']}\n", "api.hosts[1]"},
		{"api host with a port", base + "api: {hosts: ['api.example.com:9001']}\n", "api.hosts[0]"},
		{"api host empty", base + "api: {hosts: ['']}\n", "api.hosts[0]"},
		{"trusted proxy not an address", base + "trusted_proxies: [10.0.0.0/24, lb.internal]\n", "trusted_proxies[1]"},
		{"trusted proxy bad prefix", base + "trusted_proxies: [10.0.0.0/33]\n", "trusted_proxies[0]"},
		{"trusted proxy with a zone", base + "trusted_proxies: ['fe80::1%eth0']\n", "trusted_proxies[0]"},
		{"untrusted tenant value", base + "untrusted_tenant: allow\n", "untrusted_tenant"},
	}
	for _, tt := range tests {
		_, err := Parse([]byte(tt.yaml))
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("%s: error %v, want one line naming %q", tt.name, err, tt.want)
		}
	}
}

func TestSecretFileAndPaths(t *testing.T) {
	dir := t.TempDir()
	secret := "idg_0123456789abcdef0123"
	os.WriteFile(filepath.Join(dir, "checkout"), []byte(secret+"\n"), 0o600)
	path := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(path, []byte(base+"tls: {ca: certs/ca.pem, cert: 'certs/{id}.pem', key: '/abs/{id}-key.pem'}\n"+
		"api: {tokens: [{name: checkout, role: app, secret_file: checkout}]}\n"), 0o600)
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if f.API.Tokens[0].Hash != sha256.Sum256([]byte(secret)) {
		t.Error("secret_file: the hash is not the trimmed secret's")
	}
	if got := f.Path(f.TLS.Cert, "n1"); got != filepath.Join(dir, "certs", "n1.pem") {
		t.Errorf("cert path = %q, want it beside the file", got)
	}
	if got := f.Path(f.TLS.Key, "n1"); got != "/abs/n1-key.pem" {
		t.Errorf("absolute key path = %q", got)
	}
	if strings.Join(f.API.Open, ",") != "healthz,readyz,metrics" {
		t.Errorf("default open = %v", f.API.Open)
	}
	closed, err := Parse([]byte(base + "api: {open: []}\n"))
	if err != nil || closed.API.Open == nil || len(closed.API.Open) != 0 {
		t.Errorf("open: [] = %v, %v; want an empty, non-nil list", closed.API.Open, err)
	}
}

func TestCheckExposure(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	node := func(raft, api string) Node { return Node{ID: "n1", Raft: raft, API: api, Listen: "0.0.0.0:8001"} }
	tests := []struct {
		name  string
		extra string
		n     Node
		want  string // "" = allowed
	}{
		{"loopback needs nothing", "", node("127.0.0.1:7001", "127.0.0.1:9001"), ""},
		{"localhost and ::1", "", node("localhost:7001", "[::1]:9001"), ""},
		{"public gateway alone is fine", "", node("127.0.0.2:7001", "127.0.0.1:9001"), ""},
		{"raft on a LAN", "", node("10.0.0.1:7001", "127.0.0.1:9001"), "tls:"},
		{"raft on all interfaces", "", node("0.0.0.0:7001", "127.0.0.1:9001"), "tls:"},
		{"api on a LAN without tls", "", node("127.0.0.1:7001", "10.0.0.1:9001"), "tls:"},
		{"api with tls, no tokens", "tls: {ca: a, cert: b, key: c}\n", node("10.0.0.1:7001", "10.0.0.1:9001"), "api.tokens:"},
		{"tls and tokens", "tls: {ca: a, cert: b, key: c}\napi: {tokens: [{name: a, role: admin, sha256: '" + hash + "'}]}\n", node("10.0.0.1:7001", "10.0.0.1:9001"), ""},
		{"insecure", "insecure: true\n", node("10.0.0.1:7001", "10.0.0.1:9001"), ""},
	}
	for _, tt := range tests {
		f, err := Parse([]byte(base + tt.extra))
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		err = f.CheckExposure(tt.n)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.name, err)
		case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), "config: "+tt.want)):
			t.Errorf("%s: %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
}

// TestWildcardBindsMayRepeat: every machine of a cluster may bind the
// gateway on 0.0.0.0:8001; the same specific address twice is a clash.
func TestWildcardBindsMayRepeat(t *testing.T) {
	ok := "nodes:\n  - {id: n1, raft: '10.0.0.1:7001', api: '10.0.0.1:9001', listen: '0.0.0.0:8001'}\n" +
		"  - {id: n2, raft: '10.0.0.2:7001', api: '10.0.0.2:9001', listen: '0.0.0.0:8001'}\n"
	if _, err := Parse([]byte(ok)); err != nil {
		t.Fatalf("wildcard listen on two machines: %v", err)
	}
	clash := strings.Replace(ok, "10.0.0.2:7001", "10.0.0.1:7001", 1)
	if _, err := Parse([]byte(clash)); err == nil || !strings.Contains(err.Error(), "nodes[1].raft") {
		t.Fatalf("the same raft address twice = %v, want an error naming nodes[1].raft", err)
	}
}

// TestAdvertiseAddresses: what the other nodes dial may differ from what a
// node binds; a wildcard raft bind in a cluster needs one.
func TestAdvertiseAddresses(t *testing.T) {
	ok := "nodes:\n  - {id: n1, raft: '0.0.0.0:7001', advertise_raft: '10.0.0.1:7001', api: '0.0.0.0:9001', advertise_api: 'db1.internal:9001', listen: '0.0.0.0:8001'}\n" +
		"  - {id: n2, raft: '10.0.0.2:7001', api: '10.0.0.2:9001', listen: '0.0.0.0:8001'}\n"
	f, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if f.Nodes[0].RaftAddr() != "10.0.0.1:7001" || f.Nodes[0].APIAddr() != "db1.internal:9001" || f.Nodes[1].RaftAddr() != "10.0.0.2:7001" {
		t.Fatalf("advertised = %q %q %q", f.Nodes[0].RaftAddr(), f.Nodes[0].APIAddr(), f.Nodes[1].RaftAddr())
	}
	for _, tc := range []struct{ yaml, want string }{
		{strings.Replace(ok, "advertise_raft: '10.0.0.1:7001', ", "", 1), "nodes[0].advertise_raft"},
		{strings.Replace(ok, "'10.0.0.1:7001'", "'0.0.0.0:7001'", 1), "nodes[0].advertise_raft"},
		{strings.Replace(ok, "'db1.internal:9001'", "'db1.internal'", 1), "nodes[0].advertise_api"},
	} {
		if _, err := Parse([]byte(tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want one naming %s", tc.yaml, err, tc.want)
		}
	}
}

// TestTrustedProxies: absent, trusted_proxies leaves the gateway's default
// (nil); [] trusts nobody; addresses are single-address prefixes and
// prefixes are masked.
func TestTrustedProxies(t *testing.T) {
	for _, tt := range []struct {
		yaml string
		want []string // nil: absent
	}{
		{"", nil},
		{"trusted_proxies: []\n", []string{}},
		{"trusted_proxies: [10.0.0.7, 10.1.2.3/16, '::1', '2001:db8::1/32']\n", []string{"10.0.0.7/32", "10.1.0.0/16", "::1/128", "2001:db8::/32"}},
	} {
		f, err := Parse([]byte(base + tt.yaml))
		if err != nil {
			t.Fatalf("%q: %v", tt.yaml, err)
		}
		if (f.TrustedPrefixes == nil) != (tt.want == nil) || len(f.TrustedPrefixes) != len(tt.want) {
			t.Fatalf("%q: TrustedPrefixes = %v, want %v", tt.yaml, f.TrustedPrefixes, tt.want)
		}
		for i, p := range f.TrustedPrefixes {
			if p.String() != tt.want[i] {
				t.Errorf("%q: prefix %d = %s, want %s", tt.yaml, i, p, tt.want[i])
			}
		}
		if f.UntrustedTenant != "reject" {
			t.Errorf("%q: untrusted_tenant = %q, want the default reject", tt.yaml, f.UntrustedTenant)
		}
	}
}
