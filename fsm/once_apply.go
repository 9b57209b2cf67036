package fsm

import (
	"bytes"

	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// getClaim returns the live claim under key, or nil. A claim past its
// retention is deleted on the spot (with its index entry), as the sweeper
// would.
func (a *applier) getClaim(tx *bolt.Tx, key []byte) (*command.Claim, error) {
	v := tx.Bucket(bucketOnce).Get(key)
	if v == nil {
		return nil, nil
	}
	stored, err := command.DecodeClaim(v)
	if err != nil {
		return nil, err
	}
	c := stored.Clone() // it outlives the command; bbolt may move v's page
	if c.ExpiresAt != 0 && c.ExpiresAt <= a.now {
		if err := a.deleteClaim(tx, key, c); err != nil {
			return nil, err
		}
		a.expiredDelta[ttl.KindOnce]++
		return nil, nil
	}
	return c, nil
}

func (a *applier) putClaim(tx *bolt.Tx, key []byte, old, c *command.Claim) error {
	if old != nil && old.ExpiresAt != c.ExpiresAt && old.ExpiresAt != 0 {
		if err := deleteExpiry(tx, ttl.KindOnce, key, old.ExpiresAt); err != nil {
			return err
		}
	}
	if c.ExpiresAt != 0 && (old == nil || old.ExpiresAt != c.ExpiresAt) {
		if err := putExpiry(tx, ttl.KindOnce, key, c.ExpiresAt); err != nil {
			return err
		}
	}
	if err := setLapse(tx, ttl.KindOnce, key, claimLapse(old), claimLapse(c)); err != nil {
		return err
	}
	return tx.Bucket(bucketOnce).Put(key, c.Encode(nil))
}

func (a *applier) deleteClaim(tx *bolt.Tx, key []byte, c *command.Claim) error {
	if c.ExpiresAt != 0 {
		if err := deleteExpiry(tx, ttl.KindOnce, key, c.ExpiresAt); err != nil {
			return err
		}
	}
	if err := setLapse(tx, ttl.KindOnce, key, claimLapse(c), 0); err != nil {
		return err
	}
	return tx.Bucket(bucketOnce).Delete(key)
}

// claimExpiry is when a claim begun or renewed now is removed: its
// retention from now, never before its lease ends.
func (a *applier) claimExpiry(retention int64, leaseEnd int64) int64 {
	return max(a.now+retention, leaseEnd)
}

// onceBegin hands the claim to the first caller (CodeCreated) or to the
// next one after the holder's lease ran out (CodeTakenOver), with a fence
// that is this command's revision; else it answers the claim: CodeOK with
// the result once completed, CodeExists (the holder's lease end in
// ExpiresAt) while a lease is live, CodeKeyReuse for another payload. The
// begin that holds the claim, applied again under its request id (a retry
// whose answer was lost), is answered as it was the first time.
func (a *applier) onceBegin(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	old, err := a.getClaim(tx, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if !c.ReqID.IsZero() && onceBeginSettled(c) && (old == nil || old.Begin != c.ReqID) {
		// Its id is not looked up before the apply (settled), but a
		// takeover may have handed its answer to the memory (below).
		if r := a.recall(tx, c.ReqID); r != nil {
			return r
		}
	}
	code := command.CodeCreated
	if old != nil {
		switch {
		case !bytes.Equal(old.Fingerprint, c.Value):
			return &command.Result{Code: command.CodeKeyReuse, Fence: old.Fence}
		case old.State == command.ClaimCompleted:
			return &command.Result{Code: command.CodeOK, Fence: old.Fence, Value: old.Result, ExpiresAt: old.ExpiresAt}
		case !c.ReqID.IsZero() && c.ReqID == old.Begin:
			return beginAnswer(old) // a retry whose answer was lost
		case old.LeaseLive(a.now):
			return &command.Result{Code: command.CodeExists, Fence: old.Fence, ExpiresAt: old.LeaseEnd}
		}
		code = command.CodeTakenOver
		// The claim no longer answers its holder's begin: the memory
		// does, for as long as it would have answered any (a takeover is
		// rare; a begin is not).
		if !old.Begin.IsZero() {
			if err := a.remember(tx, old.Begin, beginAnswer(old)); err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
	}
	lease := a.now + int64(c.Timeout)
	cl := &command.Claim{State: command.ClaimBegun, Fence: rev, Fingerprint: c.Value, CreatedAt: a.now, UpdatedAt: a.now,
		LeaseEnd: lease, ExpiresAt: a.claimExpiry(int64(c.TTL), lease), Begin: c.ReqID, TakenOver: old != nil}
	if old != nil {
		cl.CreatedAt = old.CreatedAt
	}
	if err := a.putClaim(tx, c.Key, old, cl); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: code, Fence: rev, ExpiresAt: lease}
}

// beginAnswer is what the begin that handed out a begun claim's fence
// answered: the fence and the lease end (a begin's retry has no answer, so
// no renew of its own moved it since).
func beginAnswer(c *command.Claim) *command.Result {
	code := command.CodeCreated
	if c.TakenOver {
		code = command.CodeTakenOver
	}
	return &command.Result{Code: code, Fence: c.Fence, ExpiresAt: c.LeaseEnd}
}

// onceBeginSettled: a begin whose claim is kept at least as long as a
// request id is remembered (2 × RequestIDRetention) needs no memory of its
// id; the claim records it (Claim.Begin) and answers its retry. Until then
// only its holder can change the claim, and only with the answer the
// retry lacks (renew, complete, release take the fence): a retry of a
// begin whose answer was lost finds the claim as the begin left it. The
// exception is a takeover after the lease ran out, which hands the
// replaced begin's answer to the memory (onceBegin). Every HTTP begin
// carries a caller's key, hashed into an id that lands anywhere in the
// memory's index: this takes a once pair's last insert there.
func onceBeginSettled(c *command.Command) bool { return c.TTL >= 2*RequestIDRetention }

// heldClaim returns the live claim under c.Key if c.Fence holds it;
// CodeFenceMismatch (the current fence, 0 for none) if not.
func (a *applier) heldClaim(tx *bolt.Tx, c *command.Command) (*command.Claim, *command.Result) {
	cl, err := a.getClaim(tx, c.Key)
	if err != nil {
		return nil, &command.Result{Code: command.CodeStorage}
	}
	if cl == nil {
		return nil, &command.Result{Code: command.CodeFenceMismatch}
	}
	if cl.Fence != c.Fence {
		return nil, &command.Result{Code: command.CodeFenceMismatch, Fence: cl.Fence}
	}
	return cl, nil
}

// onceRenew extends the holder's lease by c.Timeout from now, only while
// the lease is live: a holder whose lease ran out may have been taken over
// already in another's view of time, so it must begin again.
func (a *applier) onceRenew(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	old, res := a.heldClaim(tx, c)
	if res != nil {
		return res
	}
	switch {
	case old.State == command.ClaimCompleted:
		return &command.Result{Code: command.CodeWrongState, Fence: old.Fence}
	case !old.LeaseLive(a.now):
		return &command.Result{Code: command.CodeFenceMismatch, Fence: old.Fence, ExpiresAt: old.LeaseEnd}
	}
	cl := *old
	cl.LeaseEnd = a.now + int64(c.Timeout)
	cl.UpdatedAt = a.now
	cl.ExpiresAt = max(old.ExpiresAt, cl.LeaseEnd)
	if err := a.putClaim(tx, c.Key, old, &cl); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Fence: cl.Fence, ExpiresAt: cl.LeaseEnd}
}

// onceComplete stores the holder's result, kept for c.TTL from now. Only
// the fence that holds the claim may complete: a holder whose lease ran out
// still may while nobody took over (a known result is better than work done
// twice); once another took over, its complete is refused and the stored
// claim is untouched. A repeated complete of the same result is answered
// as the first; another result for a completed claim is CodeWrongState.
func (a *applier) onceComplete(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	old, res := a.heldClaim(tx, c)
	if res != nil {
		return res
	}
	if old.State == command.ClaimCompleted {
		if bytes.Equal(old.Result, c.Body) {
			return &command.Result{Code: command.CodeOK, Fence: old.Fence, ExpiresAt: old.ExpiresAt}
		}
		return &command.Result{Code: command.CodeWrongState, Fence: old.Fence}
	}
	cl := *old
	cl.State = command.ClaimCompleted
	cl.UpdatedAt = a.now
	cl.LeaseEnd = 0
	cl.Result = c.Body
	cl.ExpiresAt = a.now + int64(c.TTL)
	if err := a.putClaim(tx, c.Key, old, &cl); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Fence: cl.Fence, ExpiresAt: cl.ExpiresAt}
}

// onceCompleteSettled: a complete whose claim is kept at least as long
// as a request id is remembered (2 × RequestIDRetention) needs no memory
// of its id. Applied again, it finds the claim it completed (nothing but
// the sweep at the claim's expiry removes a completed claim, and no
// caller can change it) and answers as the first attempt did: CodeOK, the
// fence, the same expiry. Its refusals change nothing and are never
// remembered anyway. Every HTTP complete carries a caller's key, hashed
// into an id that lands anywhere in the memory's index: this halves a
// once pair's inserts there.
func onceCompleteSettled(c *command.Command) bool { return c.TTL >= 2*RequestIDRetention }

// onceRelease drops a begun claim its fence holds: the work failed, and the
// next begin runs it again (with a higher fence). A completed claim is
// kept (CodeWrongState).
func (a *applier) onceRelease(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	old, res := a.heldClaim(tx, c)
	if res != nil {
		return res
	}
	if old.State == command.ClaimCompleted {
		return &command.Result{Code: command.CodeWrongState, Fence: old.Fence}
	}
	if err := a.deleteClaim(tx, c.Key, old); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

// The applier's rows of this file's commands (commands.go joins them).
var onceApplies = applies{
	command.TypeOnceBegin:    {remembered: true, settled: onceBeginSettled, apply: (*applier).onceBegin},
	command.TypeOnceRenew:    {remembered: true, apply: (*applier).onceRenew},
	command.TypeOnceComplete: {remembered: true, settled: onceCompleteSettled, apply: (*applier).onceComplete},
	command.TypeOnceRelease:  {remembered: true, apply: (*applier).onceRelease},
}
