package command

import "errors"

// Errors a command's Result can carry, and the errors of decoding. They
// cross the wire as Codes (see result.go), so errors.Is works on both sides
// of a forwarded command.
var (
	// ErrNotFound: the record, token or key does not exist or has expired.
	ErrNotFound = errors.New("not found")
	// ErrExists: SETNX (or a token issue) found the key already present.
	ErrExists = errors.New("already exists")
	// ErrVersionMismatch: compare-and-set found another version.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrFenceMismatch: a record command carried a fencing token that is
	// not the record's current owner.
	ErrFenceMismatch = errors.New("fencing token mismatch")
	// ErrWrongState: the record is not in a state that allows the command
	// (completing a record that is already complete, say).
	ErrWrongState = errors.New("record in wrong state")
	// ErrBadCommand: the command could not be decoded or is malformed.
	ErrBadCommand = errors.New("malformed command")
	// ErrSuspect: a begin was refused as a suspected duplicate.
	ErrSuspect = errors.New("suspected duplicate")
	// ErrNotInteger: an increment found a value that is not a decimal
	// 64-bit integer.
	ErrNotInteger = errors.New("value is not an integer or out of range")
	// ErrOverflow: an increment would leave the range of a 64-bit integer.
	ErrOverflow = errors.New("increment or decrement would overflow")
	// ErrUnchanged: a conditional change (an expire with NX, XX, GT or LT,
	// removing a lifetime the key does not have) changed nothing.
	ErrUnchanged = errors.New("condition not met: nothing changed")
	// ErrReplyTooLarge: a transaction's command was not applied, because
	// the value it answers would take the transaction's results past the
	// bytes they may carry (kv_tx.go).
	ErrReplyTooLarge = errors.New("the transaction's replies are over the bytes they may carry")
	// ErrOutOfRange: a guarded increment would leave its [min, max];
	// nothing changed.
	ErrOutOfRange = errors.New("the result would leave the range allowed")
	// ErrConflict: a script's effects were not applied: a key the script
	// read changed between its run and its log entry (script.go).
	ErrConflict = errors.New("a key the script read has changed")
	// ErrTooLong: a string edit (SETRANGE, APPEND) would make the value
	// longer than the bound its command carries; nothing changed.
	ErrTooLong = errors.New("string exceeds maximum allowed size")
	// ErrNotFloat: a float increment found a value, or was given an
	// increment, that is not a number.
	ErrNotFloat = errors.New("value is not a valid float")
	// ErrNotFinite: a float increment would make the value infinite or
	// NaN; nothing changed.
	ErrNotFinite = errors.New("increment would produce NaN or Infinity")
	// ErrKeyReuse: a once begin's payload fingerprint differs from the
	// claim's: the same key was used for other work.
	ErrKeyReuse = errors.New("the key was used with another payload")
	// ErrQueueFull: a lock acquire found MaxLockWaiters waiting already.
	ErrQueueFull = errors.New("too many waiters queued for the lock")
	// ErrWrongType: a command of one kind of value (a string's, a list's)
	// on a key holding the other (Redis's WRONGTYPE); nothing changed.
	ErrWrongType = errors.New("operation against a key holding the wrong kind of value")
	// ErrStorage: the state machine could not write to its data file. The
	// state machine stops applying; the node must be restarted.
	ErrStorage = errors.New("state machine storage failure")
	// ErrDamaged: a stored response does not match the checksum stored
	// with it (Record.Verify). Local to a replica: it never crosses the
	// wire as a Code.
	ErrDamaged = errors.New("stored response damaged")
)
