package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"time"
)

// Lifetimes of what Generate makes. A node certificate is renewed by running
// idemgate certs again (the CA is kept) and sending the node SIGHUP.
const (
	CALifetime   = 10 * 365 * 24 * time.Hour
	NodeLifetime = 2 * 365 * 24 * time.Hour
)

// CA is a loaded certificate authority: its certificate and signing key.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	PEM  []byte
}

// NodeRequest asks for one node's certificate.
type NodeRequest struct {
	ID    string
	Hosts []string // IP addresses and DNS names (from the node's addresses, and --hosts)
}

// The files idemgate certs writes into its directory.

// CAFile is the CA certificate every node and client trusts.
func CAFile(dir string) string { return filepath.Join(dir, "ca.pem") }

// CAKeyFile is the CA's signing key: keep it off the nodes once they have
// their certificates.
func CAKeyFile(dir string) string { return filepath.Join(dir, "ca-key.pem") }

// NodeFile is node id's certificate.
func NodeFile(dir, id string) string { return filepath.Join(dir, id+".pem") }

// NodeKeyFile is node id's private key (mode 0600).
func NodeKeyFile(dir, id string) string { return filepath.Join(dir, id+"-key.pem") }

// LoadOrCreateCA loads the CA from dir, or creates one there when neither
// ca.pem nor ca-key.pem exists (one without the other is an error: a CA
// must never be replaced by accident). created says which happened.
func LoadOrCreateCA(dir string) (ca *CA, created bool, err error) {
	certPEM, errCert := os.ReadFile(CAFile(dir))
	keyPEM, errKey := os.ReadFile(CAKeyFile(dir))
	switch {
	case errCert == nil && errKey == nil:
		ca, err := parseCA(certPEM, keyPEM)
		return ca, false, err
	case errors.Is(errCert, os.ErrNotExist) && errors.Is(errKey, os.ErrNotExist):
	case errCert != nil && !errors.Is(errCert, os.ErrNotExist):
		return nil, false, fmt.Errorf("certs: %w", errCert)
	case errKey != nil && !errors.Is(errKey, os.ErrNotExist):
		return nil, false, fmt.Errorf("certs: %w", errKey)
	default:
		return nil, false, fmt.Errorf("certs: %s and %s must both exist or both be absent", CAFile(dir), CAKeyFile(dir))
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, false, fmt.Errorf("certs: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, false, err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: "idemgate cluster CA", Organization: []string{"idemgate"}},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(CALifetime),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, false, err
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if keyPEM, err = encodeKey(key); err != nil {
		return nil, false, err
	}
	if err := writeFile(CAKeyFile(dir), keyPEM, 0o600); err != nil {
		return nil, false, err
	}
	if err := writeFile(CAFile(dir), certPEM, 0o644); err != nil {
		return nil, false, err
	}
	ca, err = parseCA(certPEM, keyPEM)
	return ca, true, err
}

func parseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCert(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, errors.New("certs: the CA certificate is not a CA")
	}
	key, err := parseKey(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	if !publicKeysEqual(cert.PublicKey, key.Public()) {
		return nil, errors.New("certs: the CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, Key: key, PEM: certPEM}, nil
}

// IssueNode writes <id>.pem and <id>-key.pem into dir: a certificate for
// both ends of TLS (server and client auth), naming the node by its URI SAN
// and every host in r.Hosts (IP or DNS SANs), signed by ca.
func (ca *CA) IssueNode(dir string, r NodeRequest) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: r.ID, Organization: []string{"idemgate"}},
		NotBefore:    now.Add(-time.Hour),
		NotAfter:     now.Add(NodeLifetime),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		URIs:         []*url.URL{NodeURI(r.ID)},
	}
	seen := map[string]bool{}
	for _, h := range r.Hosts {
		if h == "" || seen[h] {
			continue
		}
		seen[h] = true
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return err
	}
	keyPEM, err := encodeKey(key)
	if err != nil {
		return err
	}
	// The key first: a certificate never sits beside a key it does not match.
	if err := writeFile(NodeKeyFile(dir, r.ID), keyPEM, 0o600); err != nil {
		return err
	}
	return writeFile(NodeFile(dir, r.ID), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o644)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		panic(err) // crypto/rand never fails on Linux
	}
	return n.Add(n, big.NewInt(1))
}

func encodeKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

// writeFile replaces path atomically with data and mode (a rename over the
// old file, so a reader never sees half a certificate).
func writeFile(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path))
	if err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(mode); err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		return fmt.Errorf("certs: write %s: %w", path, err)
	}
	return nil
}
