package fsm

import (
	"encoding/binary"
	"fmt"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// A batch is one Raft log entry holding many commands: the leader packs the
// commands that queued while its previous proposal was being committed
// (group commit), so Raft's per-entry cost is paid once for all of them.
// The state machine applies them in order, in the entry's transaction, each
// as if it were an entry of its own (its request id, its leader stamp, its
// revision), and answers with one Result per command (Results).
//
//	'B' (1) | count (uvarint) | count × (length (uvarint) | encoded command)
//
// The first byte tells a batch from a command (whose first byte is its
// encoding version, 1 or 2).
const (
	batchEnvelope = 'B'
	// MaxBatchCommands bounds the commands of one batch.
	MaxBatchCommands = 4096
)

// Results is what the state machine answers for a batch entry: one Result
// per command, in the batch's order.
type Results []*command.Result

// EncodeBatch packs encoded (and stamped) commands into one batch entry.
func EncodeBatch(cmds [][]byte) []byte {
	n := 1 + binary.MaxVarintLen64
	for _, c := range cmds {
		n += binary.MaxVarintLen64 + len(c)
	}
	dst := make([]byte, 0, n)
	dst = append(dst, batchEnvelope)
	dst = binary.AppendUvarint(dst, uint64(len(cmds)))
	for _, c := range cmds {
		dst = binary.AppendUvarint(dst, uint64(len(c)))
		dst = append(dst, c...)
	}
	return dst
}

// IsBatch reports whether a log entry's data is a batch.
func IsBatch(data []byte) bool { return len(data) > 0 && data[0] == batchEnvelope }

// splitBatch returns the encoded commands of a batch (aliasing data).
func splitBatch(data []byte) ([][]byte, error) {
	if !IsBatch(data) {
		return nil, fmt.Errorf("%w: not a batch", command.ErrBadCommand)
	}
	b := data[1:]
	n, k := binary.Uvarint(b)
	if k <= 0 || n == 0 || n > MaxBatchCommands {
		return nil, fmt.Errorf("%w: batch count", command.ErrBadCommand)
	}
	b = b[k:]
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		l, k := binary.Uvarint(b)
		if k <= 0 || l > uint64(len(b)-k) {
			return nil, fmt.Errorf("%w: batch command %d length", command.ErrBadCommand, i)
		}
		out = append(out, b[k:k+int(l)])
		b = b[k+int(l):]
	}
	if len(b) != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the batch's commands", command.ErrBadCommand, len(b))
	}
	return out, nil
}

// Page fill. bbolt splits a page that outgrows its size into pages filled
// to the bucket handle's FillPercent, 0.5 by default: where keys arrive at
// random, the halves fill up again, and pages average ~70%; where they
// arrive in order, every new key goes after the split, and the pages left
// behind stay half empty for good. A batch's writes to the KV keyspace and
// to a request-id generation are filled to appendFill while all of them
// went in order, and at about bbolt's default once one did not
// (BenchmarkFileBytesPerKey: 0.9 halves sequential keys' pages, but
// random keys at 0.9 take 1.7x the pages they take at 0.5). FillPercent
// belongs to a transaction's bucket handle (bbolt hands out one per bucket
// per transaction), not to the file, and only decides how the pages this
// batch wrote are split; so the handle's fill is also the batch's state:
// bbolt's default before the first write is noted, appendFill while all
// went in order, scatteredFill from the first that did not.
const (
	appendFill    = 0.9  // as etcd writes its revision-keyed bucket
	scatteredFill = 0.51 // bbolt's default, told apart from a handle no write has set
)

// wantsOrder reports whether the order of the next write to b still
// matters to its fill.
func wantsOrder(b *bolt.Bucket) bool { return b.FillPercent != scatteredFill }

// noteOrder records whether a write to b went in order.
func noteOrder(b *bolt.Bucket, inOrder bool) {
	switch {
	case !wantsOrder(b):
	case inOrder:
		b.FillPercent = appendFill
	default:
		b.FillPercent = scatteredFill
	}
}

// predecessor returns the greatest key of c's bucket below key, or nil.
func predecessor(c *bolt.Cursor, key []byte) []byte {
	if k, _ := c.Seek(key); k == nil {
		return lastKey(c)
	}
	k, _ := c.Prev()
	return k
}

// lastKey is c.Last's key, without bbolt 1.5's endless loop: inside a
// write transaction that deleted every key of a bucket of several pages
// (its leaves are empty until the commit rebalances them), Cursor.Last
// steps back over the empty leaves, reaches the first, which prev leaves
// it on, and steps back again, forever. Every node applies the same
// batch, so every node would spin. First skips empty leaves forward and
// stops: with a key found, Last meets a leaf that holds one.
func lastKey(c *bolt.Cursor) []byte {
	if k, _ := c.First(); k == nil {
		return nil
	}
	k, _ := c.Last()
	return k
}
