package fsm

import (
	"bytes"

	bolt "go.etcd.io/bbolt"
)

// prev is c.Prev past bbolt's empty leaves. Inside a write transaction a
// leaf whose keys were all deleted stays in the tree until the commit
// rebalances it, and Cursor.Prev stops on it with a nil key, as if the
// bucket began there (Next and Last skip such leaves; Prev does not).
// Where a node's commits fall decides which leaves are empty, and that
// differs from replica to replica: a reverse walk that stopped there
// would answer, and write, differently on each. So when Prev answers nil
// and a second cursor finds a key in [floor, cur), the walk steps on:
// each further Prev leaves the empty leaf for the one before it.
func prev(c *bolt.Cursor, floor, cur []byte) ([]byte, []byte) {
	k, v := c.Prev()
	if k != nil {
		return k, v
	}
	if fk, _ := c.Bucket().Cursor().Seek(floor); fk == nil || bytes.Compare(fk, cur) >= 0 {
		return nil, nil // the beginning of what the walk wants
	}
	for range maxEmptyLeaves {
		if k, v = c.Prev(); k != nil {
			return k, v
		}
	}
	return nil, nil
}

// maxEmptyLeaves bounds prev's steps over empty leaves: far more than a
// transaction's deletions can empty (a leaf holds at least one key).
const maxEmptyLeaves = 1 << 24
