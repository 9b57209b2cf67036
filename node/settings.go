package node

// A node's settings, and its TLS material and API tokens: loaded at start,
// reloaded on SIGHUP.

import (
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/idemgate/idemgate/auth"
	"github.com/idemgate/idemgate/certs"
	"github.com/idemgate/idemgate/config"
)

// Settings is everything one node needs, resolved from the cluster file
// (and, for serve, its flags).
type Settings struct {
	File    *config.File
	Node    config.Node
	DataDir string
	// TLS material (nil without tls): the node's certificate for the Raft
	// and API ports, and the gateway's (the node's, or its own).
	PeerTLS, GatewayTLS *certs.Source
	// access is who may call the API (nil without api.tokens).
	Access *auth.Access
	// configPath is the cluster file, re-read on SIGHUP ("" for the
	// embedded default).
	ConfigPath string
	// Bootstrap: with an empty data dir, the node may form a new cluster
	// of the file's nodes, once every one of them answers and holds none.
	// Without it such a node waits to be added (POST /v1/cluster/nodes on
	// a member). A node with Raft state ignores it.
	Bootstrap bool
}

// APIAccess turns the file's api block into the API's authorization (nil
// without tokens: the API is open, which CheckExposure allows on loopback
// only).
func APIAccess(file *config.File) (*auth.Access, error) {
	if len(file.API.Tokens) == 0 {
		return nil, nil
	}
	var toks []auth.Token
	for i, t := range file.API.Tokens {
		role, err := auth.ParseRole(t.Role)
		if err != nil {
			return nil, file.Errorf(fmt.Sprintf("api.tokens[%d].role", i), "%v", err)
		}
		toks = append(toks, auth.Token{Name: t.Name, Role: role, SHA256: t.Hash})
	}
	access, err := auth.NewAccess(toks, file.API.Open)
	if err != nil {
		return nil, file.Errorf("api.tokens", "%v", err)
	}
	return access, nil
}

// Reload is SIGHUP: the certificates, and the API tokens from the cluster
// file. What fails to load is logged; the node keeps what it had. New
// tokens reach open connections too: the API checks every request's, and
// the Redis-protocol listener closes, before SetAuth returns, each
// connection whose token is gone or may no longer write.
func (s *Settings) Reload(n *Node, logger *slog.Logger) {
	if err := s.reloadTLS(); err != nil {
		logger.Error("SIGHUP: certificates not reloaded; keeping the current ones", "error", err)
	} else if s.PeerTLS != nil {
		logger.Info("SIGHUP: certificates reloaded", "node", s.Node.ID, "expires", s.PeerTLS.NotAfter())
	}
	if s.ConfigPath == "" {
		return
	}
	file, err := config.Load(s.ConfigPath)
	var access *auth.Access
	if err == nil {
		access, err = APIAccess(file)
	}
	if err == nil && access == nil && s.Access != nil {
		err = errors.New("the file has no api.tokens any more; restart the node to open the API")
	}
	if err != nil {
		logger.Error("SIGHUP: API tokens not reloaded; keeping the current ones", "error", err)
		return
	}
	s.Access = access
	n.API.SetAccess(access)
	if n.Resp != nil {
		n.Resp.SetAuth(RespAuth(access))
	}
	if access != nil {
		logger.Info("SIGHUP: API tokens reloaded", "node", s.Node.ID, "tokens", len(file.API.Tokens))
	}
}

// LoadTLS reads the node's certificates; an error names the field.
func (s *Settings) LoadTLS() error {
	t, id := s.File.TLS, s.Node.ID
	if t == nil {
		return nil
	}
	if err := s.File.CheckFiles(id); err != nil {
		return err
	}
	var err error
	s.PeerTLS, err = certs.Load(s.File.Path(t.CA, id), s.File.Path(t.Cert, id), s.File.Path(t.Key, id))
	if err != nil {
		return s.File.Errorf("tls", "%s", strings.TrimPrefix(err.Error(), "certs: "))
	}
	if err := s.PeerTLS.ExpectNode(id); err != nil {
		return s.File.Errorf("tls.cert", "%s (idemgate certs makes one per node)", strings.TrimPrefix(err.Error(), "certs: "))
	}
	s.GatewayTLS = s.PeerTLS
	if t.GatewayTLS() && t.GatewayCert != "" {
		// The gateway's own certificate may come from any CA (a public
		// one): clients verify it, not the cluster.
		s.GatewayTLS, err = certs.LoadServer(s.File.Path(t.GatewayCert, id), s.File.Path(t.GatewayKey, id))
		if err != nil {
			return s.File.Errorf("tls.gateway_cert", "%s", strings.TrimPrefix(err.Error(), "certs: "))
		}
	}
	return nil
}

// reloadTLS re-reads the certificates (SIGHUP); new connections use them.
func (s *Settings) reloadTLS() error {
	if s.PeerTLS == nil {
		return nil
	}
	if err := s.PeerTLS.Reload(); err != nil {
		return err
	}
	if s.GatewayTLS != s.PeerTLS {
		return s.GatewayTLS.Reload()
	}
	return nil
}
