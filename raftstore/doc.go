// Package raftstore wires hashicorp/raft to idemgate's state machine and
// exposes the Store the gateway calls.
//
// It owns the Raft log, stable and snapshot stores (opened by package
// datadir), bootstrap and membership, and the operations the faces call
// (Commands, over commands built by fsm's constructors, with the SETNX
// shortcut and package storeapi's one source of request ids). Any node
// accepts writes: a follower forwards the encoded command, with its request
// id, to the leader over one long-lived pipelined connection, and retries it
// after a cut connection or a leadership change; the state machine applies
// a request id once. Reads are linearizable by the read-index recipe (a
// current-term entry applied, readIndex = CommitIndex, VerifyLeader, same
// term, wait until applied) unless the caller asks for the local state.
//
// The Raft port's wire (the protocol byte, frames, TLS admission, caps,
// the forwarding client and server, hello) is package transport's; this
// package gives it who may connect (members: its Gate), what a forwarded
// request does (forwarded: its Handler) and what a hello says.
//
// A running node's backup (Store.Backup) is spooled into package backup's
// file format; restore, recover and compact, which run on a stopped node,
// are package backup's.
//
// It speaks to its callers in package storeapi's terms (its errors, request
// ids, pipeline results and node and cluster views), so that they need not
// import this package. It never speaks HTTP and never imports a listener.
package raftstore
