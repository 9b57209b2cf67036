package certs

import (
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerateAndLoad(t *testing.T) {
	dir := t.TempDir()
	ca, created, err := LoadOrCreateCA(dir)
	if err != nil || !created {
		t.Fatalf("LoadOrCreateCA = %v, created %v", err, created)
	}
	again, created, err := LoadOrCreateCA(dir)
	if err != nil || created || !again.Cert.Equal(ca.Cert) {
		t.Fatalf("a second LoadOrCreateCA made a new CA (%v, created %v)", err, created)
	}
	if err := ca.IssueNode(dir, NodeRequest{ID: "n1", Hosts: []string{"127.0.0.1", "node1.internal", "127.0.0.1"}}); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{CAKeyFile(dir), NodeKeyFile(dir, "n1")} {
		st, err := os.Stat(f)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: mode %v, %v; want 0600", f, st.Mode().Perm(), err)
		}
	}
	src, err := Load(CAFile(dir), NodeFile(dir, "n1"), NodeKeyFile(dir, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	leaf := src.cur.Load().cert.Leaf
	pool := x509.NewCertPool()
	pool.AddCert(ca.Cert)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("usage %v: %v", usage, err)
		}
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, DNSName: "node1.internal"}); err != nil {
		t.Errorf("DNS SAN: %v", err)
	}
	if len(leaf.IPAddresses) != 1 || !leaf.IPAddresses[0].Equal(net.IPv4(127, 0, 0, 1)) {
		t.Errorf("IP SANs = %v, want [127.0.0.1] once", leaf.IPAddresses)
	}
	if id, err := NodeIDOf(leaf); id != "n1" || err != nil || src.NodeID() != "n1" {
		t.Errorf("NodeIDOf = %q, %v", id, err)
	}
	if leaf.KeyUsage&x509.KeyUsageDigitalSignature == 0 || leaf.IsCA {
		t.Errorf("key usage %v, CA %v", leaf.KeyUsage, leaf.IsCA)
	}
	if !ca.Cert.IsCA || ca.Cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		t.Errorf("CA: IsCA %v, key usage %v", ca.Cert.IsCA, ca.Cert.KeyUsage)
	}

	// A certificate of another CA does not load against this one; a broken
	// reload keeps what was loaded.
	other := t.TempDir()
	oca, _, _ := LoadOrCreateCA(other)
	oca.IssueNode(other, NodeRequest{ID: "n1"})
	if _, err := Load(CAFile(dir), NodeFile(other, "n1"), NodeKeyFile(other, "n1")); err == nil {
		t.Error("a certificate of another CA loaded")
	}
	os.WriteFile(NodeFile(dir, "n1"), []byte("not a certificate"), 0o644)
	if err := src.Reload(); err == nil {
		t.Error("a broken certificate reloaded")
	}
	if src.NodeID() != "n1" {
		t.Error("a failed reload lost the loaded certificate")
	}
}

func TestCAHalfPresentIsRefused(t *testing.T) {
	dir := t.TempDir()
	if _, _, err := LoadOrCreateCA(dir); err != nil {
		t.Fatal(err)
	}
	os.Remove(CAKeyFile(dir))
	if _, _, err := LoadOrCreateCA(dir); err == nil {
		t.Fatal("a CA certificate without its key was replaced or accepted")
	}
	if _, err := os.Stat(filepath.Join(dir, "ca.pem")); err != nil {
		t.Fatal("the CA certificate was removed")
	}
}

func TestNodeIDOf(t *testing.T) {
	u := func(s string) *x509.Certificate {
		c := &x509.Certificate{}
		for _, x := range []string{s} {
			if x != "" {
				p, _ := url.Parse(x)
				c.URIs = append(c.URIs, p)
			}
		}
		return c
	}
	tests := []struct {
		uri, id string
		err     error
	}{
		{"idemgate://node/n1", "n1", nil},
		{"", "", ErrNoIdentity},
		{"spiffe://node/n1", "", ErrNoIdentity},
		{"idemgate://other/n1", "", ErrNoIdentity},
		{"idemgate://node/", "", ErrNoIdentity},
		{"idemgate://node/a/b", "", ErrNoIdentity},
	}
	for _, tt := range tests {
		id, err := NodeIDOf(u(tt.uri))
		if id != tt.id || err != tt.err {
			t.Errorf("NodeIDOf(%q) = %q, %v; want %q, %v", tt.uri, id, err, tt.id, tt.err)
		}
	}
	two := u("idemgate://node/n1")
	p, _ := url.Parse("idemgate://node/n2")
	two.URIs = append(two.URIs, p)
	if _, err := NodeIDOf(two); err != ErrTwoIdentities {
		t.Errorf("two identities: %v", err)
	}
}

// TestReloadKeepsTheNodeIdentity: a reload that would make this node present
// another node's certificate is refused, and the node keeps its own.
func TestReloadKeepsTheNodeIdentity(t *testing.T) {
	dir := t.TempDir()
	ca, _, _ := LoadOrCreateCA(dir)
	ca.IssueNode(dir, NodeRequest{ID: "n1"})
	ca.IssueNode(dir, NodeRequest{ID: "n2"})
	src, err := Load(CAFile(dir), NodeFile(dir, "n1"), NodeKeyFile(dir, "n1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := src.ExpectNode("n2"); err == nil {
		t.Fatal("ExpectNode accepted a certificate naming another node")
	}
	if err := src.ExpectNode("n1"); err != nil {
		t.Fatal(err)
	}
	for _, f := range [][2]string{{NodeFile(dir, "n2"), NodeFile(dir, "n1")}, {NodeKeyFile(dir, "n2"), NodeKeyFile(dir, "n1")}} {
		b, _ := os.ReadFile(f[0])
		os.WriteFile(f[1], b, 0o600)
	}
	if err := src.Reload(); err == nil || !strings.Contains(err.Error(), "refusing to change this node's identity") {
		t.Fatalf("reload of n2's certificate as n1 = %v", err)
	}
	if src.NodeID() != "n1" {
		t.Fatal("the refused reload replaced the certificate")
	}
	// A listener-only certificate needs no cluster CA.
	other := t.TempDir()
	oca, _, _ := LoadOrCreateCA(other)
	oca.IssueNode(other, NodeRequest{ID: "public"})
	if _, err := LoadServer(NodeFile(other, "public"), NodeKeyFile(other, "public")); err != nil {
		t.Fatalf("LoadServer of a certificate from another CA: %v", err)
	}
}
