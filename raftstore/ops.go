package raftstore

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/ttl"
)

// Commands are the typed operations the listeners call, each one command
// of the state machine, built here once over a Propose function: the Store
// proposes through Raft; a test store may apply to a state machine
// directly. Each returns the state machine's sentinel errors
// (fsm.ErrExists, ...) for refusals and the proposer's (ErrNoLeader, ...)
// when it could not run.
type Commands struct {
	// Propose applies c wherever the state machine is and returns its
	// result; a nil error means it was applied.
	Propose func(ctx context.Context, c *fsm.Command) (*fsm.Result, error)
}

// BeginRequest starts an idempotency record.
type BeginRequest struct {
	Key            []byte // fsm.RecordKey(scope, tenant, key)
	Fingerprint    []byte
	TTL            time.Duration
	Timeout        time.Duration // processing timeout; 0: none
	ReleaseUnknown bool          // take over a record whose outcome is unknown
	// DigestKey (fsm.DigestKey) turns on suspect detection for this begin:
	// a different record key that began with it within Window is reported
	// in Result.Suspect, or refused (fsm.CodeSuspect) with RejectSuspect.
	DigestKey     []byte
	Window        time.Duration
	RejectSuspect bool
}

// Begin either makes the caller the record's owner (Result.Created, with the
// fencing token in Result.Fence) or returns the existing record in
// Result.Record, in one round trip; fsm.CodeSuspect when it refused a
// suspected duplicate.
func (s Commands) Begin(ctx context.Context, r BeginRequest) (*fsm.Result, error) {
	c := fsm.Command{Type: fsm.TypeRecordBegin, Key: r.Key, Value: r.Fingerprint, TTL: r.TTL, Timeout: r.Timeout,
		DigestKey: r.DigestKey, Window: r.Window}
	if r.ReleaseUnknown {
		c.Flags |= fsm.FlagReleaseUnknown
	}
	if r.RejectSuspect {
		c.Flags |= fsm.FlagRejectSuspect
	}
	res, err := s.Propose(ctx, &c)
	if err != nil {
		return nil, err
	}
	if res.Code != fsm.CodeCreated && res.Code != fsm.CodeExists && res.Code != fsm.CodeSuspect {
		return nil, fmt.Errorf("begin: %w", res.Err())
	}
	return res, nil
}

// CompleteRequest stores an owner's response.
type CompleteRequest struct {
	Key         []byte
	Fence       uint64
	Status      int
	Headers     []fsm.Header
	Body        []byte
	BodyDropped bool
}

// Complete stores the response; fsm.ErrFenceMismatch when the caller no
// longer owns the record.
func (s Commands) Complete(ctx context.Context, r CompleteRequest) error {
	c := fsm.Command{Type: fsm.TypeRecordComplete, Key: r.Key, Fence: r.Fence, Status: r.Status,
		Headers: r.Headers, Body: r.Body}
	if r.BodyDropped {
		c.Flags |= fsm.FlagBodyDropped
	}
	return s.applyErr(ctx, &c)
}

// Release deletes a record so a retry can run. Fence 0 releases whatever
// owns it (an operator's release).
func (s Commands) Release(ctx context.Context, key []byte, fence uint64) error {
	return s.applyErr(ctx, &fsm.Command{Type: fsm.TypeRecordRelease, Key: key, Fence: fence})
}

// MarkUnknown records that the owner cannot know the upstream's outcome.
func (s Commands) MarkUnknown(ctx context.Context, key []byte, fence uint64) error {
	return s.applyErr(ctx, &fsm.Command{Type: fsm.TypeRecordMarkUnknown, Key: key, Fence: fence})
}

// IssueToken stores a new form token; it returns its expiry.
func (s Commands) IssueToken(ctx context.Context, key []byte, ttl time.Duration) (time.Time, error) {
	res, err := s.Propose(ctx, &fsm.Command{Type: fsm.TypeTokenIssue, Key: key, TTL: ttl})
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
	return s.applyErr(ctx, &fsm.Command{Type: fsm.TypeTokenConsume, Key: key})
}

// KVSet writes a KV key: mode SetPlain, SetNX (fsm.ErrExists with the
// current value in the result) or SetCAS on version (fsm.ErrVersionMismatch).
func (s Commands) KVSet(ctx context.Context, key, value []byte, ttl time.Duration, mode fsm.SetMode, version uint64) (*fsm.Result, error) {
	res, err := s.proposeKV(ctx, &fsm.Command{Type: fsm.TypeKVSet, Key: key, Value: value, TTL: ttl, Mode: mode, Version: version})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// KVGetDel removes a key and returns the value it had (fsm.ErrNotFound).
// A non-zero version makes it compare-and-delete: the key is removed only
// at that version (fsm.ErrVersionMismatch, with the current version, if
// not).
func (s Commands) KVGetDel(ctx context.Context, key []byte, version uint64) (*fsm.Result, error) {
	res, err := s.proposeKV(ctx, &fsm.Command{Type: fsm.TypeKVGetDel, Key: key, Version: version})
	if err != nil {
		return nil, err
	}
	return res, res.Err()
}

// KVPutRequest is a KV write with Redis's SET options.
type KVPutRequest struct {
	Key, Value []byte
	TTL        time.Duration // 0: never expires (unless KeepTTL)
	Mode       fsm.SetMode   // SetPlain, SetNX, SetXX (SetCAS with Version)
	Version    uint64
	KeepTTL    bool // keep the key's lifetime (TTL must be 0)
	ReturnOld  bool // Result.Value is the value before (CodeOK, CodeExists: there was one)
}

func (r KVPutRequest) command() fsm.Command {
	c := fsm.Command{Type: fsm.TypeKVSet, Key: r.Key, Value: r.Value, TTL: r.TTL, Mode: r.Mode, Version: r.Version}
	if r.KeepTTL {
		c.Flags |= fsm.FlagKeepTTL
	}
	if r.ReturnOld {
		c.Flags |= fsm.FlagReturnOld
	}
	return c
}

// KVPut is KVSet with every option; its refusals (fsm.CodeExists for NX,
// fsm.CodeNotFound for XX, fsm.CodeVersionMismatch) are in the result's
// Code, with a nil error.
func (s Commands) KVPut(ctx context.Context, r KVPutRequest) (*fsm.Result, error) {
	c := r.command()
	return s.proposeKV(ctx, &c)
}

// KVIncr adds delta to the key's decimal integer value (absent: 0) in one
// command and returns the result, whose Value is the new value;
// fsm.ErrNotInteger, fsm.ErrOverflow.
func (s Commands) KVIncr(ctx context.Context, key []byte, delta int64) (*fsm.Result, error) {
	c := incrCommand(key, delta)
	res, err := s.proposeKV(ctx, &c)
	if err != nil {
		return nil, err
	}
	return res, res.Err()
}

func incrCommand(key []byte, delta int64) fsm.Command {
	return fsm.Command{Type: fsm.TypeKVIncr, Key: key, Value: strconv.AppendInt(nil, delta, 10)}
}

// KVExpire sets the key's lifetime to ttl from now (0: none, PERSIST) under
// the conditions of flags (fsm.FlagExpireNX, ...; fsm.FlagExpireNow deletes
// the key); fsm.ErrNotFound without the key, fsm.ErrUnchanged when a
// condition did not hold or there was no lifetime to remove.
func (s Commands) KVExpire(ctx context.Context, key []byte, ttl time.Duration, flags byte) error {
	return s.applyKVErr(ctx, &fsm.Command{Type: fsm.TypeKVExpire, Key: key, TTL: ttl, Flags: flags})
}

// KVDelete removes a key (fsm.ErrNotFound if it has none).
func (s Commands) KVDelete(ctx context.Context, key []byte) error {
	return s.applyKVErr(ctx, &fsm.Command{Type: fsm.TypeKVDelete, Key: key})
}

func (s Commands) applyKVErr(ctx context.Context, c *fsm.Command) error {
	if err := CheckKVKey(c.Key); err != nil {
		return err
	}
	return s.applyErr(ctx, c)
}

func (s Commands) applyErr(ctx context.Context, c *fsm.Command) error {
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
		return ErrNotLeader
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
		if err := s.Commands.applyErr(ctx, &fsm.Command{Type: fsm.TypeExpire, Entries: entries[:n]}); err != nil {
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
