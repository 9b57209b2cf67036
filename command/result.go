package command

import (
	"encoding/binary"
	"fmt"
)

// Code is a command's outcome. Values cross the wire from the leader to the
// follower that forwarded the command: never renumber them.
type Code byte

// The outcomes.
const (
	CodeOK Code = iota
	CodeCreated
	CodeExists
	CodeNotFound
	CodeVersionMismatch
	CodeFenceMismatch
	CodeWrongState
	CodeBadCommand
	CodeStorage
	CodeSuspect    // a begin refused as a suspected duplicate (FlagRejectSuspect)
	CodeNotInteger // an increment of a value that is not a decimal integer
	CodeOverflow   // an increment past the range of a 64-bit integer
	CodeUnchanged  // a conditional change whose condition did not hold (an EXPIRE's, LINSERT's pivot)
	// CodeReplyTooLarge: a transaction's command whose value would take
	// the transaction's results past its reply budget; not applied.
	CodeReplyTooLarge
	// CodeOutOfRange: a guarded increment whose result would leave its
	// bounds (Result.Value is the value kept), or a list's index past its
	// ends (LSET); nothing changed.
	CodeOutOfRange
	CodeConflict  // a script's effects whose reads another write changed: nothing applied
	CodeTooLong   // a string edit that would make the value longer than its bound
	CodeNotFloat  // a float increment of a value, or by an increment, that is not a number
	CodeNotFinite // a float increment whose result would be infinite or NaN
	// CodeKeyReuse: a once begin whose payload fingerprint is not the
	// claim's; nothing changed.
	CodeKeyReuse
	// CodeTakenOver: a once begin that took a claim over from a holder
	// whose lease had run out (the new fence in Result.Fence).
	CodeTakenOver
	// CodeQueued: a lock acquire queued behind the holder (its ticket in
	// Result.Version); the grant comes later, through the lock observer.
	CodeQueued
	// CodeQueueFull: a lock acquire refused because MaxLockWaiters wait
	// already.
	CodeQueueFull
	// CodeWrongType: a command of one kind of value (a string's, a
	// list's) on a key holding the other; nothing changed.
	CodeWrongType
	codeEnd
)

var codeErrs = [...]error{nil, nil, ErrExists, ErrNotFound, ErrVersionMismatch,
	ErrFenceMismatch, ErrWrongState, ErrBadCommand, ErrStorage, ErrSuspect,
	ErrNotInteger, ErrOverflow, ErrUnchanged, ErrReplyTooLarge, ErrOutOfRange, ErrConflict,
	ErrTooLong, ErrNotFloat, ErrNotFinite, ErrKeyReuse, nil, nil, ErrQueueFull, ErrWrongType}

// Result is what applying one command produced. Apply returns it as the
// future's response; callers always read it (Err says whether it failed).
type Result struct {
	Code Code
	// Fence is the fencing token a RecordBegin handed to its new owner.
	Fence uint64
	// Version is a KV key's version after the command (for SETNX that
	// failed: the existing key's version).
	Version uint64
	// ExpiresAt (unix nanoseconds, 0 = never) of what the command created.
	ExpiresAt int64
	// Value: the removed value of a GETDEL, the existing value of a failed SETNX.
	Value []byte
	// Record: the existing record a RecordBegin found instead of creating one.
	Record *Record
	// Suspect: the record key that began with the same body digest within
	// the window (a suspected duplicate under another idempotency key).
	Suspect []byte
}

// Known reports whether this build knows code c.
func (c Code) Known() bool { return c < codeEnd }

// Err returns the error the result carries, or nil.
func (r *Result) Err() error {
	if r.Code.Known() {
		return codeErrs[r.Code]
	}
	return fmt.Errorf("%w: result code %d", ErrBadCommand, r.Code)
}

func errResult(err error) *Result {
	for c, e := range codeErrs {
		if e != nil && e == err {
			return &Result{Code: Code(c)}
		}
	}
	return &Result{Code: CodeBadCommand}
}

// Encode appends the result's encoding to dst.
func (r *Result) Encode(dst []byte) []byte {
	dst = append(dst, byte(r.Code))
	dst = binary.AppendUvarint(dst, r.Fence)
	dst = binary.AppendUvarint(dst, r.Version)
	dst = binary.AppendVarint(dst, r.ExpiresAt)
	dst = appendBytes(dst, r.Value)
	dst = appendBytes(dst, r.Suspect)
	if r.Record == nil {
		return append(dst, 0)
	}
	dst = append(dst, 1)
	return r.Record.Encode(dst)
}

// DecodeResult parses an encoded result. Its slices alias b: Clone it
// before b goes away (memory of a bbolt transaction, a reused buffer).
func DecodeResult(b []byte) (*Result, error) {
	rd := reader{b: b}
	r := &Result{Code: Code(rd.byte())}
	r.Fence = rd.uvarint()
	r.Version = rd.uvarint()
	r.ExpiresAt = rd.varint()
	r.Value = rd.bytes()
	r.Suspect = rd.bytes()
	hasRecord := rd.byte()
	if rd.err != nil {
		return nil, fmt.Errorf("%w: result: %v", ErrBadCommand, rd.err)
	}
	if !r.Code.Known() {
		return nil, fmt.Errorf("%w: result code %d", ErrBadCommand, r.Code)
	}
	if hasRecord == 1 {
		rec, err := DecodeRecord(rd.b)
		if err != nil {
			return nil, err
		}
		r.Record = rec
	} else if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: result: trailing bytes", ErrBadCommand)
	}
	return r, nil
}
