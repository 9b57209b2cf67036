package fsm

import (
	"bytes"
	"encoding/binary"
	"slices"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The score order of a sorted set (tag 1) in the element bucket, and in
// a script's sandbox: there it is the tag 0 elements' scores sorted
// when read, as a sandbox holds a collection whole.

func (b boltKV) putScore(_ []byte, h command.CollHeader, score float64, member []byte) error {
	return b.elemsBucket().Put(command.ScoreElemKey(h.ID, score, member), []byte{})
}

func (b boltKV) delScore(_ []byte, h command.CollHeader, score float64, member []byte) error {
	return b.elemsBucket().Delete(command.ScoreElemKey(h.ID, score, member))
}

func (b boltKV) scores(_ []byte, h command.CollHeader, from []byte, rev bool, fn func(score uint64, member []byte) bool) error {
	prefix := command.ElemPrefix(h.ID, command.TagScore, 0)[:9]
	c := b.elemsBucket().Cursor()
	var k []byte
	switch {
	case !rev && from == nil:
		k, _ = c.Seek(prefix)
	case !rev:
		k, _ = c.Seek(append(slices.Clone(prefix), from...))
	default:
		end := command.ElemPrefix(h.ID, command.TagScore+1, 0)[:9]
		if from != nil {
			end = append(slices.Clone(prefix), from...)
		}
		k, _ = c.Seek(end)
		if k == nil {
			k, _ = c.Last()
		} else if from == nil || !bytes.Equal(k, end) {
			k, _ = prev(c, prefix, end) // past empty leaves (cursor.go)
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k = zstep(c, rev, prefix, k) {
		if len(k) < 17 {
			continue
		}
		if !fn(binary.BigEndian.Uint64(k[9:17]), k[17:]) {
			return nil
		}
	}
	return nil
}

func zstep(c *bolt.Cursor, rev bool, floor, cur []byte) []byte {
	if rev {
		k, _ := prev(c, floor, cur)
		return k
	}
	k, _ := c.Next()
	return k
}

// The sandbox's: tag 1 follows from tag 0, so putScore and delScore
// need not write.
func (s *Sandbox) putScore([]byte, command.CollHeader, float64, []byte) error { return nil }
func (s *Sandbox) delScore([]byte, command.CollHeader, float64, []byte) error { return nil }

func (s *Sandbox) scores(key []byte, h command.CollHeader, from []byte, rev bool, fn func(score uint64, member []byte) bool) error {
	el := s.elemsOf(key, h, false)
	if el == nil {
		return nil
	}
	keys := make([][]byte, 0, len(el.m))
	for m, v := range el.m {
		if len(v) == 8 {
			keys = append(keys, append(slices.Clone(v), m...))
		}
	}
	slices.SortFunc(keys, bytes.Compare)
	i, found := slices.BinarySearchFunc(keys, from, bytes.Compare)
	switch {
	case from == nil && !rev:
		i = 0
	case from == nil:
		i = len(keys) - 1
	case rev && !found:
		i--
	}
	for ; i >= 0 && i < len(keys); i += map[bool]int{false: 1, true: -1}[rev] {
		if !fn(binary.BigEndian.Uint64(keys[i]), keys[i][8:]) {
			return nil
		}
	}
	return nil
}
