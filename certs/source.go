package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"time"
)

// Source is a node's TLS material: its certificate and key, and the cluster
// CA, read from files. Reload re-reads them; connections already made keep
// what they were made with, new ones use the new material. A Source is safe
// for concurrent use.
type Source struct {
	caPath, certPath, keyPath string
	// node, when set, is the node every reloaded certificate must name.
	node string
	cur  atomic.Pointer[material]
}

type material struct {
	cert tls.Certificate // Leaf set
	pool *x509.CertPool
	id   string // the node the certificate names ("" for a listener-only certificate)
}

// Load reads the CA, the certificate and its key. The certificate must chain
// to the CA.
func Load(caPath, certPath, keyPath string) (*Source, error) {
	s := &Source{caPath: caPath, certPath: certPath, keyPath: keyPath}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// LoadServer reads a certificate and its key for a listener only (the
// gateway's own certificate, from a public CA, say): no cluster CA, no node
// identity.
func LoadServer(certPath, keyPath string) (*Source, error) {
	s := &Source{certPath: certPath, keyPath: keyPath}
	if err := s.Reload(); err != nil {
		return nil, err
	}
	return s, nil
}

// ExpectNode checks that the certificate names node id, and makes every
// later Reload refuse one that does not (a node must never take on another
// node's identity by a file swap).
func (s *Source) ExpectNode(id string) error {
	if got := s.NodeID(); got != id {
		return fmt.Errorf("certs: %s names node %q, not %q", s.certPath, got, id)
	}
	s.node = id
	return nil
}

// Reload re-reads the files; on any error the current material stays.
func (s *Source) Reload() error {
	var pool *x509.CertPool
	if s.caPath != "" {
		caPEM, err := os.ReadFile(s.caPath)
		if err != nil {
			return fmt.Errorf("certs: ca: %w", err)
		}
		pool = x509.NewCertPool()
		if !pool.AppendCertsFromPEM(caPEM) {
			return fmt.Errorf("certs: ca: %s holds no PEM certificate", s.caPath)
		}
	}
	cert, err := tls.LoadX509KeyPair(s.certPath, s.keyPath)
	if err != nil {
		return fmt.Errorf("certs: cert/key: %w", err)
	}
	leaf := cert.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(cert.Certificate[0]); err != nil {
			return fmt.Errorf("certs: cert: %w", err)
		}
		cert.Leaf = leaf
	}
	if pool != nil {
		inter := x509.NewCertPool()
		for _, der := range cert.Certificate[1:] {
			if c, err := x509.ParseCertificate(der); err == nil {
				inter.AddCert(c)
			}
		}
		if _, err := leaf.Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageAny}}); err != nil {
			return fmt.Errorf("certs: %s does not chain to %s: %w", s.certPath, s.caPath, err)
		}
	}
	id, _ := NodeIDOf(leaf)
	if s.node != "" && id != s.node {
		return fmt.Errorf("certs: %s names node %q, not %q: refusing to change this node's identity", s.certPath, id, s.node)
	}
	s.cur.Store(&material{cert: cert, pool: pool, id: id})
	return nil
}

// NodeID is the node the certificate names ("" when it names none).
func (s *Source) NodeID() string { return s.cur.Load().id }

// NotAfter is when the certificate expires.
func (s *Source) NotAfter() time.Time { return s.cur.Load().cert.Leaf.NotAfter }

// PeerError is why a peer was refused; Reason is the metric label.
type PeerError struct {
	Reason string // no_certificate, unknown_ca, invalid_certificate, no_identity, not_member, wrong_node, removed_certificate
	Err    error
}

func (e *PeerError) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *PeerError) Unwrap() error { return e.Err }

// verifyPeer checks a peer's chain against the current CA for usage and
// returns the node id it names.
func (s *Source) verifyPeer(certs []*x509.Certificate, usage x509.ExtKeyUsage) (string, error) {
	if len(certs) == 0 {
		return "", &PeerError{"no_certificate", errors.New("the peer sent no certificate")}
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{Roots: s.cur.Load().pool, Intermediates: inter, KeyUsages: []x509.ExtKeyUsage{usage}})
	if err != nil {
		var ua x509.UnknownAuthorityError
		if errors.As(err, &ua) {
			return "", &PeerError{"unknown_ca", err}
		}
		return "", &PeerError{"invalid_certificate", err}
	}
	id, err := NodeIDOf(certs[0])
	if err != nil {
		return "", &PeerError{"no_identity", err}
	}
	return id, nil
}

// PeerServer is the accepting side of the Raft port: TLS 1.3 only, a client
// certificate chained to the CA is required, and allow must accept the node
// id it names and the certificate itself (allow's error is wrapped as
// reason not_member, unless allow returns a *PeerError of its own). All of
// it happens in the handshake, before a byte of the protocol is read. A
// client certificate is requested rather than required so that a client
// without one is refused here, as no_certificate, and not by the TLS stack
// with a bare handshake error.
func (s *Source) PeerServer(allow func(id string, leaf *x509.Certificate) error) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		ClientAuth:     tls.RequestClientCert,
		GetCertificate: s.getCertificate,
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := s.verifyPeer(cs.PeerCertificates, x509.ExtKeyUsageClientAuth)
			if err != nil {
				return err
			}
			return wrapAllow(allow(id, cs.PeerCertificates[0]))
		},
	}
}

func wrapAllow(err error) error {
	var pe *PeerError
	if err == nil || errors.As(err, &pe) {
		return err
	}
	return &PeerError{"not_member", err}
}

// PeerClient is the dialing side: TLS 1.3, this node's certificate, and the
// server must present a certificate chained to the CA naming node want (any
// node when want is ""), which allow (if not nil) must accept too.
func (s *Source) PeerClient(want string, allow func(id string, leaf *x509.Certificate) error) *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		// The identity is the node id in the URI SAN, not a host name:
		// VerifyConnection checks the chain and the id itself.
		InsecureSkipVerify: true,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			return &s.cur.Load().cert, nil
		},
		VerifyConnection: func(cs tls.ConnectionState) error {
			id, err := s.verifyPeer(cs.PeerCertificates, x509.ExtKeyUsageServerAuth)
			if err != nil {
				return err
			}
			if want != "" && id != want {
				return &PeerError{"wrong_node", fmt.Errorf("dialled node %q, the certificate names %q", want, id)}
			}
			if allow == nil {
				return nil
			}
			return wrapAllow(allow(id, cs.PeerCertificates[0]))
		},
	}
}

// Server is a server-only TLS config (the API and gateway listeners): TLS
// 1.2 or later with the current certificate; clients verify it with the CA
// (or a public CA, for a gateway certificate of its own).
func (s *Source) Server() *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: s.getCertificate}
}

func (s *Source) getCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return &s.cur.Load().cert, nil
}

func parseCert(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKey(b []byte) (crypto.Signer, error) {
	block, _ := pem.Decode(b)
	if block == nil {
		return nil, errors.New("no PEM block")
	}
	var key any
	var err error
	switch block.Type {
	case "PRIVATE KEY":
		key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	case "EC PRIVATE KEY":
		key, err = x509.ParseECPrivateKey(block.Bytes)
	case "RSA PRIVATE KEY":
		key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
	default:
		return nil, fmt.Errorf("unsupported PEM block %q", block.Type)
	}
	if err != nil {
		return nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("key of type %T cannot sign", key)
	}
	return signer, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	switch k := a.(type) {
	case *ecdsa.PublicKey:
		return k.Equal(b)
	case *rsa.PublicKey:
		return k.Equal(b)
	case ed25519.PublicKey:
		return k.Equal(b)
	}
	return false
}
