package main

// A node's TLS material and API tokens: loaded at start, reloaded on SIGHUP.

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/gateway"
)

// apiAccess turns the file's api block into the API's authorization (nil
// without tokens: the API is open, which CheckExposure allows on loopback
// only).
func apiAccess(file *config.File) (*gateway.Access, error) {
	if len(file.API.Tokens) == 0 {
		return nil, nil
	}
	var toks []gateway.APIToken
	for i, t := range file.API.Tokens {
		role, err := gateway.ParseRole(t.Role)
		if err != nil {
			return nil, &config.Error{Field: fmt.Sprintf("api.tokens[%d].role", i), Msg: err.Error()}
		}
		toks = append(toks, gateway.APIToken{Name: t.Name, Role: role, SHA256: t.Hash})
	}
	access, err := gateway.NewAccess(toks, file.API.Open)
	if err != nil {
		return nil, &config.Error{Field: "api.tokens", Msg: err.Error()}
	}
	return access, nil
}

// reload is SIGHUP: the certificates, and the API tokens from the cluster
// file. What fails to load is logged; the node keeps what it had.
func (s *nodeSettings) reload(n *node, logger *slog.Logger) {
	if err := s.reloadTLS(); err != nil {
		logger.Error("SIGHUP: certificates not reloaded; keeping the current ones", "error", err)
	} else if s.peerTLS != nil {
		logger.Info("SIGHUP: certificates reloaded", "node", s.node.ID, "expires", s.peerTLS.NotAfter())
	}
	if s.configPath == "" {
		return
	}
	file, err := config.Load(s.configPath)
	var access *gateway.Access
	if err == nil {
		access, err = apiAccess(file)
	}
	if err == nil && access == nil && s.access != nil {
		err = errors.New("the file has no api.tokens any more; restart the node to open the API")
	}
	if err != nil {
		logger.Error("SIGHUP: API tokens not reloaded; keeping the current ones", "error", err)
		return
	}
	s.access = access
	n.api.SetAccess(access)
	if access != nil {
		logger.Info("SIGHUP: API tokens reloaded", "node", s.node.ID, "tokens", len(file.API.Tokens))
	}
}

// loadTLS reads the node's certificates; an error names the field.
func (s *nodeSettings) loadTLS() error {
	t, id := s.file.TLS, s.node.ID
	if t == nil {
		return nil
	}
	for _, f := range []struct{ field, path string }{{"tls.ca", t.CA}, {"tls.cert", t.Cert}, {"tls.key", t.Key}} {
		if _, err := os.Stat(s.file.Path(f.path, id)); err != nil {
			return &config.Error{Field: f.field, Msg: err.Error()}
		}
	}
	var err error
	s.peerTLS, err = certs.Load(s.file.Path(t.CA, id), s.file.Path(t.Cert, id), s.file.Path(t.Key, id))
	if err != nil {
		return &config.Error{Field: "tls", Msg: strings.TrimPrefix(err.Error(), "certs: ")}
	}
	if err := s.peerTLS.ExpectNode(id); err != nil {
		return &config.Error{Field: "tls.cert", Msg: strings.TrimPrefix(err.Error(), "certs: ") + " (idemgate certs makes one per node)"}
	}
	s.gatewayTLS = s.peerTLS
	if t.GatewayTLS() && t.GatewayCert != "" {
		// The gateway's own certificate may come from any CA (a public
		// one): clients verify it, not the cluster.
		s.gatewayTLS, err = certs.LoadServer(s.file.Path(t.GatewayCert, id), s.file.Path(t.GatewayKey, id))
		if err != nil {
			return &config.Error{Field: "tls.gateway_cert", Msg: strings.TrimPrefix(err.Error(), "certs: ")}
		}
	}
	return nil
}

// reloadTLS re-reads the certificates (SIGHUP); new connections use them.
func (s *nodeSettings) reloadTLS() error {
	if s.peerTLS == nil {
		return nil
	}
	if err := s.peerTLS.Reload(); err != nil {
		return err
	}
	if s.gatewayTLS != s.peerTLS {
		return s.gatewayTLS.Reload()
	}
	return nil
}
