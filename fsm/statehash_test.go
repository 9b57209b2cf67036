package fsm

// stateHash is a SHA-256 over every bucket's keys and values, in order:
// replicas that applied the same log have equal hashes.
func (f *FSM) stateHash() ([32]byte, error) { return f.hashBuckets(allBuckets) }
