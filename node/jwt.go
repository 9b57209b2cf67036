package node

import (
	"errors"
	"log/slog"
	"strings"

	"github.com/idemgate/idemgate/config"
	"github.com/idemgate/idemgate/jwtauth"
)

// JWTVerifier builds the gateway's bearer JWT verifier from the file's jwt
// section (nil without one): jwtauth's defaults and what the file sets.
// It reads the key and secret files (an error names the field), not the
// JWKS URL: the node fetches that as it starts (startJWT).
func JWTVerifier(file *config.File, logger *slog.Logger) (*jwtauth.Verifier, error) {
	j := file.JWT
	if j == nil {
		return nil, nil
	}
	c := jwtauth.DefaultConfig()
	c.JWKSURL, c.KeysFile, c.SecretFile = j.JWKSURL, file.Path(j.KeysFile, ""), file.Path(j.SecretFile, "")
	c.Issuer, c.Audiences, c.Algorithms = j.Issuer, j.Audience, j.Algorithms
	if j.Leeway != 0 {
		c.Leeway = j.Leeway.D()
	}
	setDuration(&c.FetchTimeout, j.FetchTimeout)
	setDuration(&c.Refresh, j.Refresh)
	setDuration(&c.MinRefetch, j.MinRefetch)
	if j.MaxKeysSize > 0 {
		c.MaxKeysBytes = int64(j.MaxKeysSize)
	}
	c.Logger = logger
	v, err := jwtauth.New(c)
	if err != nil {
		field := "jwt"
		switch {
		case errors.Is(err, jwtauth.ErrKeysFile):
			field = "jwt.keys_file"
		case errors.Is(err, jwtauth.ErrSecretFile):
			field = "jwt.secret_file"
		}
		return nil, file.Errorf(field, "%s", strings.TrimPrefix(err.Error(), "jwtauth: "))
	}
	return v, nil
}

// startJWT fetches the JWKS URL once as the node starts. A failure is
// logged, not fatal: an identity provider that is down must not keep the
// gateway from starting, and the first token whose key is missing tries
// again (until then such requests get 503).
func startJWT(v *jwtauth.Verifier, file *config.File, logger *slog.Logger) {
	if v == nil || file.JWT.JWKSURL == "" {
		return
	}
	if err := v.Load(); err != nil {
		logger.Warn("jwt: the JWKS could not be fetched at start; requests that need it retry it", "error", err)
	}
}
