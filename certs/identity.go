package certs

import (
	"crypto/x509"
	"errors"
	"net/url"
	"strings"
)

// URIScheme and uriHost make a node's identity URI: idemgate://node/<id>.
const (
	URIScheme = "idemgate"
	uriHost   = "node"
)

// Errors of peer identity, each a reason counted when a peer is refused.
var (
	// ErrNoIdentity: the certificate chains to the CA but names no node.
	ErrNoIdentity = errors.New("certificate names no idemgate node")
	// ErrTwoIdentities: the certificate names more than one node.
	ErrTwoIdentities = errors.New("certificate names more than one idemgate node")
)

// NodeURI is the URI SAN that names node id.
func NodeURI(id string) *url.URL {
	return &url.URL{Scheme: URIScheme, Host: uriHost, Path: "/" + id}
}

// NodeIDOf returns the node id a certificate names in its URI SANs.
func NodeIDOf(cert *x509.Certificate) (string, error) {
	id := ""
	for _, u := range cert.URIs {
		if u.Scheme != URIScheme || u.Host != uriHost {
			continue
		}
		got := strings.TrimPrefix(u.Path, "/")
		if got == "" || strings.Contains(got, "/") {
			continue
		}
		if id != "" && id != got {
			return "", ErrTwoIdentities
		}
		id = got
	}
	if id == "" {
		return "", ErrNoIdentity
	}
	return id, nil
}
