package command

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"
)

// Once claims: work keyed by (scope, key) that is not an HTTP request
// through the gateway (a message consumer's side effect, a scheduled job).
// The first caller's begin makes it the holder, with a fencing token and a
// lease; every later begin answers the stored result once the holder
// completed, or "in progress" while its lease is live; a begin after the
// lease ran out takes the claim over with a higher fence, and the old
// holder's complete is refused from then on. The fence is the revision of
// the begin that handed it out (applier.nextRev): strictly increasing per
// (scope, key) across leader changes, and across a release or a claim's
// retention running out too (a claim started again never hands out a fence
// a late holder of a dropped claim still carries). Lease ends and
// retention are the state machine's clock plus a duration, never a
// node's clock.

// ClaimState is a once claim's state.
type ClaimState byte

// The claim states. Values are stored on disk: never renumber them.
const (
	ClaimBegun     ClaimState = 1 // a holder does the work under a lease
	ClaimCompleted ClaimState = 2 // the result is stored
)

func (s ClaimState) String() string {
	switch s {
	case ClaimBegun:
		return "begun"
	case ClaimCompleted:
		return "completed"
	}
	return fmt.Sprintf("state(%d)", byte(s))
}

// Claim is one once claim. Times are unix nanoseconds of the state
// machine's clock.
type Claim struct {
	State       ClaimState
	Fence       uint64
	Fingerprint []byte // SHA-256 of the payload of its first begin (OnceFingerprint)
	CreatedAt   int64
	UpdatedAt   int64
	LeaseEnd    int64 // begun: the holder's lease runs out then
	ExpiresAt   int64 // the claim is removed then (its scope's retention)
	Result      []byte
	// Begin is the request id of the begin that handed out Fence (zero if
	// it carried none), and TakenOver whether that begin took the claim
	// over: a retry of that begin is answered from them (onceBeginSettled).
	Begin     ReqID
	TakenOver bool
}

// LeaseLive reports whether a begun claim's holder still holds it at now.
func (c *Claim) LeaseLive(now int64) bool { return c.State == ClaimBegun && now < c.LeaseEnd }

// OnceFingerprint is the fingerprint a begin stores and compares: the
// SHA-256 of the caller's payload.
func OnceFingerprint(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	return sum[:]
}

// OnceKey builds the stored key of a claim: scope, NUL, the caller's key
// (TokenKey's layout, in the claims' own bucket).
func OnceKey(scope, key string) []byte { return TokenKey(scope, key) }

// A claim's encoding: version (1) | state (1) | fence uvarint |
// fingerprint (len-prefixed) | created, updated, lease end, expiry
// varints | result (len-prefixed), then, from version 2 on, flags (1:
// claimBegin, claimTakenOver) | [the begin's request id (16)]. Version 1
// claims (no request id) are still read.
const (
	claimVersion1 = 1
	claimVersion  = 2

	claimBegin     = 1 << 0
	claimTakenOver = 1 << 1
)

// Encode appends the claim's encoding to dst.
func (c *Claim) Encode(dst []byte) []byte {
	dst = append(dst, claimVersion, byte(c.State))
	dst = binary.AppendUvarint(dst, c.Fence)
	dst = appendBytes(dst, c.Fingerprint)
	dst = binary.AppendVarint(dst, c.CreatedAt)
	dst = binary.AppendVarint(dst, c.UpdatedAt)
	dst = binary.AppendVarint(dst, c.LeaseEnd)
	dst = binary.AppendVarint(dst, c.ExpiresAt)
	dst = appendBytes(dst, c.Result)
	flags := byte(0)
	if !c.Begin.IsZero() {
		flags |= claimBegin
	}
	if c.TakenOver {
		flags |= claimTakenOver
	}
	dst = append(dst, flags)
	if flags&claimBegin != 0 {
		dst = append(dst, c.Begin[:]...)
	}
	return dst
}

// DecodeClaim parses an encoded claim. Its slices alias b.
func DecodeClaim(b []byte) (*Claim, error) {
	rd := reader{b: b}
	v := rd.byte()
	if v != claimVersion && v != claimVersion1 && rd.err == nil {
		return nil, fmt.Errorf("%w: claim version %d", ErrBadCommand, v)
	}
	c := &Claim{State: ClaimState(rd.byte())}
	c.Fence = rd.uvarint()
	c.Fingerprint = rd.bytes()
	c.CreatedAt = rd.varint()
	c.UpdatedAt = rd.varint()
	c.LeaseEnd = rd.varint()
	c.ExpiresAt = rd.varint()
	c.Result = rd.bytes()
	var flags byte
	if v == claimVersion {
		flags = rd.byte()
		if flags&claimBegin != 0 {
			rd.fixed(c.Begin[:])
		}
		c.TakenOver = flags&claimTakenOver != 0
	}
	switch {
	case rd.err != nil:
		return nil, fmt.Errorf("%w: claim: %v", ErrBadCommand, rd.err)
	case len(rd.b) != 0:
		return nil, fmt.Errorf("%w: claim: trailing bytes", ErrBadCommand)
	case c.State != ClaimBegun && c.State != ClaimCompleted:
		return nil, fmt.Errorf("%w: claim state %d", ErrBadCommand, c.State)
	case flags&^(claimBegin|claimTakenOver) != 0:
		return nil, fmt.Errorf("%w: claim flags %#x", ErrBadCommand, flags)
	}
	return c, nil
}

// Clone returns a copy of c with slices of its own.
func (c *Claim) Clone() *Claim {
	out := *c
	buf := make([]byte, 0, len(c.Fingerprint)+len(c.Result))
	out.Fingerprint, buf = carve(buf, c.Fingerprint)
	out.Result, _ = carve(buf, c.Result)
	return &out
}

// OnceBeginCommand begins the claim under key (OnceKey) for the payload
// whose fingerprint is fp (OnceFingerprint), with a lease of lease; the
// claim is kept for retention (from its begin, and again from its
// complete). Its answers: CodeCreated or CodeTakenOver (yours: the fence in
// Result.Fence, the lease end in ExpiresAt), CodeOK (completed: the result
// in Value), CodeExists (a live lease: its end in ExpiresAt), CodeKeyReuse.
func OnceBeginCommand(key, fp []byte, lease, retention time.Duration) *Command {
	return &Command{Type: TypeOnceBegin, Key: key, Value: fp, Timeout: lease, TTL: retention}
}

// OnceRenewCommand extends the lease of the holder of fence to lease from
// now (its end in Result.ExpiresAt); CodeFenceMismatch once the lease was
// lost (ran out, taken over, released), CodeWrongState once completed.
func OnceRenewCommand(key []byte, fence uint64, lease time.Duration) *Command {
	return &Command{Type: TypeOnceRenew, Key: key, Fence: fence, Timeout: lease}
}

// OnceCompleteCommand stores the result of the holder of fence, kept for
// retention; CodeFenceMismatch when another took the claim over (the
// stored claim is untouched).
func OnceCompleteCommand(key []byte, fence uint64, result []byte, retention time.Duration) *Command {
	return &Command{Type: TypeOnceComplete, Key: key, Fence: fence, Body: result, TTL: retention}
}

// OnceReleaseCommand drops the begun claim of the holder of fence, so the
// next begin runs the work again; CodeFenceMismatch when fence does not
// hold it.
func OnceReleaseCommand(key []byte, fence uint64) *Command {
	return &Command{Type: TypeOnceRelease, Key: key, Fence: fence}
}
