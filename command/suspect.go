package command

import "github.com/idemgate/idemgate/ttl"

// Suspect is one logged suspected duplicate.
type Suspect struct {
	At      int64  // unix nanoseconds, the state machine's clock
	Key     []byte // record key of the request that looked like a duplicate
	Earlier []byte // record key of the request it looked like
}

// Stuck is one record or claim whose holder's deadline passed.
type Stuck struct {
	Kind ttl.Kind // ttl.KindRecord or ttl.KindOnce
	Key  []byte   // its key in its keyspace (RecordKey, OnceKey)
	At   int64    // its deadline, unix nanoseconds
}

// MaxStuckPage bounds one page of Stuck.
const MaxStuckPage = 1000
