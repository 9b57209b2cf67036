package config

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// TLS secures a node's ports with the cluster's CA (see idemgate certs).
// Paths are relative to the cluster file; {id} is the node id.
type TLS struct {
	CA   string `yaml:"ca"`
	Cert string `yaml:"cert"`
	Key  string `yaml:"key"`
	// Gateway: "on" serves the gateway listener over TLS too, with
	// GatewayCert/GatewayKey (default: the node's certificate).
	Gateway     string `yaml:"gateway"`
	GatewayCert string `yaml:"gateway_cert"`
	GatewayKey  string `yaml:"gateway_key"`
}

// API guards the API listener.
type API struct {
	// Tokens are the bearer tokens the API accepts; none: no authorization
	// (allowed on loopback only, or with insecure: true).
	Tokens []APIToken `yaml:"tokens"`
	// Open lists endpoints that need no token, among healthz, readyz and
	// metrics. Absent: all three; [] closes them too.
	Open []string `yaml:"open"`
	// Hosts are the host names clients reach the API by, beside the nodes'
	// API addresses, IP addresses and localhost: a plaintext API refuses a
	// request whose Host names anything else (DNS rebinding).
	Hosts []string `yaml:"hosts"`
}

// hostNameRe is a DNS host name: labels of letters, digits and inner
// hyphens, a trailing dot allowed.
var hostNameRe = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.)*[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\.?$`)

// APIToken is one bearer token: its secret is never in the file, only its
// SHA-256 (sha256) or a file holding the secret itself (secret_file).
type APIToken struct {
	Name       string `yaml:"name"`
	Role       string `yaml:"role"`
	SHA256     string `yaml:"sha256"`
	SecretFile string `yaml:"secret_file"`
	// Hash is the token's SHA-256, from SHA256 or SecretFile (set by
	// validation).
	Hash [32]byte `yaml:"-"`
}

// OpenEndpoints are the endpoints API.Open may name (and opens by default).
var OpenEndpoints = []string{"healthz", "readyz", "metrics"}

// Path resolves a path of the file: {id} replaced, relative to the file's
// directory.
func (f *File) Path(p, id string) string {
	if p == "" {
		return ""
	}
	p = strings.ReplaceAll(p, "{id}", id)
	if filepath.IsAbs(p) || f.Dir == "" {
		return p
	}
	return filepath.Join(f.Dir, p)
}

// GatewayTLS reports whether the gateway listener serves TLS.
func (t *TLS) GatewayTLS() bool { return t != nil && t.Gateway == "on" }

func (f *File) validateSecurity() error {
	if t := f.TLS; t != nil {
		for _, p := range []struct{ name, v string }{{"tls.ca", t.CA}, {"tls.cert", t.Cert}, {"tls.key", t.Key}} {
			if p.v == "" {
				return fieldErr(p.name, "required when tls is set")
			}
		}
		var err error
		if t.Gateway, err = oneOf("tls.gateway", t.Gateway, "off", "on"); err != nil {
			return err
		}
		if (t.GatewayCert == "") != (t.GatewayKey == "") {
			return fieldErr("tls.gateway_cert", "gateway_cert and gateway_key go together")
		}
	}
	names := map[string]bool{}
	for i := range f.API.Tokens {
		tok := &f.API.Tokens[i]
		at := fmt.Sprintf("api.tokens[%d]", i)
		if err := checkID(at+".name", tok.Name); err != nil {
			return err
		}
		if names[tok.Name] {
			return fieldErr(at+".name", "duplicate token name %q", tok.Name)
		}
		names[tok.Name] = true
		switch tok.Role {
		case "admin", "app", "read":
		default:
			return fieldErr(at+".role", "%q: want admin, app or read", tok.Role)
		}
		switch {
		case (tok.SHA256 == "") == (tok.SecretFile == ""):
			return fieldErr(at, "set exactly one of sha256 and secret_file")
		case tok.SHA256 != "":
			b, err := hex.DecodeString(tok.SHA256)
			if err != nil || len(b) != 32 {
				return fieldErr(at+".sha256", "want 64 hex digits (idemgate token prints them)")
			}
			copy(tok.Hash[:], b)
		default:
			secret, err := os.ReadFile(f.Path(tok.SecretFile, ""))
			if err != nil {
				return fieldErr(at+".secret_file", "%v", err)
			}
			s := strings.TrimSpace(string(secret))
			if len(s) < 16 {
				return fieldErr(at+".secret_file", "the secret is shorter than 16 characters")
			}
			if strings.IndexFunc(s, func(r rune) bool { return r < 0x21 || r > 0x7e }) >= 0 {
				return fieldErr(at+".secret_file", "the secret must be visible ASCII, as a bearer token is")
			}
			tok.Hash = sha256.Sum256([]byte(s))
		}
	}
	for i, e := range f.API.Open {
		if !slices.Contains(OpenEndpoints, e) {
			return fieldErr(fmt.Sprintf("api.open[%d]", i), "%q: want one of %s", e, strings.Join(OpenEndpoints, ", "))
		}
	}
	if f.API.Open == nil {
		f.API.Open = OpenEndpoints
	}
	for i, h := range f.API.Hosts {
		if !hostNameRe.MatchString(h) || len(h) > 253 {
			return fieldErr(fmt.Sprintf("api.hosts[%d]", i), "%q: want a host name (api.example.com), without a scheme, port or path", h)
		}
	}
	return nil
}

// CheckExposure refuses to run node n on a network without protection: a
// Raft or API address that is not loopback needs tls, and an API address
// that is not loopback needs api.tokens, unless the file says insecure:
// true. Call it with the node's final addresses (after flags).
func (f *File) CheckExposure(n Node) error {
	if f.Insecure {
		return nil
	}
	if f.TLS == nil {
		for _, a := range []struct{ field, addr string }{{"raft", n.Raft}, {"api", n.API}} {
			if !IsLoopback(a.addr) {
				return f.Errorf("tls", "node %s's %s address %s is not loopback: set tls (idemgate certs makes the files), or insecure: true", n.ID, a.field, a.addr)
			}
		}
	}
	if len(f.API.Tokens) == 0 && !IsLoopback(n.API) {
		return f.Errorf("api.tokens", "node %s's api address %s is not loopback: set api.tokens (idemgate token makes one), or insecure: true", n.ID, n.API)
	}
	// The Redis protocol has no TLS here: its secrets (AUTH) and values
	// cross the network in the clear.
	if n.Resp != "" && !IsLoopback(n.Resp) {
		field := "resp"
		for i, x := range f.Nodes {
			if x.ID == n.ID {
				field = fmt.Sprintf("nodes[%d].resp", i)
			}
		}
		return f.Errorf(field, "node %s's resp address %s is not loopback: the Redis-protocol listener is plaintext; bind it to loopback (or a private network with insecure: true)", n.ID, n.Resp)
	}
	return nil
}

// CheckFiles checks that the TLS files node id reads exist: an error names
// the field, its line, and the path looked at (relative paths are relative
// to the file's directory).
func (f *File) CheckFiles(id string) error {
	t := f.TLS
	if t == nil {
		return nil
	}
	files := []struct{ field, path string }{{"tls.ca", t.CA}, {"tls.cert", t.Cert}, {"tls.key", t.Key}}
	if t.GatewayTLS() {
		files = append(files, struct{ field, path string }{"tls.gateway_cert", t.GatewayCert}, struct{ field, path string }{"tls.gateway_key", t.GatewayKey})
	}
	for _, c := range files {
		if c.path == "" {
			continue
		}
		p := f.Path(c.path, id)
		if _, err := os.Stat(p); err != nil {
			return f.Errorf(c.field, "%s: %s", p, pathErr(err))
		}
	}
	return nil
}

// IsLoopback reports whether host:port binds only loopback (127.0.0.0/8,
// ::1, localhost). 0.0.0.0 and :: bind every interface: not loopback.
func IsLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
