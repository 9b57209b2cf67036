package cmd

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
)

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCertsCommand runs idemgate certs on a cluster file and checks what it
// wrote with crypto/x509: the chain, the SANs, the key usages, the modes;
// a second run reuses the CA.
func TestCertsCommand(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cluster.yaml")
	os.WriteFile(path, []byte(`nodes:
  - {id: n1, raft: "10.0.0.1:7001", api: "10.0.0.1:9001", listen: "0.0.0.0:8001"}
  - {id: n2, raft: "db2.internal:7001", api: "db2.internal:9001", listen: "db2.internal:8001"}
`), 0o644)
	var out, errOut bytes.Buffer
	if code := certsCmd([]string{"--config", path, "--hosts", "lb.example.com,192.0.2.7"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	cdir := filepath.Join(dir, "certs")
	ca := readCert(t, certs.CAFile(cdir))
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	for _, tc := range []struct {
		id, dns string
		ips     []string
	}{
		{"n1", "lb.example.com", []string{"10.0.0.1", "192.0.2.7"}},
		{"n2", "db2.internal", []string{"192.0.2.7"}},
	} {
		c := readCert(t, certs.NodeFile(cdir, tc.id))
		for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth} {
			if _, err := c.Verify(x509.VerifyOptions{Roots: pool, DNSName: tc.dns, KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
				t.Errorf("%s: %v", tc.id, err)
			}
		}
		var ips []string
		for _, ip := range c.IPAddresses {
			ips = append(ips, ip.String())
		}
		if strings.Join(ips, ",") != strings.Join(tc.ips, ",") {
			t.Errorf("%s: IP SANs %v, want %v (0.0.0.0 names no host)", tc.id, ips, tc.ips)
		}
		if id, err := certs.NodeIDOf(c); id != tc.id || err != nil {
			t.Errorf("%s: names %q, %v", tc.id, id, err)
		}
		if st, err := os.Stat(certs.NodeKeyFile(cdir, tc.id)); err != nil || st.Mode().Perm() != 0o600 {
			t.Errorf("%s: key mode %v", tc.id, st.Mode().Perm())
		}
	}
	if !strings.Contains(out.String(), "tls:\n  ca: certs/ca.pem") {
		t.Errorf("no tls block to paste in:\n%s", out.String())
	}
	out.Reset()
	if code := certsCmd([]string{"--config", path}, &out, &errOut); code != 0 || !strings.Contains(out.String(), "using the CA") {
		t.Fatalf("second run: exit %d, %s", code, out.String())
	}
	if again := readCert(t, certs.CAFile(cdir)); !again.Equal(ca) {
		t.Fatal("a second run replaced the CA: every node's certificate would stop verifying")
	}

	// --node: a new certificate for that node only (a node added again
	// after its removal), the others left as they are.
	n1, n2 := readCert(t, certs.NodeFile(cdir, "n1")), readCert(t, certs.NodeFile(cdir, "n2"))
	out.Reset()
	if code := certsCmd([]string{"--config", path, "--node", "n2"}, &out, &errOut); code != 0 {
		t.Fatalf("--node n2: exit %d: %s", code, errOut.String())
	}
	if !readCert(t, certs.NodeFile(cdir, "n1")).Equal(n1) {
		t.Error("--node n2 replaced n1's certificate")
	}
	if fresh := readCert(t, certs.NodeFile(cdir, "n2")); fresh.Equal(n2) || fresh.SerialNumber.Cmp(n2.SerialNumber) == 0 {
		t.Error("--node n2 did not issue n2 a new certificate")
	}
	errOut.Reset()
	if code := certsCmd([]string{"--config", path, "--node", "n7"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), `--node: "n7" is not in`) {
		t.Errorf("--node n7: exit %d, %q; want 2 naming the unknown node", code, errOut.String())
	}
}

// TestTokenCommand: the second line is a config entry whose hash is the
// first line's.
func TestTokenCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := tokenCmd([]string{"--role", "app", "--name", "checkout"}, &out, &errOut); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || len(lines[0]) < 40 {
		t.Fatalf("output %q", out.String())
	}
	f, err := config.Parse([]byte("nodes: [{id: n1, raft: '127.0.0.1:1', api: '127.0.0.1:2', listen: '127.0.0.1:3'}]\napi:\n  tokens:\n  " + lines[1] + "\n"))
	if err != nil {
		t.Fatalf("the printed entry does not parse: %v", err)
	}
	sum := sha256.Sum256([]byte(lines[0]))
	tok := f.API.Tokens[0]
	if tok.Name != "checkout" || tok.Role != "app" || tok.SHA256 != hex.EncodeToString(sum[:]) {
		t.Fatalf("entry %+v does not hold the secret's hash", tok)
	}
	var again bytes.Buffer
	tokenCmd([]string{"--role", "app"}, &again, &errOut)
	if strings.Split(again.String(), "\n")[0] == lines[0] {
		t.Fatal("two runs printed the same secret")
	}
	for _, args := range [][]string{{"--role", "root"}, {}, {"--role", "app", "--name", "a b"}} {
		errOut.Reset()
		if code := tokenCmd(args, &out, &errOut); code != 2 || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("token %v: exit %d, %q", args, code, errOut.String())
		}
	}
}

// TestTokenEntriesPasteIntoGuide: the entries idemgate token prints go, as
// printed, below "tokens:" in the file of docs/security.md's 3-machine guide
// (and appended to it, since api.tokens ends it): the file then parses with
// those tokens.
func TestTokenEntriesPasteIntoGuide(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	const marker = "tokens:               # idemgate token's second lines go below this one, as printed"
	text := string(readme)
	at := strings.Index(text, marker)
	if at < 0 {
		t.Fatalf("docs/security.md: the 3-machine file's %q line is gone", marker)
	}
	start := strings.LastIndex(text[:at], "```yaml\n") + len("```yaml\n")
	end := at + strings.Index(text[at:], "```")
	file := text[start:end]
	var secrets, entries []string
	for _, args := range [][]string{{"--role", "admin", "--name", "ops"}, {"--role", "app", "--name", "checkout"}} {
		var out, errOut bytes.Buffer
		if code := tokenCmd(args, &out, &errOut); code != 0 {
			t.Fatalf("token %v: exit %d %s", args, code, errOut.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		secrets, entries = append(secrets, lines[0]), append(entries, lines[1])
	}
	for name, pasted := range map[string]string{
		"pasted below tokens:": strings.Replace(file, marker+"\n", marker+"\n"+entries[0]+"\n"+entries[1]+"\n", 1),
		"appended":             file + entries[0] + "\n" + entries[1] + "\n",
	} {
		f, err := config.Parse([]byte(pasted))
		if err != nil {
			t.Fatalf("%s: the file does not parse: %v\n%s", name, err, pasted)
		}
		if len(f.API.Tokens) != 2 {
			t.Fatalf("%s: %d tokens, want 2", name, len(f.API.Tokens))
		}
		for i, tok := range f.API.Tokens {
			if sum := sha256.Sum256([]byte(secrets[i])); tok.Hash != sum {
				t.Errorf("%s: token %d (%s) does not hold its secret's hash", name, i, tok.Name)
			}
		}
	}
}
