package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	bolt "go.etcd.io/bbolt"
)

// Lists, Redis's second type, for the code that uses one as a queue or a
// signal (python-redis-lock's waiters BLPOP a list its release LPUSHes).
// A list is one KV entry of KindList, its value the whole list:
//
//	elements (uvarint) | elements × (length (uvarint) | bytes)
//
// so every list command is one read and one write of one key, in the
// batch's transaction like every KV command: WATCH, MULTI, scripts,
// lifetimes, RENAME and the sweeper see a list as any key. Each write
// rewrites the value, so a list is bounded (MaxListElems, MaxListBytes): a
// push past either is refused whole (CodeTooLong). A list emptied by a pop,
// LREM or LTRIM is deleted, as Redis deletes it.

// Bounds of a list.
const (
	// MaxListElems bounds a list's elements.
	MaxListElems = 1 << 16
	// MaxListBytes bounds a list's encoding (its elements' bytes and a
	// few bytes each).
	MaxListBytes = 4 << 20
)

// ErrListTooLong is a list's bound, as the error a push past it answers.
var ErrListTooLong = fmt.Errorf("list too long: a list holds at most %d elements and %d bytes", MaxListElems, MaxListBytes)

// EncodeList is the encoding of a list of elems.
func EncodeList(elems [][]byte) []byte {
	n := binary.MaxVarintLen64
	for _, e := range elems {
		n += len(e) + binary.MaxVarintLen32
	}
	b := make([]byte, 0, n)
	b = binary.AppendUvarint(b, uint64(len(elems)))
	for _, e := range elems {
		b = appendBytes(b, e)
	}
	return b
}

// DecodeList parses a list's encoding (a KindList entry's value); the
// elements alias v.
func DecodeList(v []byte) ([][]byte, error) {
	r := reader{b: v}
	n := r.count()
	out := make([][]byte, 0, n)
	for i := 0; i < n && r.err == nil; i++ {
		out = append(out, r.bytes())
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: a list's encoding", ErrBadCommand)
	}
	return out, nil
}

// listOf is the key's list: nil when absent; CodeWrongType when it holds
// a string.
func (a *applier) listOf(kv kvStore, key []byte) (old KVEntry, exists bool, elems [][]byte, code Code) {
	old, exists, err := a.liveKV(kv, key)
	switch {
	case err != nil:
		return old, false, nil, CodeStorage
	case !exists:
		return old, false, nil, CodeOK
	case old.Kind != KindList:
		return old, true, nil, CodeWrongType
	}
	elems, err = DecodeList(old.Value)
	if err != nil {
		return old, true, nil, CodeStorage
	}
	return old, true, elems, CodeOK
}

// storeList writes elems as the key's list (deleting the key when it is
// empty), keeping its lifetime; value is the result's.
func (a *applier) storeList(kv kvStore, key []byte, elems [][]byte, old KVEntry, exists bool, rev uint64, value []byte) *Result {
	if len(elems) == 0 {
		if exists {
			if err := kv.del(key, old); err != nil {
				return &Result{Code: CodeStorage}
			}
		}
		return &Result{Code: CodeOK, Value: value}
	}
	v := EncodeList(elems) // copies: elems may alias the old value's memory
	if len(elems) > MaxListElems || len(v) > MaxListBytes {
		return &Result{Code: CodeTooLong}
	}
	e := KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Kind: KindList, Value: v}
	return a.storeKV(kv, key, &e, old, exists, value)
}

// listPush is LPUSH, RPUSH (FlagListRight), LPUSHX, RPUSHX
// (FlagListExisting: only onto a list that exists, CodeNotFound if not):
// c.Value's elements, each in turn, at the head or the tail. The result
// carries the list's new length, in decimal.
func (a *applier) listPush(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.listPushIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listPushIn(kv kvStore, c *Command, rev uint64) *Result {
	add, err := DecodeList(c.Value)
	if err != nil {
		return &Result{Code: CodeBadCommand}
	}
	old, exists, elems, code := a.listOf(kv, c.Key)
	switch {
	case code != CodeOK:
		return &Result{Code: code}
	case !exists && c.Flags&FlagListExisting != 0:
		return &Result{Code: CodeNotFound, Value: []byte("0")}
	case len(elems)+len(add) > MaxListElems:
		return &Result{Code: CodeTooLong}
	}
	out := make([][]byte, 0, len(elems)+len(add))
	if c.Flags&FlagListRight != 0 {
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
func (a *applier) listPop(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.listPopIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listPopIn(kv kvStore, c *Command, rev uint64) *Result {
	more, err := DecodeList(c.Value)
	if err != nil {
		return &Result{Code: CodeBadCommand}
	}
	count := uint64(1)
	if c.Flags&FlagListCount != 0 {
		count = binary.BigEndian.Uint64(c.Body)
	}
	for _, key := range append([][]byte{c.Key}, more...) {
		old, exists, elems, code := a.listOf(kv, key)
		if code != CodeOK {
			return &Result{Code: code}
		}
		if !exists {
			continue
		}
		n := int(min(count, uint64(len(elems))))
		value := appendBytes(nil, key)
		if n == 0 { // LPOP key 0: nothing popped, nothing written
			return &Result{Code: CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: append(value, EncodeList(nil)...)}
		}
		var popped [][]byte
		if c.Flags&FlagListRight != 0 {
			for i := 0; i < n; i++ {
				popped = append(popped, elems[len(elems)-1-i])
			}
			elems = elems[:len(elems)-n]
		} else {
			popped, elems = elems[:n], elems[n:]
		}
		value = append(value, EncodeList(popped)...) // copies: the elements alias the stored value
		return a.storeList(kv, key, elems, old, true, rev, value)
	}
	return &Result{Code: CodeNotFound}
}

// ListPopped is the key and the elements of a pop's result (CodeOK).
func ListPopped(r *Result) (key []byte, elems [][]byte, err error) {
	rd := reader{b: r.Value}
	key = rd.bytes()
	if rd.err != nil {
		return nil, nil, fmt.Errorf("%w: a pop's result", ErrBadCommand)
	}
	elems, err = DecodeList(rd.b)
	return key, elems, err
}

// listRem is LREM: it removes the elements equal to c.Value, the first
// count of them (c.Body, a signed 8-byte count) from the head, the last
// -count from the tail, or all (0). The result carries how many, in
// decimal.
func (a *applier) listRem(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.listRemIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listRemIn(kv kvStore, c *Command, rev uint64) *Result {
	count := int64(binary.BigEndian.Uint64(c.Body))
	old, exists, elems, code := a.listOf(kv, c.Key)
	if code != CodeOK || !exists {
		return &Result{Code: code, Value: []byte("0")}
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
		return &Result{Code: CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: []byte("0")}
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
func (a *applier) listTrim(tx *bolt.Tx, c *Command, rev uint64) *Result {
	return a.listTrimIn(boltKV{a, tx}, c, rev)
}

func (a *applier) listTrimIn(kv kvStore, c *Command, rev uint64) *Result {
	start, stop := int64(binary.BigEndian.Uint64(c.Body)), int64(binary.BigEndian.Uint64(c.Body[8:]))
	old, exists, elems, code := a.listOf(kv, c.Key)
	if code != CodeOK || !exists {
		return &Result{Code: code}
	}
	lo, hi, ok := ListRange(len(elems), start, stop)
	if ok && lo == 0 && hi == len(elems) {
		return &Result{Code: CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt} // nothing to trim
	}
	if !ok {
		lo, hi = 0, 0
	}
	return a.storeList(kv, c.Key, elems[lo:hi], old, true, rev, nil)
}

// ListRange is Redis's LRANGE and LTRIM clamping of start and stop (both
// included, negative counted from the tail) over a list of n elements:
// the elements [lo, hi); false when the range is empty.
func ListRange(n int, start, stop int64) (lo, hi int, ok bool) {
	ln := int64(n)
	if start < 0 {
		start = max(ln+start, 0)
	}
	if stop < 0 {
		stop = ln + stop
	}
	if start > stop || start >= ln {
		return 0, 0, false
	}
	stop = min(stop, ln-1)
	return int(start), int(stop) + 1, true
}

func checkListPush(c *Command) error {
	switch elems, err := DecodeList(c.Value); {
	case c.Flags&^(FlagListRight|FlagListExisting) != 0:
		return errors.New("unknown push flags")
	case err != nil || len(elems) == 0:
		return errors.New("a push's elements are a list's encoding, not empty")
	}
	return nil
}

func checkListPop(c *Command) error {
	keys, err := DecodeList(c.Value)
	switch {
	case c.Flags&^(FlagListRight|FlagListCount) != 0:
		return errors.New("unknown pop flags")
	case err != nil:
		return errors.New("a pop's further keys are a list's encoding")
	case (c.Flags&FlagListCount != 0) != (len(c.Body) == 8):
		return errors.New("a pop's count is 8 bytes, and only with the count flag")
	}
	for _, k := range keys {
		switch {
		case len(k) == 0 || len(k) > MaxStoredKeyLen:
			return errors.New("a pop's further key is empty or too long")
		case k[0] == 0 && !isKeyspaceKey(k):
			return errors.New("a pop's further key is a reserved key") // idemgate's own, never a list
		}
	}
	return nil
}

func checkListRem(c *Command) error {
	if len(c.Body) != 8 {
		return errors.New("a remove's count is 8 bytes")
	}
	return nil
}

func checkListTrim(c *Command) error {
	if len(c.Body) != 16 {
		return errors.New("a trim's start and stop are 16 bytes")
	}
	return nil
}

// ListPushCommand pushes elems onto the key's list, each in turn, at the
// head (LPUSH) or the tail (right: RPUSH); existing: only onto a list that
// exists (LPUSHX, RPUSHX; CodeNotFound). Result.Value is the new length,
// in decimal; CodeWrongType, CodeTooLong.
func ListPushCommand(key []byte, elems [][]byte, right, existing bool) *Command {
	c := &Command{Type: TypeListPush, Key: key, Value: EncodeList(elems)}
	if right {
		c.Flags |= FlagListRight
	}
	if existing {
		c.Flags |= FlagListExisting
	}
	return c
}

// ListPopCommand pops from the first of keys that exists, at the head
// (LPOP) or the tail (right: RPOP), count elements (count < 0: one, as
// LPOP without a count): ListPopped reads the result; CodeNotFound when
// no key exists, CodeWrongType when the first that does is not a list.
func ListPopCommand(keys [][]byte, right bool, count int64) *Command {
	c := &Command{Type: TypeListPop, Key: keys[0], Value: EncodeList(keys[1:])}
	if right {
		c.Flags |= FlagListRight
	}
	if count >= 0 {
		c.Flags |= FlagListCount
		c.Body = binary.BigEndian.AppendUint64(nil, uint64(count))
	}
	return c
}

// ListRemCommand removes the elements equal to elem: the first count,
// the last -count, or all (0) (LREM). Result.Value is how many, in decimal.
func ListRemCommand(key, elem []byte, count int64) *Command {
	return &Command{Type: TypeListRem, Key: key, Value: elem, Body: binary.BigEndian.AppendUint64(nil, uint64(count))}
}

// ListTrimCommand keeps the elements from start to stop (LTRIM).
func ListTrimCommand(key []byte, start, stop int64) *Command {
	return &Command{Type: TypeListTrim, Key: key,
		Body: binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(start)), uint64(stop))}
}

// List flags.
const (
	FlagListRight    byte = 1 << 0 // at the tail (RPUSH, RPOP), not the head
	FlagListExisting byte = 1 << 1 // a push only onto a list that exists (LPUSHX)
	FlagListCount    byte = 1 << 2 // a pop's count is in Body
)
