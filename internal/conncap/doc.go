// Package conncap is the one per-address connection cap of every port: the
// Raft port's (for connections still in their handshake), the Redis-protocol
// listener's and the two HTTP listeners'. It says which address a connection
// counts under (RemoteIP), counts connections by address against a limit
// (PerIP), and wraps a listener so a connection over the limit is refused
// before anything of it is read (Listener).
//
// It never reads from a connection, and it decides nothing per request: what
// a refused client is told is the port's own (an HTTP 429, a Redis error
// line, a Raft port's silence).
package conncap
