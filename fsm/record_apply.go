package fsm

import (
	bolt "go.etcd.io/bbolt"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/ttl"
)

// getRecord returns the live record under key, or nil. An expired record is
// deleted on the spot (with its index entry), exactly as the sweeper would.
func (a *applier) getRecord(tx *bolt.Tx, key []byte) (*command.Record, error) {
	v := a.get(tx.Bucket(bucketRecords), key)
	if v == nil {
		return nil, nil
	}
	stored, err := command.DecodeRecord(v)
	if err != nil {
		return nil, err
	}
	// A copy: the record outlives this command (a begin returns it to its
	// caller after the batch commits) and bbolt may move v's page meanwhile.
	rec := stored.Clone()
	if rec.ExpiredAt(a.now) {
		if err := a.deleteRecord(tx, key, rec); err != nil {
			return nil, err
		}
		a.expiredDelta[ttl.KindRecord]++
		return nil, nil
	}
	return rec, nil
}

func (a *applier) putRecord(tx *bolt.Tx, key []byte, old, rec *command.Record) error {
	if old != nil {
		a.recordDelta[old.State]--
		if old.Fence != rec.Fence {
			a.removed = append(a.removed, clone(key)) // taken over
		}
		if old.ExpiresAt != rec.ExpiresAt && old.ExpiresAt != 0 {
			if err := deleteExpiry(tx, ttl.KindRecord, key, old.ExpiresAt); err != nil {
				return err
			}
		}
	}
	if rec.ExpiresAt != 0 && (old == nil || old.ExpiresAt != rec.ExpiresAt) {
		if err := putExpiry(tx, ttl.KindRecord, key, rec.ExpiresAt); err != nil {
			return err
		}
	}
	a.recordDelta[rec.State]++
	if err := setLapse(tx, ttl.KindRecord, key, recordLapse(old), recordLapse(rec)); err != nil {
		return err
	}
	return tx.Bucket(bucketRecords).Put(key, rec.Encode(nil))
}

func (a *applier) deleteRecord(tx *bolt.Tx, key []byte, rec *command.Record) error {
	if rec.ExpiresAt != 0 {
		if err := deleteExpiry(tx, ttl.KindRecord, key, rec.ExpiresAt); err != nil {
			return err
		}
	}
	a.recordDelta[rec.State]--
	a.removed = append(a.removed, clone(key))
	if err := setLapse(tx, ttl.KindRecord, key, recordLapse(rec), 0); err != nil {
		return err
	}
	return tx.Bucket(bucketRecords).Delete(key)
}

// recordBegin is SETNX for idempotency records: it either makes the caller
// the owner (fencing token = this command's revision, unique and increasing)
// or returns the existing record in the same round trip.
func (a *applier) recordBegin(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	old, err := a.getRecord(tx, c.Key)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if old != nil {
		takeOver := c.Flags&command.FlagReleaseUnknown != 0 && old.StateAt(a.now) == command.StateUnknown
		if !takeOver {
			shown := *old
			shown.State = old.StateAt(a.now)
			return &command.Result{Code: command.CodeExists, Record: &shown, Fence: old.Fence, ExpiresAt: old.ExpiresAt}
		}
	}
	var suspect []byte
	if len(c.DigestKey) > 0 {
		var err error
		if suspect, err = a.checkDigest(tx, c, rev); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if suspect != nil && c.Flags&command.FlagRejectSuspect != 0 {
			return &command.Result{Code: command.CodeSuspect, Suspect: suspect}
		}
	}
	rec := &command.Record{
		State:       command.StateInFlight,
		Fence:       rev,
		Fingerprint: c.Value,
		CreatedAt:   a.now,
		UpdatedAt:   a.now,
		ExpiresAt:   a.expiry(c.TTL),
		Deadline:    a.expiry(c.Timeout),
	}
	if err := a.putRecord(tx, c.Key, old, rec); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeCreated, Fence: rev, ExpiresAt: rec.ExpiresAt, Suspect: suspect}
}

// ownedRecord returns the live record under c.Key if c.Fence owns it.
func (a *applier) ownedRecord(tx *bolt.Tx, c *command.Command) (*command.Record, *command.Result) {
	rec, err := a.getRecord(tx, c.Key)
	if err != nil {
		return nil, &command.Result{Code: command.CodeStorage}
	}
	if rec == nil {
		return nil, &command.Result{Code: command.CodeNotFound}
	}
	if rec.Fence != c.Fence {
		return nil, &command.Result{Code: command.CodeFenceMismatch, Fence: rec.Fence}
	}
	return rec, nil
}

// recordComplete stores the owner's response. Only the current owner may
// complete, and only once; a late owner whose deadline passed may still
// complete as long as nobody took the record over (a known outcome is
// better than an unknown one).
func (a *applier) recordComplete(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	old, res := a.ownedRecord(tx, c)
	if res != nil {
		return res
	}
	if old.State == command.StateCompleted {
		return &command.Result{Code: command.CodeWrongState}
	}
	rec := *old
	rec.State = command.StateCompleted
	rec.UpdatedAt = a.now
	rec.Deadline = 0
	rec.Status = c.Status
	rec.BodyDropped = c.Flags&command.FlagBodyDropped != 0
	rec.Headers = c.Headers
	rec.Body = c.Body
	// Computed here, from the command, so every replica stores the same
	// bytes: replays verify it (Record.Verify).
	rec.Sum, rec.HasSum = rec.ResponseSum(), true
	if err := a.putRecord(tx, c.Key, old, &rec); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Fence: rec.Fence, ExpiresAt: rec.ExpiresAt}
}

// recordRelease deletes a record so the next request with its key runs. The
// owner (Fence set) may release only what it has not completed; Fence 0 is
// an operator's release and removes any record.
func (a *applier) recordRelease(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	var rec *command.Record
	if c.Fence == 0 {
		r, err := a.getRecord(tx, c.Key)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if r == nil {
			return &command.Result{Code: command.CodeNotFound}
		}
		rec = r
	} else {
		r, res := a.ownedRecord(tx, c)
		if res != nil {
			return res
		}
		if r.State == command.StateCompleted {
			return &command.Result{Code: command.CodeWrongState}
		}
		rec = r
	}
	if err := a.deleteRecord(tx, c.Key, rec); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK}
}

// The applier's rows of this file's commands (commands.go joins them).
var recordApplies = applies{
	command.TypeRecordBegin:    {remembered: true, apply: (*applier).recordBegin},
	command.TypeRecordComplete: {remembered: true, apply: (*applier).recordComplete},
	command.TypeRecordRelease:  {remembered: true, apply: (*applier).recordRelease},
}
