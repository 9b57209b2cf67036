package fsm

import (
	"bytes"
	"encoding/binary"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// listOf is the key's list: absent (exists false, no elements), or its
// elements (aliasing the stored value); CodeWrongType when the key holds
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
	v, ok := listValue(elems)
	if !ok {
		return &command.Result{Code: command.CodeTooLong}
	}
	return a.storeListValue(kv, key, v, old, exists, rev, value)
}

// listValue is the encoding of elems as a stored list, a copy (elems may
// alias the old value's memory); false past a list's bounds.
func listValue(elems [][]byte) ([]byte, bool) {
	v := command.EncodeList(elems)
	return v, len(elems) <= command.MaxListElems && len(v) <= command.MaxListBytes
}

// storeListValue writes v, a non-empty list's encoding, as the key's
// list, keeping its lifetime.
func (a *applier) storeListValue(kv kvStore, key, v []byte, old command.KVEntry, exists bool, rev uint64, value []byte) *command.Result {
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

// listSet is LSET: the element at the index in c.Body (8 signed
// big-endian bytes, negative counted from the tail) becomes c.Value.
// CodeNotFound without the key, CodeOutOfRange past the list's ends.
func (a *applier) listSet(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listSetIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listSetIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	i := int64(binary.BigEndian.Uint64(c.Body))
	old, exists, elems, code := a.listOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound}
	}
	if i < 0 {
		i += int64(len(elems))
	}
	if i < 0 || i >= int64(len(elems)) {
		return &command.Result{Code: command.CodeOutOfRange}
	}
	out := append([][]byte(nil), elems...)
	out[i] = c.Value
	return a.storeList(kv, c.Key, out, old, true, rev, nil)
}

// listInsert is LINSERT: c.Value goes before the first element equal to
// the pivot (c.Body), from the head, or after it (FlagListRight). The
// result carries the new length, in decimal; CodeNotFound without the
// key ("0"), CodeUnchanged without the pivot ("-1"), nothing written.
func (a *applier) listInsert(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listInsertIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listInsertIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, exists, elems, code := a.listOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound, Value: []byte("0")}
	}
	at := -1
	for i, e := range elems {
		if string(e) == string(c.Body) {
			at = i
			break
		}
	}
	if at < 0 {
		return &command.Result{Code: command.CodeUnchanged, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: []byte("-1")}
	}
	if c.Flags&command.FlagListRight != 0 {
		at++
	}
	out := make([][]byte, 0, len(elems)+1)
	out = append(append(append(out, elems[:at]...), c.Value), elems[at:]...)
	return a.storeList(kv, c.Key, out, old, true, rev, strconv.AppendInt(nil, int64(len(out)), 10))
}

// listMove is LMOVE and RPOPLPUSH, and the move of BLMOVE and
// BRPOPLPUSH: one element popped from c.Key's list, at its head or its
// tail (FlagListRight), and pushed onto c.Value's, at its head or its
// tail (FlagListToRight), in one step; a list moved onto itself is
// rotated. The result (CodeOK) carries the element. CodeNotFound without
// the source, whatever the destination holds (Redis answers nil before
// it looks at the destination); CodeWrongType when either holds a
// string; CodeTooLong when the destination is full. Nothing is written
// unless both writes can be made: each list's encoding is made before
// either is stored.
func (a *applier) listMove(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.listMoveIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listMoveIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, _, elems, code := a.listOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case len(elems) == 0: // absent: a stored list is never empty
		return &command.Result{Code: command.CodeNotFound}
	}
	var elem []byte
	if c.Flags&command.FlagListRight != 0 {
		elem, elems = elems[len(elems)-1], elems[:len(elems)-1]
	} else {
		elem, elems = elems[0], elems[1:]
	}
	push := func(onto [][]byte) [][]byte {
		out := make([][]byte, 0, len(onto)+1)
		if c.Flags&command.FlagListToRight != 0 {
			return append(append(out, onto...), elem)
		}
		return append(append(out, elem), onto...)
	}
	moved := bytes.Clone(elem) // the result's: elem aliases the stored value
	if bytes.Equal(c.Key, c.Value) {
		return a.storeList(kv, c.Key, push(elems), old, true, rev, moved)
	}
	dstOld, dstExists, dst, code := a.listOf(kv, c.Value)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	dv, ok := listValue(push(dst))
	if !ok {
		return &command.Result{Code: command.CodeTooLong}
	}
	if r := a.storeList(kv, c.Key, elems, old, true, rev, nil); r.Code != command.CodeOK {
		return r // CodeStorage: a source that held an element fits once it holds one fewer
	}
	r := a.storeListValue(kv, c.Value, dv, dstOld, dstExists, rev, moved)
	if r.Code == command.CodeCreated {
		r.Code = command.CodeOK // the move's answer is the element, wherever it went
	}
	return r
}

// The applier's rows of this file's commands (commands.go joins them).
var listApplies = applies{
	command.TypeListPush:   {remembered: true, apply: (*applier).listPush, kv: (*applier).listPushIn},
	command.TypeListPop:    {remembered: true, apply: (*applier).listPop, kv: (*applier).listPopIn},
	command.TypeListRem:    {remembered: true, apply: (*applier).listRem, kv: (*applier).listRemIn},
	command.TypeListTrim:   {remembered: true, apply: (*applier).listTrim, kv: (*applier).listTrimIn},
	command.TypeListSet:    {remembered: true, apply: (*applier).listSet, kv: (*applier).listSetIn},
	command.TypeListInsert: {remembered: true, apply: (*applier).listInsert, kv: (*applier).listInsertIn},
	command.TypeListMove:   {remembered: true, apply: (*applier).listMove, kv: (*applier).listMoveIn},
}
