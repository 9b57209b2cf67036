package storeapi

import "errors"

// Errors a store's callers see. The listeners answer ErrNoLeader,
// ErrTimeout and ErrShutdown with 503 and Retry-After: the store is
// unavailable, nothing was done that the caller must know about (or the
// write's fate is unknown and a retry with the same request id settles it).
var (
	// ErrNoLeader: this node has known no leader for an election timeout,
	// or could reach none before the deadline (no quorum).
	ErrNoLeader = errors.New("no raft leader: cluster has no quorum")
	// ErrTimeout: the deadline passed before the command was applied.
	ErrTimeout = errors.New("raft apply timed out")
	// ErrShutdown: the store is closing.
	ErrShutdown = errors.New("store is shut down")
	// ErrNotLeader: returned by forwarded calls to a node that is not the
	// leader; the caller retries against the new leader.
	ErrNotLeader = errors.New("node is not the leader")
	// ErrRemoved: this node was removed from the cluster; it serves no
	// writes and no linearizable reads until it is added again.
	ErrRemoved = errors.New("this node was removed from the cluster: use another node")
	// ErrDiskFull: the node's disk is nearly full; it refuses writes rather
	// than let Raft's stores fail.
	ErrDiskFull = errors.New("disk nearly full")
	// ErrClockJump: this leader's clock is far ahead of the cluster's; it
	// refuses to stamp commands with it and hands leadership on.
	ErrClockJump = errors.New("clock jumped ahead of the cluster")
	// ErrTooLarge: the command is over the store's command size limit;
	// nothing was proposed.
	ErrTooLarge = errors.New("command too large")
	// ErrReservedKey: a KV key that begins with a NUL byte is idemgate's
	// own (CheckKVKey); nothing was read or proposed.
	ErrReservedKey = errors.New("reserved key: keys that begin with a NUL byte are idemgate's own")

	// ErrUnknownNode: a membership change named a node the cluster lacks.
	ErrUnknownNode = errors.New("unknown node")
	// ErrUnreachableNode: a node to be added did not answer (or, with
	// peer TLS, did not prove its id): it is not added.
	ErrUnreachableNode = errors.New("unreachable node")
	// ErrMembership: a membership change that cannot be made as asked (the
	// last voter, a voter made a non-voter, a leader that could not hand
	// leadership on).
	ErrMembership = errors.New("membership change refused")
	// ErrQuorumAtRisk: the removal would leave fewer reachable voters than
	// a quorum; nothing was changed.
	ErrQuorumAtRisk = errors.New("removal would leave no reachable quorum")
	// ErrNotCaughtUp: a non-voter to be promoted is unreachable or behind.
	ErrNotCaughtUp = errors.New("non-voter not caught up")
)

// Unavailable reports whether err means the store could not serve the call
// (no quorum, deadline, shutdown, not the leader, disk, clock, removed):
// the listeners' 503.
func Unavailable(err error) bool {
	return errors.Is(err, ErrNoLeader) || errors.Is(err, ErrTimeout) ||
		errors.Is(err, ErrShutdown) || errors.Is(err, ErrNotLeader) || errors.Is(err, ErrDiskFull) ||
		errors.Is(err, ErrClockJump) || errors.Is(err, ErrRemoved)
}
