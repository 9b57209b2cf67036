package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Sorted sets, Redis's fifth type: a collection (coll.go) of kind
// KindZSet whose elements are kept in two indexes under its id:
//
//	tag 0 (TagElem):  id | 0 | order (8) | member         ->  score (8)
//	tag 1 (TagScore): id | 1 | score (8) | member         ->  ""
//
// the score as ScoreKey encodes it, so that the bytes' order is the
// numbers' order and a tag 1 walk is Redis's order (score, then member's
// bytes). ZSCORE is a point read of tag 0; a range by score or by member
// (all of one score, as Redis requires of BYLEX) is a seek in tag 1; a
// change of one member's score rewrites its two entries, O(log n) pages.
// A rank is a walk of tag 1 from its first entry: bbolt keeps no counts
// in its branches, so ZRANK and a range by rank cost the rank.

// TagScore is the tag of a sorted set's score order.
const TagScore byte = 1

// ScoreKey encodes a score (not NaN) so that byte order is numeric
// order: a positive one's sign bit flipped, a negative one's every bit;
// -0 is 0.
func ScoreKey(f float64) uint64 {
	if f == 0 {
		f = 0
	}
	b := math.Float64bits(f)
	if b&(1<<63) == 0 {
		return b | 1<<63
	}
	return ^b
}

// ScoreOf decodes ScoreKey.
func ScoreOf(k uint64) float64 {
	if k&(1<<63) != 0 {
		return math.Float64frombits(k &^ (1 << 63))
	}
	return math.Float64frombits(^k)
}

// ScoreBytes is ScoreKey as 8 bytes, a tag 0 element's value.
func ScoreBytes(f float64) []byte { return binary.BigEndian.AppendUint64(nil, ScoreKey(f)) }

// ScoreFromBytes decodes ScoreBytes; false when b is not 8 bytes.
func ScoreFromBytes(b []byte) (float64, bool) {
	if len(b) != 8 {
		return 0, false
	}
	return ScoreOf(binary.BigEndian.Uint64(b)), true
}

// ScoreElemKey is a member's tag 1 key.
func ScoreElemKey(id uint64, score float64, member []byte) []byte {
	b := ElemPrefix(id, TagScore, ScoreKey(score))
	return append(b, member...)
}

// Strtod reads s whole as C's strtod reads a double (Redis's scores):
// decimal, hexadecimal or infinity, NaN refused; ranged reports an
// overflow (f is then an infinity) or an underflow to zero.
func Strtod(s string) (f float64, ranged, ok bool) {
	switch {
	case infFloat.MatchString(s):
		if s[0] == '-' {
			return math.Inf(-1), false, true
		}
		return math.Inf(1), false, true
	case decFloat.MatchString(s):
	case hexFloat.MatchString(s):
		if !strings.ContainsAny(s, "pP") {
			s += "p0"
		}
	default:
		return 0, false, false
	}
	f, err := strconv.ParseFloat(s, 64)
	return f, err != nil || (f == 0 && nonZeroMantissa(s)), true
}

// ZADD's flags (FlagCollZSet is always set on a TypeZAdd).
const (
	ZAddNX   byte = 1 << 0
	ZAddXX   byte = 1 << 1
	ZAddGT   byte = 1 << 2
	ZAddLT   byte = 1 << 3
	ZAddCH   byte = 1 << 4
	ZAddIncr byte = 1 << 5
)

// ZAddCommand adds members with scores (ZADD, ZINCRBY: ZAddIncr). Value
// is the scores (8 bytes, math.Float64bits) and members alternating.
// Result.Value is the members added (changed, with ZAddCH) in decimal;
// with ZAddIncr the new score (8 bytes), or nothing when a condition
// refused it. CodeNotFinite: an increment's sum is NaN.
func ZAddCommand(key []byte, scores []float64, members [][]byte, flags byte) *Command {
	pairs := make([][]byte, 0, 2*len(members))
	for i, m := range members {
		pairs = append(pairs, binary.BigEndian.AppendUint64(nil, math.Float64bits(scores[i])), m)
	}
	return &Command{Type: TypeZAdd, Key: key, Value: EncodeList(pairs), Mode: SetMode(flags)}
}

func checkZAdd(c *Command) error {
	f := byte(c.Mode)
	switch {
	case f&^(ZAddNX|ZAddXX|ZAddGT|ZAddLT|ZAddCH|ZAddIncr) != 0:
		return errors.New("unknown ZADD flags")
	case f&ZAddNX != 0 && f&(ZAddXX|ZAddGT|ZAddLT) != 0, f&ZAddGT != 0 && f&ZAddLT != 0:
		return errors.New("incompatible ZADD flags")
	}
	elems, err := DecodeList(c.Value)
	if err != nil || len(elems) == 0 || len(elems)%2 != 0 {
		return errors.New("a ZADD's elements are scores and members, in pairs")
	}
	if f&ZAddIncr != 0 && len(elems) != 2 {
		return errors.New("an increment is of one member")
	}
	for i := 0; i < len(elems); i += 2 {
		if len(elems[i]) != 8 || math.IsNaN(math.Float64frombits(binary.BigEndian.Uint64(elems[i]))) {
			return errors.New("a score is 8 bytes, not NaN")
		}
		if len(elems[i+1]) > MaxFieldLen {
			return ErrFieldTooLong
		}
	}
	return nil
}

// ZBy is what a range of a sorted set is of.
type ZBy byte

// The ranges.
const (
	ZByRank ZBy = iota
	ZByScore
	ZByLex
	zByEnd
)

// ZRangeSpec is a range of a sorted set: ZRANGE's forms, ZCOUNT,
// ZLEXCOUNT, ZREMRANGEBY*.
type ZRangeSpec struct {
	By ZBy
	// Rev: from the highest; Min and Max are then given as Redis takes
	// them, the bound at the start first (ZREVRANGEBYSCORE key max min is
	// Min=max).
	Rev bool
	// Count: answer how many, not which.
	Count bool
	// Rank: Start and Stop (Redis's, negative from the end). Score: Min
	// and Max, with MinEx, MaxEx. Lex: LexMin, LexMax, with MinEx, MaxEx;
	// LexMinInf (-), LexMaxInf (+) and their reverse.
	Start, Stop  int64
	Min, Max     float64
	MinEx, MaxEx bool
	LexMin       []byte
	LexMax       []byte
	// LexMin and LexMax are "-" (minus infinity) or "+" (plus infinity).
	LexMinInf, LexMaxInf int8
	// Offset and Limit (LIMIT; Limit < 0: all).
	Offset, Limit int64
}

// Encode is the spec in a command's Body.
func (s ZRangeSpec) Encode() []byte {
	b := []byte{byte(s.By), b2b(s.Rev) | b2b(s.Count)<<1 | b2b(s.MinEx)<<2 | b2b(s.MaxEx)<<3, byte(s.LexMinInf), byte(s.LexMaxInf)}
	for _, n := range []uint64{uint64(s.Start), uint64(s.Stop), math.Float64bits(s.Min), math.Float64bits(s.Max), uint64(s.Offset), uint64(s.Limit)} {
		b = binary.BigEndian.AppendUint64(b, n)
	}
	return append(b, EncodeList([][]byte{s.LexMin, s.LexMax})...)
}

func b2b(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// DecodeZRangeSpec parses Encode.
func DecodeZRangeSpec(b []byte) (ZRangeSpec, error) {
	bad := fmt.Errorf("%w: a sorted set's range", ErrBadCommand)
	if len(b) < 4+48 || ZBy(b[0]) >= zByEnd || b[1]&^15 != 0 {
		return ZRangeSpec{}, bad
	}
	s := ZRangeSpec{By: ZBy(b[0]), Rev: b[1]&1 != 0, Count: b[1]&2 != 0, MinEx: b[1]&4 != 0, MaxEx: b[1]&8 != 0,
		LexMinInf: int8(b[2]), LexMaxInf: int8(b[3])}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[4+8*i:]) }
	s.Start, s.Stop, s.Min, s.Max = int64(u(0)), int64(u(1)), math.Float64frombits(u(2)), math.Float64frombits(u(3))
	s.Offset, s.Limit = int64(u(4)), int64(u(5))
	lex, err := DecodeList(b[52:])
	if err != nil || len(lex) != 2 || len(lex[0]) > MaxFieldLen || len(lex[1]) > MaxFieldLen || math.IsNaN(s.Min) || math.IsNaN(s.Max) {
		return ZRangeSpec{}, bad
	}
	s.LexMin, s.LexMax = lex[0], lex[1]
	return s, nil
}

// ZRangeCommand reads a range of a sorted set (ReadZRange).
func ZRangeCommand(key []byte, s ZRangeSpec) *Command {
	return &Command{Type: TypeCollRead, Key: key, Mode: SetMode(ReadZRange), Flags: FlagCollZSet, Body: s.Encode()}
}

// ZRankCommand reads a member's rank (ReadZRank; rev: ZREVRANK).
func ZRankCommand(key, member []byte, rev bool) *Command {
	c := &Command{Type: TypeCollRead, Key: key, Mode: SetMode(ReadZRank), Flags: FlagCollZSet, Body: member}
	if rev {
		c.Flags |= FlagCollCount
	}
	return c
}

// ZScoresCommand reads members' scores (ZSCORE, ZMSCORE; ZCARD: none).
func ZScoresCommand(key []byte, members [][]byte) *Command {
	return &Command{Type: TypeCollRead, Key: key, Mode: SetMode(ReadFields), Flags: FlagCollZSet, Body: EncodeList(members)}
}

// ZRemCommand removes members (ZREM). Result.Value is how many, in
// decimal.
func ZRemCommand(key []byte, members [][]byte) *Command {
	return &Command{Type: TypeCollDel, Key: key, Value: EncodeList(members), Flags: FlagCollZSet}
}

// ZRemRangeCommand removes a range of a sorted set: ZREMRANGEBY*
// (Result.Value how many, in decimal), or with pop ZPOPMIN and ZPOPMAX
// (the members and score keys removed, alternating, a list's encoding).
func ZRemRangeCommand(key []byte, s ZRangeSpec, pop bool) *Command {
	s.Count = false
	c := &Command{Type: TypeZRemRange, Key: key, Body: s.Encode()}
	if pop {
		c.Flags = FlagCollCount
	}
	return c
}

// ZPopCommand pops up to count members from the first of keys that
// holds a sorted set, the lowest scores first (max: the highest): ZMPOP,
// BZPOPMIN, BZPOPMAX, BZMPOP. Result.Value is the key and the members
// and score keys popped, alternating, as ListPopped reads a list pop's;
// CodeNotFound when no key exists, CodeWrongType when the first that
// does is not a sorted set.
func ZPopCommand(keys [][]byte, max bool, count int64) *Command {
	s := ZRangeSpec{By: ZByRank, Rev: max, Start: 0, Stop: count - 1, Limit: -1}
	c := ZRemRangeCommand(keys[0], s, true)
	c.Flags |= FlagZKeyed
	c.Value = EncodeList(keys[1:])
	return c
}

func checkZRemRange(c *Command) error {
	keyed := c.Flags&FlagZKeyed != 0
	switch {
	case c.Flags&^(FlagCollCount|FlagZKeyed) != 0:
		return errors.New("unknown flags of a range's removal")
	case keyed && c.Flags&FlagCollCount == 0:
		return errors.New("a pop of several keys answers its members")
	case !keyed && len(c.Value) != 0:
		return errors.New("further keys of a one-key removal")
	}
	s, err := DecodeZRangeSpec(c.Body)
	if err == nil && s.Count {
		return errors.New("a removal answers its count")
	}
	if err == nil && keyed {
		err = checkMoreKeys(c.Value)
	}
	return err
}

// ZScanCommand is a step of ZSCAN, as CollReadCommand's ReadScan.
func ZScanCommand(key []byte, cursor uint64, count int64) *Command {
	c := CollReadCommand(key, false, ReadScan, nil, int64(cursor), count, true)
	c.Flags |= FlagCollZSet
	return c
}

// ZStoreMode is what a ZStore stores.
type ZStoreMode byte

// The stores: ZRANGESTORE, ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE (and
// the reads of ReadZCombine, but a range's).
const (
	ZStoreRange ZStoreMode = iota
	ZStoreUnion
	ZStoreInter
	ZStoreDiff
	zStoreEnd
)

// The aggregates of ZUNIONSTORE and ZINTERSTORE.
const (
	ZAggSum byte = iota
	ZAggMin
	ZAggMax
	zAggEnd
)

// ZRangeStoreCommand stores src's range s in dst (ZRANGESTORE).
// Result.Value is the members stored, in decimal; an empty range deletes
// dst.
func ZRangeStoreCommand(dst, src []byte, s ZRangeSpec) *Command {
	s.Count = false
	return &Command{Type: TypeZStore, Key: dst, Value: EncodeList([][]byte{src}), Mode: SetMode(ZStoreRange), Body: s.Encode()}
}

// ZCombineStoreCommand stores the union or intersection of srcs (sorted
// sets or sets, a set's members scored 1) in dst, each source's scores
// times its weight, aggregated by agg (ZUNIONSTORE, ZINTERSTORE).
func ZCombineStoreCommand(dst []byte, srcs [][]byte, mode ZStoreMode, weights []float64, agg byte) *Command {
	b := []byte{agg}
	for _, w := range weights {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(w))
	}
	return &Command{Type: TypeZStore, Key: dst, Value: EncodeList(srcs), Mode: SetMode(mode), Body: b}
}

// ZCombineCommand reads the union, intersection or difference of the
// sorted sets or sets keys (ReadZCombine: ZUNION, ZINTER, ZDIFF), each
// source's scores times its weight (a difference's are not weighted),
// aggregated by agg; card: the intersection's size up to limit (0:
// none), ZINTERCARD. Body: the mode, the aggregate, a weight (8 bytes)
// for each key, and with FlagCollCount the limit (8).
func ZCombineCommand(keys [][]byte, mode ZStoreMode, weights []float64, agg byte, card bool, limit int64) *Command {
	b := []byte{byte(mode), agg}
	for _, w := range weights {
		b = binary.BigEndian.AppendUint64(b, math.Float64bits(w))
	}
	c := &Command{Type: TypeCollRead, Key: keys[0], Value: EncodeList(keys[1:]), Mode: SetMode(ReadZCombine), Flags: FlagCollZSet, Body: b}
	if card {
		c.Flags |= FlagCollCount
		c.Body = binary.BigEndian.AppendUint64(c.Body, uint64(limit))
	}
	return c
}

// ZCombineOf parses a ReadZCombine's Body for n keys: the mode, the
// aggregate, the weights, and the limit (-1 without FlagCollCount).
func ZCombineOf(c *Command, n int) (mode ZStoreMode, agg byte, weights []float64, limit int64, err error) {
	want := 2 + 8*n
	card := c.Flags&FlagCollCount != 0
	if card {
		want += 8
	}
	if len(c.Body) != want || c.Body[0] == byte(ZStoreRange) || ZStoreMode(c.Body[0]) >= zStoreEnd || c.Body[1] >= zAggEnd {
		return 0, 0, nil, 0, fmt.Errorf("%w: a sorted sets' combination", ErrBadCommand)
	}
	weights = make([]float64, n)
	for i := range weights {
		weights[i] = math.Float64frombits(binary.BigEndian.Uint64(c.Body[2+8*i:]))
		if math.IsNaN(weights[i]) {
			return 0, 0, nil, 0, fmt.Errorf("%w: a weight is NaN", ErrBadCommand)
		}
	}
	limit = -1
	if card {
		limit = int64(binary.BigEndian.Uint64(c.Body[2+8*n:]))
		if limit < 0 {
			return 0, 0, nil, 0, fmt.Errorf("%w: a negative limit", ErrBadCommand)
		}
	}
	return ZStoreMode(c.Body[0]), c.Body[1], weights, limit, nil
}

func checkZCombine(c *Command) error {
	keys, err := DecodeList(c.Value)
	if err != nil {
		return errors.New("further keys are a list's encoding")
	}
	if _, _, _, _, err := ZCombineOf(c, 1+len(keys)); err != nil {
		return err
	}
	return checkMoreKeys(c.Value)
}

func checkZStore(c *Command) error {
	m := ZStoreMode(c.Mode)
	if m >= zStoreEnd {
		return errors.New("unknown store mode")
	}
	keys, err := DecodeList(c.Value)
	switch {
	case err != nil || len(keys) == 0:
		return errors.New("a store's sources are keys, not none")
	case m == ZStoreRange && len(keys) != 1:
		return errors.New("a range's store has one source")
	case m == ZStoreRange:
		if _, err := DecodeZRangeSpec(c.Body); err != nil {
			return err
		}
	case len(c.Body) != 1+8*len(keys) || c.Body[0] >= zAggEnd:
		return errors.New("an aggregate and a weight for each source")
	}
	return checkMoreKeys(c.Value)
}
