package command

import (
	"encoding/binary"
	"errors"
	"fmt"
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
	switch {
	case c.Flags&^(FlagListRight|FlagListCount) != 0:
		return errors.New("unknown pop flags")
	case (c.Flags&FlagListCount != 0) != (len(c.Body) == 8):
		return errors.New("a pop's count is 8 bytes, and only with the count flag")
	}
	return checkMoreKeys(c.Value) // a reserved key is idemgate's own, never a list
}

// checkListKey: a key a list command names beside its Key (a pop's
// further keys, a move's destination) is a key of some keyspace, not
// idemgate's own (the store checks Key alone, and only idemgate writes
// its own keys, never as a list).
func checkListKey(k []byte, what string) error {
	switch {
	case len(k) == 0 || len(k) > MaxStoredKeyLen:
		return errors.New(what + " is empty or too long")
	case k[0] == 0 && !isKeyspaceKey(k):
		return errors.New(what + " is a reserved key")
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

// ListMoveCommand pops one element from the key src's list, at its head
// or its tail (right), and pushes it onto dst's, at its head or its tail
// (toRight), in one step (Redis LMOVE, RPOPLPUSH; src and dst may be one
// list, which it rotates). Result.Value is the element; CodeNotFound
// without src (whatever dst holds); CodeWrongType when src, or dst, holds
// another kind; CodeTooLong when dst is full. Refused, it changes nothing.
func ListMoveCommand(src, dst []byte, right, toRight bool) *Command {
	c := &Command{Type: TypeListMove, Key: src, Value: dst}
	if right {
		c.Flags |= FlagListRight
	}
	if toRight {
		c.Flags |= FlagListToRight
	}
	return c
}

// ListSetCommand replaces the element at index (negative: counted from
// the tail) with elem (Redis LSET); CodeNotFound without the key,
// CodeOutOfRange past the list's ends, CodeWrongType, CodeTooLong.
func ListSetCommand(key []byte, index int64, elem []byte) *Command {
	return &Command{Type: TypeListSet, Key: key, Value: elem, Body: binary.BigEndian.AppendUint64(nil, uint64(index))}
}

// ListInsertCommand inserts elem before the first element equal to
// pivot, from the head, or after it (Redis LINSERT). Result.Value is the
// new length, in decimal; CodeNotFound without the key, CodeUnchanged
// when no element is the pivot (nothing written), CodeWrongType,
// CodeTooLong.
func ListInsertCommand(key, pivot, elem []byte, after bool) *Command {
	c := &Command{Type: TypeListInsert, Key: key, Value: elem, Body: pivot}
	if after {
		c.Flags |= FlagListRight
	}
	return c
}

func checkListMove(c *Command) error {
	if c.Flags&^(FlagListRight|FlagListToRight) != 0 {
		return errors.New("unknown move flags")
	}
	return checkListKey(c.Value, "a move's destination")
}

func checkListSet(c *Command) error {
	if len(c.Body) != 8 {
		return errors.New("a set's index is 8 bytes")
	}
	return nil
}

func checkListInsert(c *Command) error {
	if c.Flags&^FlagListRight != 0 {
		return errors.New("unknown insert flags")
	}
	return nil
}

// List flags.
const (
	// FlagListRight: at the tail (RPUSH, RPOP, a move's pop), not the
	// head; an insert's: after the pivot (its tail side), not before.
	FlagListRight    byte = 1 << 0
	FlagListExisting byte = 1 << 1 // a push only onto a list that exists (LPUSHX)
	FlagListCount    byte = 1 << 2 // a pop's count is in Body
	FlagListToRight  byte = 1 << 3 // a move's push at the destination's tail, not its head
)
