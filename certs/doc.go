// Package certs owns the cluster's transport identity: the cluster CA, one
// certificate per node naming it as idemgate://node/<id> (a URI SAN), their
// generation (idemgate certs), and a Source that holds the node's current
// certificate and CA, reloadable while connections run.
//
// It builds the tls.Configs of the three listeners: mutual TLS 1.3 for the
// Raft port, where the peer's identity is its node id (never a host name),
// and server-only TLS for the API and gateway listeners. It never decides
// who may join: the caller passes the membership check.
package certs
