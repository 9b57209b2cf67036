package cmd

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
)

// certsCmd is `idemgate certs`: the cluster CA (created if absent, reused
// otherwise) and a certificate per node of the cluster file.
func certsCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate certs --config FILE [--out DIR] [--hosts H,...] [--node ID]"
	fs := flag.NewFlagSet("certs", flag.ContinueOnError)
	configPath := fs.String("config", "", "the cluster file (required)")
	out := fs.String("out", "", "directory for the files (default: the directory of tls.ca in the file, else certs/ beside the file)")
	hosts := fs.String("hosts", "", "extra host names or IPs for every node's certificate, comma-separated")
	only := fs.String("node", "", "issue a new certificate for this node only (a node added again after its removal needs one: the old one is refused)")
	if _, code, ok := commandLine(fs, "certs", usage, "", args, stdout, stderr); !ok {
		return code
	}
	if *configPath == "" {
		fmt.Fprintf(stderr, "idemgate certs: --config: required (usage: %s)\n", usage)
		return 2
	}
	file, err := config.Load(*configPath)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate certs: %s\n", config.Detail(err))
		return 2
	}
	dir := *out
	switch {
	case dir != "":
	case file.TLS != nil:
		dir = filepath.Dir(file.Path(file.TLS.CA, ""))
	default:
		dir = file.Path("certs", "")
	}
	var extra []string
	for _, h := range strings.Split(*hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			extra = append(extra, h)
		}
	}
	nodes := file.Nodes
	if *only != "" {
		n, err := file.Node(*only)
		if err != nil {
			fmt.Fprintf(stderr, "idemgate certs: --node: %s\n", config.Detail(err))
			return 2
		}
		nodes = []config.Node{n}
	}
	ca, created, err := certs.LoadOrCreateCA(dir)
	if err != nil {
		fmt.Fprintf(stderr, "idemgate certs: %v\n", err)
		return 1
	}
	if created {
		fmt.Fprintf(stdout, "new CA: %s (key %s, mode 0600: keep it off the nodes)\n", certs.CAFile(dir), certs.CAKeyFile(dir))
	} else {
		fmt.Fprintf(stdout, "using the CA in %s\n", certs.CAFile(dir))
	}
	for _, n := range nodes {
		req := certs.NodeRequest{ID: n.ID, Hosts: unique(append(nodeHosts(n), extra...))}
		if err := ca.IssueNode(dir, req); err != nil {
			fmt.Fprintf(stderr, "idemgate certs: node %s: %v\n", n.ID, err)
			return 1
		}
		fmt.Fprintf(stdout, "%s: %s, %s (%s; %s)\n", n.ID, certs.NodeFile(dir, n.ID), certs.NodeKeyFile(dir, n.ID),
			certs.NodeURI(n.ID), strings.Join(req.Hosts, ", "))
	}
	if file.TLS == nil {
		rel, err := filepath.Rel(file.Dir, dir)
		if err != nil {
			rel = dir
		}
		fmt.Fprintf(stdout, "\nadd to %s:\ntls:\n  ca: %s\n  cert: %s\n  key: %s\n", *configPath,
			filepath.Join(rel, "ca.pem"), filepath.Join(rel, "{id}.pem"), filepath.Join(rel, "{id}-key.pem"))
	}
	return 0
}

// nodeHosts are the hosts of a node's addresses, for its certificate's
// SANs: what API clients and peers dial. Wildcard binds name no host.
func nodeHosts(n config.Node) []string {
	var out []string
	for _, a := range []string{n.Raft, n.API, n.Listen, n.AdvertiseRaft, n.AdvertiseAPI} {
		host, _, err := net.SplitHostPort(a)
		if err != nil || host == "" {
			continue
		}
		if ip := net.ParseIP(host); ip != nil && ip.IsUnspecified() {
			continue
		}
		out = append(out, host)
	}
	return out
}

func unique(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// tokenIndent is the indentation of the entry idemgate token prints.
const tokenIndent = "    "

// tokenCmd is `idemgate token`: a new API secret and the config entry that
// holds its hash (the file never holds the secret).
func tokenCmd(args []string, stdout, stderr io.Writer) int {
	const usage = "idemgate token --role admin|app|read [--name N]"
	fs := flag.NewFlagSet("token", flag.ContinueOnError)
	role := fs.String("role", "", "admin, app or read (required)")
	name := fs.String("name", "", "the token's name in logs (default: the role and 4 random hex digits)")
	if _, code, ok := commandLine(fs, "token", usage, "", args, stdout, stderr); !ok {
		return code
	}
	switch *role {
	case "admin", "app", "read":
	default:
		fmt.Fprintf(stderr, "idemgate token: --role: %q: want admin, app or read\n", *role)
		return 2
	}
	var raw [32]byte
	if _, err := rand.Read(raw[:]); err != nil {
		fmt.Fprintf(stderr, "idemgate token: %v\n", err)
		return 1
	}
	if *name == "" {
		*name = *role + "-" + hex.EncodeToString(raw[:2])
	}
	if _, err := config.Parse([]byte(fmt.Sprintf("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2', listen: '127.0.0.1:3'}]\napi: {tokens: [{name: %q, role: %s, sha256: %q}]}",
		*name, *role, strings.Repeat("0", 64)))); err != nil {
		fmt.Fprintf(stderr, "idemgate token: --name: %q: want 1-64 letters, digits, '_', '.', '-'\n", *name)
		return 2
	}
	secret := "idg_" + base64.RawURLEncoding.EncodeToString(raw[:])
	sum := sha256.Sum256([]byte(secret))
	fmt.Fprintln(stdout, secret)
	// Indented as an item of api.tokens in a file that writes it
	// "api:\n  tokens:" (docs/security.md's, cluster.example.yaml's), so the line
	// pastes (or appends, when api.tokens ends the file) as printed.
	fmt.Fprintf(stdout, "%s- {name: %s, role: %s, sha256: \"%s\"}\n", tokenIndent, *name, *role, hex.EncodeToString(sum[:]))
	return 0
}
