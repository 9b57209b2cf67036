package fsm

import (
	"encoding/binary"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// a string.
func (a *applier) listOf(kv kvStore, key []byte) (old command.KVEntry, exists bool, elems [][]byte, code command.Code) {
	old, exists, err := a.liveKV(kv, key)
	switch {
	case err != nil:
		return old, false, nil, command.CodeStorage
	case !exists:
		return old, false, nil, command.CodeOK
	case old.Kind != command.KindList:
		return old, true, nil, command.CodeWrongType
	}
	elems, err = command.DecodeList(old.Value)
	if err != nil {
		return old, true, nil, command.CodeStorage
	}
	return old, true, elems, command.CodeOK
}

// storeList writes elems as the key's list (deleting the key when it is
// empty), keeping its lifetime; value is the result's.
func (a *applier) storeList(kv kvStore, key []byte, elems [][]byte, old command.KVEntry, exists bool, rev uint64, value []byte) *command.Result {
	if len(elems) == 0 {
		if exists {
			if err := kv.del(key, old); err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
		return &command.Result{Code: command.CodeOK, Value: value}
	}
	v := command.EncodeList(elems) // copies: elems may alias the old value's memory
	if len(elems) > command.MaxListElems || len(v) > command.MaxListBytes {
		return &command.Result{Code: command.CodeTooLong}
	}
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Kind: command.KindList, Value: v}
	return a.storeKV(kv, key, &e, old, exists, value)
}

// listPush is LPUSH, RPUSH (FlagListRight), LPUSHX, RPUSHX
// (FlagListExisting: only onto a list that exists, CodeNotFound if not):
// c.Value's elements, each in turn, at the head or the tail. The result
// carries the list's new length, in decimal.
func (a *applier) listPush(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listPushIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listPushIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	add, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, exists, elems, code := a.listOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists && c.Flags&command.FlagListExisting != 0:
		return &command.Result{Code: command.CodeNotFound, Value: []byte("0")}
	case len(elems)+len(add) > command.MaxListElems:
		return &command.Result{Code: command.CodeTooLong}
	}
	out := make([][]byte, 0, len(elems)+len(add))
	if c.Flags&command.FlagListRight != 0 {
		out = append(append(out, elems...), add...)
	} else {
		for i := len(add) - 1; i >= 0; i-- {
			out = append(out, add[i])
		}
		out = append(out, elems...)
	}
	return a.storeList(kv, c.Key, out, old, exists, rev, strconv.AppendInt(nil, int64(len(out)), 10))
}

// listPop is LPOP, RPOP (FlagListRight) and the pop of BLPOP, BRPOP: from
// the first of c.Key and the keys in c.Value (a list's encoding) that
// exists (CodeWrongType if that one is not a list), up to the count in
// c.Body (8 big-endian bytes; without FlagListCount: one). CodeNotFound
// when none exists; else the result carries the key popped from and the
// elements, in pop order (ListPopped reads them).
func (a *applier) listPop(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listPopIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listPopIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	more, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	count := uint64(1)
	if c.Flags&command.FlagListCount != 0 {
		count = binary.BigEndian.Uint64(c.Body)
	}
	for _, key := range append([][]byte{c.Key}, more...) {
		old, exists, elems, code := a.listOf(kv, key)
		if code != command.CodeOK {
			return &command.Result{Code: code}
		}
		if !exists {
			continue
		}
		n := int(min(count, uint64(len(elems))))
		value := appendBytes(nil, key)
		if n == 0 { // LPOP key 0: nothing popped, nothing written
			return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: append(value, command.EncodeList(nil)...)}
		}
		var popped [][]byte
		if c.Flags&command.FlagListRight != 0 {
			for i := 0; i < n; i++ {
				popped = append(popped, elems[len(elems)-1-i])
			}
			elems = elems[:len(elems)-n]
		} else {
			popped, elems = elems[:n], elems[n:]
		}
		value = append(value, command.EncodeList(popped)...) // copies: the elements alias the stored value
		return a.storeList(kv, key, elems, old, true, rev, value)
	}
	return &command.Result{Code: command.CodeNotFound}
}

// listRem is LREM: it removes the elements equal to c.Value, the first
// count of them (c.Body, a signed 8-byte count) from the head, the last
// -count from the tail, or all (0). The result carries how many, in
// decimal.
func (a *applier) listRem(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listRemIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listRemIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	count := int64(binary.BigEndian.Uint64(c.Body))
	old, exists, elems, code := a.listOf(kv, c.Key)
	if code != command.CodeOK || !exists {
		return &command.Result{Code: code, Value: []byte("0")}
	}
	limit := uint64(count)
	if count < 0 {
		limit = uint64(-(count + 1)) + 1 // no overflow at the minimum
	}
	if count == 0 {
		limit = uint64(len(elems))
	}
	keep := make([]bool, len(elems))
	removed := uint64(0)
	for k := range elems {
		i := k
		if count < 0 {
			i = len(elems) - 1 - k
		}
		if removed < limit && string(elems[i]) == string(c.Value) {
			removed++
			continue
		}
		keep[i] = true
	}
	if removed == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: []byte("0")}
	}
	out := make([][]byte, 0, len(elems)-int(removed))
	for i, e := range elems {
		if keep[i] {
			out = append(out, e)
		}
	}
	return a.storeList(kv, c.Key, out, old, true, rev, strconv.AppendUint(nil, removed, 10))
}

// listTrim is LTRIM: it keeps the elements from start to stop (c.Body,
// two signed 8-byte indexes), both included, counted from the tail when
// negative, as Redis clamps them.
func (a *applier) listTrim(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listTrimIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listTrimIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	start, stop := int64(binary.BigEndian.Uint64(c.Body)), int64(binary.BigEndian.Uint64(c.Body[8:]))
	old, exists, elems, code := a.listOf(kv, c.Key)
	if code != command.CodeOK || !exists {
		return &command.Result{Code: code}
	}
	lo, hi, ok := command.ListRange(len(elems), start, stop)
	if ok && lo == 0 && hi == len(elems) {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt} // nothing to trim
	}
	if !ok {
		lo, hi = 0, 0
	}
	return a.storeList(kv, c.Key, elems[lo:hi], old, true, rev, nil)
}

// The applier's rows of this file's commands (commands.go joins them).
var listApplies = applies{
	command.TypeListPush: {remembered: true, apply: (*applier).listPush, kv: (*applier).listPushIn},
	command.TypeListPop:  {remembered: true, apply: (*applier).listPop, kv: (*applier).listPopIn},
	command.TypeListRem:  {remembered: true, apply: (*applier).listRem, kv: (*applier).listRemIn},
	command.TypeListTrim: {remembered: true, apply: (*applier).listTrim, kv: (*applier).listTrimIn},
}
