package command

// Suspect is one logged suspected duplicate.
type Suspect struct {
	At      int64  // unix nanoseconds, the state machine's clock
	Key     []byte // record key of the request that looked like a duplicate
	Earlier []byte // record key of the request it looked like
}
