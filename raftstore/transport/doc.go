// Package transport is a node's Raft port: one TCP port, optionally mutual
// TLS, that carries four protocols told apart by the first byte of each
// connection (mux.go): Raft's own RPCs (the Mux is hashicorp/raft's
// StreamLayer), forwarding (a follower's pipelined requests to the leader,
// frame.go and forward.go; a write's trace context, trace.go), Pub/Sub (a
// node's published messages to each peer, pubsub.go) and hello (what a
// node says of itself, hello.go).
// It owns the wire: the preamble, the frames, the error codes, the limits
// and caps on every inbound connection, and the refusals with their reasons.
//
// It never decides who is a member (the Gate the node gives the Mux does),
// what a forwarded request does (the node's Handler), what a hello says (the
// node builds it) or what a request's payload holds: those are the store's,
// and this package imports nothing of it.
package transport
