// Package auth holds who may use idemgate's API and Redis faces: the roles
// (read, app, admin), the tokens (a name, a role and the SHA-256 of the
// secret, never the secret), and an Access that finds a token by its secret
// or its hash in constant time and says which API endpoints need none.
//
// It speaks no protocol: the API parses the Authorization header and decides
// which role an endpoint needs, the Redis face's AUTH hands over a hash. An
// Access never changes once built; a reload builds another.
package auth
