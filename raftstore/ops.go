package raftstore

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
	"github.com/idemgate/idemgate/ttl"
)

// Commands are the typed operations the faces call, written once over the
// store they run on: the Store proposes through Raft; internal/memstore
// applies to a state machine in this process. The commands themselves are
// built by package fsm's constructors (fsm.KVSetCommand, ...). Refusals
// come back as the state machine's codes or sentinel errors (fsm.ErrExists,
// ...), failures to run as the proposer's errors (storeapi.ErrNoLeader, ...).
type Commands struct {
	// Propose applies c wherever the state machine is and returns its
	// result; a nil error means it was applied.
	Propose func(ctx context.Context, c *command.Command) (*command.Result, error)
	// Read reads a KV key: linearizable, or this node's applied state
	// when local.
	Read func(ctx context.Context, key []byte, local bool) (command.KVEntry, error)
	// Pipeline applies commands in the order given, each under a fresh
	// request id of its own, pipelined to the leader (inorder.go); nil
	// applies them one after the other through Propose.
	Pipeline func(ctx context.Context, cmds []*command.Command) []storeapi.OpResult
	// GoneOnLeader reports whether a key this node holds live is absent
	// from the leader's state (setnx.go); nil where this node's state is
	// the leader's.
	GoneOnLeader func(ctx context.Context, key []byte) bool
}

// Begin either makes the caller the record's owner (Result.Created, with the
// fencing token in Result.Fence) or returns the existing record in
// Result.Record, in one round trip; fsm.CodeSuspect when it refused a
// suspected duplicate.
func (s Commands) Begin(ctx context.Context, r command.BeginRequest) (_ *command.Result, err error) {
	ctx, span := startSpan(ctx, "store.begin", trace.SpanKindInternal)
	defer func() { endSpan(span, err) }()
	res, err := s.Propose(ctx, command.RecordBeginCommand(r))
	if err != nil {
		return nil, err
	}
	if res.Code != command.CodeCreated && res.Code != command.CodeExists && res.Code != command.CodeSuspect {
		return nil, fmt.Errorf("begin: %w", res.Err())
	}
	if span != nil {
		span.SetAttributes(attribute.Bool("idemgate.created", res.Code == command.CodeCreated))
	}
	return res, nil
}

// Complete stores the response; fsm.ErrFenceMismatch when the caller no
// longer owns the record.
func (s Commands) Complete(ctx context.Context, r command.CompleteRequest) (err error) {
	ctx, span := startSpan(ctx, "store.complete", trace.SpanKindInternal)
	defer func() { endSpan(span, err) }()
	return s.applyErr(ctx, command.RecordCompleteCommand(r))
}

// Release deletes a record so a retry can run. Fence 0 releases whatever
// owns it (an operator's release).
func (s Commands) Release(ctx context.Context, key []byte, fence uint64) (err error) {
	ctx, span := startSpan(ctx, "store.release", trace.SpanKindInternal)
	defer func() { endSpan(span, err) }()
	return s.applyErr(ctx, command.RecordReleaseCommand(key, fence))
}

// Once applies a once command (fsm.OnceBeginCommand, ...) and returns its
// result, whose Code carries a refusal (fsm.CodeExists while another holds
// the lease, fsm.CodeFenceMismatch, ...) with a nil error. Its keys are in
// a bucket of their own: no reserved key to check.
func (s Commands) Once(ctx context.Context, c *command.Command) (*command.Result, error) {
	return s.Propose(ctx, c)
}

// Lock applies a lock command (fsm.LockAcquireCommand, ...) and returns
// its result, whose Code carries a refusal (fsm.CodeExists while another
// holds it, fsm.CodeFenceMismatch, ...) with a nil error. Locks are in a
// bucket of their own: no reserved key to check.
func (s Commands) Lock(ctx context.Context, c *command.Command) (*command.Result, error) {
	return s.Propose(ctx, c)
}

// IssueToken stores a new form token; it returns its expiry.
func (s Commands) IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error) {
	res, err := s.Propose(ctx, command.TokenIssueCommand(key, ttl))
	if err != nil {
		return time.Time{}, err
	}
	if err := res.Err(); err != nil {
		return time.Time{}, err
	}
	return unixOrZero(res.ExpiresAt), nil
}

// ConsumeToken deletes a live token; fsm.ErrNotFound when it was already
// consumed, never issued, or expired. Exactly one consume succeeds.
func (s Commands) ConsumeToken(ctx context.Context, key []byte) error {
	return s.applyErr(ctx, command.TokenConsumeCommand(key))
}

// ApplyKV applies one command of the KV keyspace that a face built
// (fsm.KVSetCommand, fsm.KVGetDelCommand, ...) and returns its result,
// whose Code carries a refusal (fsm.CodeExists for NX, ...) with a nil
// error. A reserved key is refused (storeapi.ErrReservedKey) before anything is
// proposed. A SETNX on a key that is live is answered from a linearizable
// read (setnx.go), unless the command is to be answered under a caller's
// request id (an API retry under an Idempotency-Key): that answer must be
// the first attempt's, which only the state machine's memory of the id
// gives.
func (s Commands) ApplyKV(ctx context.Context, c *command.Command) (*command.Result, error) {
	if err := storeapi.CheckKVKey(c.Key); err != nil {
		return nil, err
	}
	if _, retry := storeapi.RequestIDFrom(ctx); !retry && c.ReqID.IsZero() {
		if res, ok := s.readSetNX(ctx, c); ok {
			return res, nil
		}
	}
	return s.Propose(ctx, c)
}

// ApplyInOrder applies a client's pipelined KV commands in the order
// given, each a command of its own with a fresh request id (never ctx's:
// one id would make them one request), pipelined where the store can
// (Pipeline); it returns when every command has its outcome. Keys are
// the Redis face's, of any keyspace (fsm.KeyspaceKey). A command with a
// reserved key is refused alone (storeapi.ErrReservedKey); a face that
// means to refuse a command of many keys whole checks them first
// (storeapi.CheckKVKey). A SETNX whose key is live here when the pipeline reaches
// it is answered from a linearizable read (setnx.go), taken once the
// commands before it have applied, so that it sees them.
func (s Commands) ApplyInOrder(ctx context.Context, cmds []*command.Command) []storeapi.OpResult {
	out := make([]storeapi.OpResult, len(cmds))
	from := 0
	for i, c := range cmds {
		if !s.liveSetNX(ctx, c) {
			continue
		}
		s.inOrder(ctx, cmds[from:i], out[from:i])
		if res, ok := s.readSetNX(ctx, c); ok {
			out[i].Res = res
		} else {
			s.inOrder(ctx, cmds[i:i+1], out[i:i+1])
		}
		from = i + 1
	}
	s.inOrder(ctx, cmds[from:], out[from:])
	return out
}

// ApplyTx applies a transaction (MULTI/EXEC, fsm.KVTxCommand) as one
// command under one request id, so a retry applies it once. A reserved
// key among its commands or watches refuses it whole (ErrReservedKey)
// before anything is proposed; one over the store's command size is
// ErrTooLarge, nothing proposed either.
func (s Commands) ApplyTx(ctx context.Context, r command.TxRequest) (*command.Result, error) {
	if err := CheckTxKeys(r); err != nil {
		return nil, err
	}
	return s.Propose(ctx, command.KVTxCommand(r))
}

// CheckTxKeys refuses a transaction that names a reserved key
// (ErrReservedKey), among its commands or its watches; keys of every
// keyspace (fsm.KeyspaceKey) are the Redis face's.
func CheckTxKeys(r command.TxRequest) error {
	for _, w := range r.Watches {
		if err := storeapi.CheckKeyspaceKey(w.Key); err != nil {
			return err
		}
	}
	for _, c := range r.Commands {
		if err := storeapi.CheckKeyspaceKey(c.Key); err != nil {
			return err
		}
	}
	return nil
}

// inOrder applies cmds, in order, into out: through the store's Pipeline,
// or one after the other.
func (s Commands) inOrder(ctx context.Context, cmds []*command.Command, out []storeapi.OpResult) {
	if len(cmds) == 0 {
		return
	}
	if s.Pipeline != nil {
		copy(out, s.Pipeline(ctx, cmds))
		return
	}
	for i := range cmds {
		c := *cmds[i]
		if c.ReqID.IsZero() { // as the Pipeline: one the caller gave is kept
			c.ReqID = storeapi.NewRequestID()
		}
		if out[i].Err = storeapi.CheckKeyspaceKey(c.Key); out[i].Err == nil {
			out[i].Res, out[i].Err = s.Propose(ctx, &c)
		}
	}
}

func (s Commands) applyErr(ctx context.Context, c *command.Command) error {
	res, err := s.Propose(ctx, c)
	if err != nil {
		return err
	}
	return res.Err()
}

// The sweeper's Proposer (package ttl).

// VerifyLeader returns nil when this node leads and a quorum confirms it.
func (s *Store) VerifyLeader(ctx context.Context) error {
	if !s.IsLeader() {
		return storeapi.ErrNotLeader
	}
	return s.waitFuture(ctx, s.raft.VerifyLeader())
}

// Due lists expiry-index entries due at now in the local state.
func (s *Store) Due(now time.Time, limit int) ([]ttl.Entry, error) { return s.fsm.Due(now, limit) }

// CountDue counts the entries due at now, up to limit.
func (s *Store) CountDue(now time.Time, limit int) (int, error) { return s.fsm.CountDue(now, limit) }

// Expire proposes the removal of due entries, in as many commands as keep
// each under the command limit: one refused command would be proposed
// again at every sweep, and nothing behind it would ever expire.
func (s *Store) Expire(ctx context.Context, entries []ttl.Entry) error {
	for len(entries) > 0 {
		n, size := 0, 256
		for n < len(entries) && (n == 0 || size+len(entries[n].Key)+expireEntryOverhead <= s.cfg.MaxCommandBytes) {
			size += len(entries[n].Key) + expireEntryOverhead
			n++
		}
		if err := s.Commands.applyErr(ctx, command.ExpireCommand(entries[:n])); err != nil {
			return err
		}
		entries = entries[n:]
	}
	return nil
}

// expireEntryOverhead bounds what an expire command adds to each entry's
// key: its kind, expiry and lengths.
const expireEntryOverhead = 32

func unixOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}
