package ttl

import "fmt"

// Kind says which keyspace an expiring entry lives in.
type Kind byte

// The kinds of expiring entries. Values are part of the on-disk and on-wire
// format: never renumber them.
const (
	KindRecord   Kind = 1 // an idempotency record
	KindToken    Kind = 2 // a form token
	KindKV       Kind = 3 // a key in the KV keyspace
	KindDigest   Kind = 4 // a body digest remembered for suspect detection
	KindOnce     Kind = 5 // a once claim (begin / complete with a lease)
	KindLock     Kind = 6 // a held lock's lease
	KindLockWait Kind = 7 // a queued lock waiter's give-up time
)

// String names the kind as the metrics label does.
func (k Kind) String() string {
	switch k {
	case KindRecord:
		return "record"
	case KindToken:
		return "token"
	case KindKV:
		return "kv"
	case KindDigest:
		return "digest"
	case KindOnce:
		return "once"
	case KindLock:
		return "lock"
	case KindLockWait:
		return "lock_wait"
	}
	return fmt.Sprintf("kind(%d)", byte(k))
}

// Valid reports whether k is one of the known kinds.
func (k Kind) Valid() bool { return k >= KindRecord && k <= KindLockWait }

// Entry is one expiry: the thing of kind Kind stored under Key expires at
// At (unix nanoseconds). The state machine indexes them (package fsm), the
// sweeper lists the due ones and proposes an expire command that carries
// them (package command encodes it).
type Entry struct {
	Kind Kind
	Key  []byte
	At   int64
}
