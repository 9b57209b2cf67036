package command

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/zeebo/xxh3"
)

// Hashes and sets, Redis's third and fourth types: collections of
// elements (a hash's field and value, a set's member). A collection is a
// KV key of KindHash or KindSet whose entry holds only a header; each
// element is an entry of its own in the state machine's element bucket:
//
//	header (KVEntry.Value): id (8) | elements (8) | bytes (8) | flags (1)
//	element:                id (8) | tag (1) | order (8) | field  ->  value
//
// so a write of one field rewrites the pages of one element and of the
// header (its version and counts), whatever the collection's size. The
// id is the revision that created the collection: a RENAME moves the
// header alone and the elements stay where they are; a COPY writes them
// again under the copy's id. Order is the field's XXH3 (ElemOrder): the
// elements of one collection are in that order, which is what HSCAN's
// cursor and the random choices of SPOP, SRANDMEMBER and HRANDFIELD read
// (a number a client can carry, and a place as likely as any other). The
// tag leaves room for other indexes of one key (a sorted set's score
// order, tag 1). Every place that removes a header removes its
// elements too (DEL, expiry, an overwrite, FLUSH), in the same
// transaction: no element outlives its key.
//
// A collection is bounded (MaxCollElems, MaxCollBytes), and so is a
// field (MaxFieldLen: an element's key is a bbolt key); a write past a
// bound is refused whole (CodeTooLong). A collection emptied by a write is
// deleted, as Redis deletes it.

// Bounds of a collection.
const (
	// MaxCollElems bounds a hash's or a set's elements.
	MaxCollElems = 1 << 20
	// MaxCollBytes bounds the bytes of its fields and values.
	MaxCollBytes = 64 << 20
	// MaxFieldLen bounds a field or a member.
	MaxFieldLen = 8 << 10
)

// ErrCollTooLarge is a collection's bound, as the error a write past it
// answers.
var ErrCollTooLarge = fmt.Errorf("hash or set too large: one holds at most %d elements and %d bytes of fields and values", MaxCollElems, MaxCollBytes)

// ErrFieldTooLong is a field's bound.
var ErrFieldTooLong = fmt.Errorf("hash field or set member too long: at most %d bytes", MaxFieldLen)

// TagElem is the tag of a collection's elements, field -> value (a
// set's: empty). A tag is the index of a collection an element entry is
// of; tag 1 is kept for a sorted set's (score, member) order.
const TagElem byte = 0

// CollHeaderLen is a collection header's length.
const CollHeaderLen = 25

// CollHeader is a collection's KV entry value.
type CollHeader struct {
	ID    uint64 // the revision that created it: its elements' prefix
	Count uint64 // its elements
	Bytes uint64 // the bytes of its fields and values
	Flags byte   // CollBig
}

// CollBig: the collection has grown past Redis 7.0's small encoding
// (listpack for a hash, intset for a set); as in Redis it never goes
// back, so OBJECT ENCODING answers as Redis does.
const CollBig byte = 1 << 0

// Redis 7.0's defaults for its small encodings.
const (
	hashSmallEntries = 128 // hash-max-listpack-entries
	hashSmallValue   = 64  // hash-max-listpack-value
	setSmallEntries  = 512 // set-max-intset-entries
	zsetSmallEntries = 128 // zset-max-listpack-entries
	zsetSmallValue   = 64  // zset-max-listpack-value
)

// Encode is the header as stored.
func (h CollHeader) Encode() []byte {
	b := make([]byte, CollHeaderLen)
	binary.BigEndian.PutUint64(b, h.ID)
	binary.BigEndian.PutUint64(b[8:], h.Count)
	binary.BigEndian.PutUint64(b[16:], h.Bytes)
	b[24] = h.Flags
	return b
}

// DecodeCollHeader reads a header from the front of v (a collection's
// entry value, or a whole collection: WholeColl).
func DecodeCollHeader(v []byte) (CollHeader, bool) {
	if len(v) < CollHeaderLen {
		return CollHeader{}, false
	}
	return CollHeader{ID: binary.BigEndian.Uint64(v), Count: binary.BigEndian.Uint64(v[8:]),
		Bytes: binary.BigEndian.Uint64(v[16:]), Flags: v[24]}, true
}

// IsColl reports whether k is a kind of elements (a hash, a set).
func (k Kind) IsColl() bool {
	return k == KindHash || k == KindSet || k == KindZSet || k == KindStream
}

// Grow is h after an element of field and value was added to a
// collection of kind k: the small encoding's bounds are Redis's.
func (h CollHeader) Grow(k Kind, field, value []byte) CollHeader {
	h.Count++
	h.Bytes += uint64(len(field) + len(value))
	switch {
	case k == KindHash && (h.Count > hashSmallEntries || len(field) > hashSmallValue || len(value) > hashSmallValue):
		h.Flags |= CollBig
	case k == KindZSet && (h.Count > zsetSmallEntries || len(field) > zsetSmallValue):
		h.Flags |= CollBig
	case k == KindSet && h.Count > setSmallEntries:
		h.Flags |= CollBig
	case k == KindSet:
		if _, ok := ParseInt(field); !ok {
			h.Flags |= CollBig
		}
	}
	return h
}

// Encoding is OBJECT ENCODING's answer for a collection of kind k.
func (h CollHeader) Encoding(k Kind) string {
	switch {
	case k == KindStream:
		return "stream"
	case h.Flags&CollBig != 0 && k == KindZSet:
		return "skiplist"
	case h.Flags&CollBig != 0:
		return "hashtable"
	case k == KindSet:
		return "intset"
	}
	return "listpack"
}

// Over reports whether h passes a collection's bounds.
func (h CollHeader) Over() bool { return h.Count > MaxCollElems || h.Bytes > MaxCollBytes }

// ElemOrder is an element's place in its collection: XXH3 of its field.
func ElemOrder(field []byte) uint64 { return xxh3.Hash(field) }

// ElemKey is an element's key in the element bucket.
func ElemKey(id uint64, tag byte, field []byte) []byte {
	b := make([]byte, 17, 17+len(field))
	binary.BigEndian.PutUint64(b, id)
	b[8] = tag
	binary.BigEndian.PutUint64(b[9:], ElemOrder(field))
	return append(b, field...)
}

// ElemPrefix is the prefix of a collection's elements of tag from order
// on: id (8) | tag (1) | order (8).
func ElemPrefix(id uint64, tag byte, order uint64) []byte {
	b := make([]byte, 17)
	binary.BigEndian.PutUint64(b, id)
	b[8] = tag
	binary.BigEndian.PutUint64(b[9:], order)
	return b
}

// WholeColl is a collection whole: its header, then its fields and values
// alternating, a list's encoding (a set's values empty). A script's
// sandbox is given a collection so (CollRead with ReadAll answers it).
func WholeColl(h CollHeader, pairs [][]byte) []byte {
	return append(h.Encode(), EncodeList(pairs)...)
}

// DecodeWholeColl parses WholeColl; the pairs alias v.
func DecodeWholeColl(v []byte) (CollHeader, [][]byte, error) {
	h, ok := DecodeCollHeader(v)
	if !ok {
		return h, nil, fmt.Errorf("%w: a collection's header", ErrBadCommand)
	}
	pairs, err := DecodeElems(v[CollHeaderLen:])
	if err != nil || len(pairs)%2 != 0 {
		return h, nil, fmt.Errorf("%w: a collection's elements", ErrBadCommand)
	}
	return h, pairs, nil
}

// DecodeElems parses a list's encoding of any length (DecodeList bounds
// a command's lists; a read's answer may be a whole collection); the
// elements alias v.
func DecodeElems(v []byte) ([][]byte, error) {
	r := reader{b: v}
	n := r.uvarint()
	if r.err != nil || n > uint64(len(r.b)) {
		return nil, fmt.Errorf("%w: elements", ErrBadCommand)
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		out = append(out, r.bytes())
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: elements", ErrBadCommand)
	}
	return out, nil
}

// MaxCmdElems bounds the elements one command carries (a list's
// encoding in the log).
const MaxCmdElems = maxFields

// CollReadMode is what a CollRead reads.
type CollReadMode byte

// The collection reads. Each answers CodeNotFound for an absent key,
// CodeWrongType for one of another kind, else CodeOK with the
// collection's elements in Result.Fence and what the mode reads in
// Result.Value.
const (
	// ReadFields: the fields in Body (a list's encoding): for each, a
	// Found (DecodeFound).
	ReadFields CollReadMode = iota
	// ReadAll: every element, WholeColl.
	ReadAll
	// ReadRandom: Body a seed and a signed count (8 bytes each; with
	// FlagCollCount, else one element): the fields and values chosen, a
	// list's encoding, alternating (HRANDFIELD, SRANDMEMBER).
	ReadRandom
	// ReadScan: Body a cursor and a count (8 bytes each): the next cursor
	// (8) then the fields and values of about count elements from the
	// cursor on, alternating, a list's encoding (HSCAN, SSCAN).
	ReadScan
	// The set algebra of c.Key and the further keys in Value (a list's
	// encoding): the members, a list's encoding (SINTER, SUNION, SDIFF),
	// or their count in decimal (SINTERCARD: Body its limit, 8 bytes, 0
	// none). An absent key is an empty set; CodeNotFound never.
	ReadInter
	ReadUnion
	ReadDiff
	ReadInterCard
	// The sorted set's reads (zset.go): Body a ZRangeSpec; the members
	// and scores, alternating, a list's encoding, or their count in
	// decimal.
	ReadZRange
	// ReadZRank: Body the member; its rank (8 bytes) and score (8), or
	// nothing when absent; with FlagCollCount from the highest score.
	ReadZRank
	// ReadZCombine: the union, intersection or difference of c.Key and
	// the further keys in Value, sorted sets or sets (ZUNION, ZINTER,
	// ZDIFF; ZCombineCommand): the members and score keys in score
	// order, alternating, a list's encoding; with FlagCollCount their
	// count in decimal (ZINTERCARD). An absent key is an empty set;
	// CodeNotFound never.
	ReadZCombine
	readModeEnd
)

// Collection flags.
const (
	// FlagCollSet: the command is a set's (its elements are members, with
	// no value), not a hash's.
	FlagCollSet byte = 1 << 0
	// FlagCollNX: a put sets only fields absent (HSETNX).
	FlagCollNX byte = 1 << 1
	// FlagCollCount: a random read's or a pop's count is given.
	FlagCollCount byte = 1 << 2
	// FlagCollFloat: an increment by a float (HINCRBYFLOAT).
	FlagCollFloat byte = 1 << 3
	// FlagCollZSet: the command is a sorted set's (its elements' values
	// are scores, ScoreKey's 8 bytes, and each has a TagScore entry too).
	FlagCollZSet byte = 1 << 4
	// FlagZKeyed: a sorted set's pop from the first of several keys
	// (ZMPOP, BZPOPMIN): Value the further keys, and the result names
	// the key popped from (ZPopCommand).
	FlagZKeyed byte = 1 << 5
)

// CollKind is the kind a collection command with flags works on.
func CollKind(flags byte) Kind {
	if flags&FlagCollZSet != 0 {
		return KindZSet
	}
	if flags&FlagCollSet != 0 {
		return KindSet
	}
	return KindHash
}

// EncodeFound encodes a ReadFields answer: for each field, whether it is
// there and its value.
func EncodeFound(vals [][]byte, found []bool) []byte {
	b := binary.AppendUvarint(nil, uint64(len(vals)))
	for i, v := range vals {
		if !found[i] {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = appendBytes(b, v)
	}
	return b
}

// DecodeFound parses EncodeFound; the values alias v (nil: absent).
func DecodeFound(v []byte) (vals [][]byte, found []bool, err error) {
	r := reader{b: v}
	u := r.uvarint()
	if r.err != nil || u > uint64(len(r.b)) {
		return nil, nil, fmt.Errorf("%w: a read's fields", ErrBadCommand)
	}
	n := int(u)
	vals, found = make([][]byte, n), make([]bool, n)
	for i := 0; i < n && r.err == nil; i++ {
		if r.byte() == 1 {
			vals[i], found[i] = r.bytes(), true
			if vals[i] == nil {
				vals[i] = []byte{}
			}
		}
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, nil, fmt.Errorf("%w: a read's fields", ErrBadCommand)
	}
	return vals, found, nil
}

// SetStoreMode is the set algebra of a SetStore.
type SetStoreMode byte

// The set algebra (Redis SINTERSTORE, SUNIONSTORE, SDIFFSTORE).
const (
	StoreInter SetStoreMode = iota
	StoreUnion
	StoreDiff
	storeModeEnd
)

// checkFields: fields are a list's encoding, each within MaxFieldLen;
// pairs: an even number of them.
func checkFields(v []byte, pairs bool, what string) error {
	return checkElems(v, pairs, false, what)
}

func checkElems(v []byte, pairs, empty bool, what string) error {
	elems, err := DecodeList(v)
	if err != nil || (len(elems) == 0 && !empty) {
		return fmt.Errorf("%s are a list's encoding, not empty", what)
	}
	if pairs && len(elems)%2 != 0 {
		return fmt.Errorf("%s are fields and values, in pairs", what)
	}
	for i, e := range elems {
		if (!pairs || i%2 == 0) && len(e) > MaxFieldLen {
			return ErrFieldTooLong
		}
	}
	return nil
}

// checkMoreKeys: c.Value is further keys, each a key of a keyspace.
func checkMoreKeys(v []byte) error {
	keys, err := DecodeList(v)
	if err != nil {
		return errors.New("further keys are a list's encoding")
	}
	for _, k := range keys {
		if err := checkListKey(k, "a further key"); err != nil {
			return err
		}
	}
	return nil
}

func checkCollPut(c *Command) error {
	if c.Flags&^(FlagCollSet|FlagCollNX) != 0 {
		return errors.New("unknown put flags")
	}
	return checkFields(c.Value, c.Flags&FlagCollSet == 0, "a put's elements")
}

func checkCollDel(c *Command) error {
	if c.Flags&^(FlagCollSet|FlagCollZSet) != 0 || c.Flags == FlagCollSet|FlagCollZSet {
		return errors.New("unknown delete flags")
	}
	return checkFields(c.Value, false, "a delete's fields")
}

func checkHashIncr(c *Command) error {
	switch {
	case c.Flags&^FlagCollFloat != 0:
		return errors.New("unknown increment flags")
	case len(c.Value) > MaxFieldLen:
		return ErrFieldTooLong
	case c.Flags&FlagCollFloat == 0:
		if _, ok := ParseInt(c.Body); !ok {
			return errors.New("the increment is not a decimal integer")
		}
	default:
		if f, err := ParseLongDouble(c.Body); err != nil || f.IsInf() {
			return errors.New("the increment is not a finite number")
		}
	}
	return nil
}

func checkCollRead(c *Command) error {
	switch m := CollReadMode(c.Mode); {
	case m >= readModeEnd:
		return errors.New("unknown read mode")
	case c.Flags&^(FlagCollSet|FlagCollCount|FlagCollZSet) != 0 || c.Flags&(FlagCollSet|FlagCollZSet) == FlagCollSet|FlagCollZSet:
		return errors.New("unknown read flags")
	case m == ReadZCombine:
		if c.Flags&FlagCollZSet == 0 {
			return errors.New("a sorted set's read")
		}
		return checkZCombine(c)
	case m >= ReadZRange:
		if c.Flags&FlagCollZSet == 0 || len(c.Value) != 0 {
			return errors.New("a sorted set's read of one key")
		}
		if m == ReadZRange {
			_, err := DecodeZRangeSpec(c.Body)
			return err
		}
		if len(c.Body) > MaxFieldLen {
			return ErrFieldTooLong
		}
		return nil
	case m >= ReadInter:
		if c.Flags&FlagCollSet == 0 {
			return errors.New("set algebra is a set's")
		}
		if (m == ReadInterCard) != (len(c.Body) == 8) {
			return errors.New("a limit is 8 bytes, and only SINTERCARD's")
		}
		return checkMoreKeys(c.Value)
	case len(c.Value) != 0:
		return errors.New("further keys of a one-key read")
	case m == ReadFields: // none: HLEN, SCARD
		return checkElems(c.Body, false, true, "a read's fields")
	case m == ReadAll:
		if len(c.Body) != 0 {
			return errors.New("arguments of a whole read")
		}
	case len(c.Body) != 16: // ReadRandom, ReadScan
		return errors.New("a seed or cursor and a count are 16 bytes")
	}
	return nil
}

func checkSetPop(c *Command) error {
	switch {
	case c.Flags&^FlagCollCount != 0:
		return errors.New("unknown pop flags")
	case len(c.Body) != 16:
		return errors.New("a pop's seed and count are 16 bytes")
	}
	return nil
}

func checkSetMove(c *Command) error {
	if len(c.Body) > MaxFieldLen {
		return ErrFieldTooLong
	}
	keys, err := DecodeList(c.Value)
	if err != nil || len(keys) != 1 {
		return errors.New("a move's destination is one key, a list's encoding")
	}
	return checkMoreKeys(c.Value)
}

func checkSetStore(c *Command) error {
	if SetStoreMode(c.Mode) >= storeModeEnd {
		return errors.New("unknown store mode")
	}
	keys, err := DecodeList(c.Value)
	if err != nil || len(keys) == 0 {
		return errors.New("a store's sources are keys, not none")
	}
	return checkMoreKeys(c.Value)
}

// HashSetCommand sets fields to values, pairs alternating (HSET, HMSET;
// nx: only fields absent, HSETNX). Result.Value is how many fields it
// added, in decimal; CodeWrongType, CodeTooLong.
func HashSetCommand(key []byte, pairs [][]byte, nx bool) *Command {
	c := &Command{Type: TypeCollPut, Key: key, Value: EncodeList(pairs)}
	if nx {
		c.Flags |= FlagCollNX
	}
	return c
}

// SetAddCommand adds members (SADD). Result.Value is how many were new,
// in decimal; CodeWrongType, CodeTooLong.
func SetAddCommand(key []byte, members [][]byte) *Command {
	return &Command{Type: TypeCollPut, Key: key, Value: EncodeList(members), Flags: FlagCollSet}
}

// CollDelCommand removes fields of a hash (HDEL) or members of a set
// (set: SREM). Result.Value is how many, in decimal; CodeWrongType.
func CollDelCommand(key []byte, fields [][]byte, set bool) *Command {
	c := &Command{Type: TypeCollDel, Key: key, Value: EncodeList(fields)}
	if set {
		c.Flags = FlagCollSet
	}
	return c
}

// HashIncrCommand adds incr to a hash field's value (absent: 0): a
// decimal integer (HINCRBY), or with float a number as strtold reads it
// (HINCRBYFLOAT). Result.Value is the new value; CodeNotInteger,
// CodeOverflow, CodeNotFloat, CodeNotFinite, CodeWrongType, CodeTooLong.
func HashIncrCommand(key, field, incr []byte, float bool) *Command {
	c := &Command{Type: TypeHashIncr, Key: key, Value: field, Body: incr}
	if float {
		c.Flags = FlagCollFloat
	}
	return c
}

// CollReadCommand reads a hash (set false) or a set in mode (see the
// modes): fields for ReadFields; for ReadRandom a seed and a count (count
// < 0 without FlagCollCount: hasCount false), for ReadScan a cursor and a
// count.
func CollReadCommand(key []byte, set bool, mode CollReadMode, fields [][]byte, a, b int64, hasCount bool) *Command {
	c := &Command{Type: TypeCollRead, Key: key, Mode: SetMode(mode)}
	if set {
		c.Flags |= FlagCollSet
	}
	switch mode {
	case ReadFields:
		c.Body = EncodeList(fields)
	case ReadRandom, ReadScan:
		c.Body = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, uint64(a)), uint64(b))
		if hasCount {
			c.Flags |= FlagCollCount
		}
	}
	return c
}

// SetAlgebraCommand reads the intersection, union or difference of sets
// (mode ReadInter, ReadUnion, ReadDiff), or the intersection's size up to
// limit (ReadInterCard; 0: none).
func SetAlgebraCommand(keys [][]byte, mode CollReadMode, limit int64) *Command {
	c := &Command{Type: TypeCollRead, Key: keys[0], Value: EncodeList(keys[1:]), Mode: SetMode(mode), Flags: FlagCollSet}
	if mode == ReadInterCard {
		c.Body = binary.BigEndian.AppendUint64(nil, uint64(limit))
	}
	return c
}

// SetPopCommand removes members chosen at random by seed (SPOP): one, or
// with count >= 0 up to count. Result.Value is them, a list's encoding;
// CodeNotFound without the key, CodeWrongType.
func SetPopCommand(key []byte, seed uint64, count int64) *Command {
	c := &Command{Type: TypeSetPop, Key: key}
	if count >= 0 {
		c.Flags = FlagCollCount
	}
	c.Body = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, seed), uint64(max(count, 0)))
	return c
}

// SetMoveCommand moves member from set src to set dst (SMOVE).
// Result.Value is "1" when it moved, "0" when src had no such member;
// CodeWrongType when either key is not a set.
func SetMoveCommand(src, dst, member []byte) *Command {
	return &Command{Type: TypeSetMove, Key: src, Value: EncodeList([][]byte{dst}), Body: member}
}

// SetStoreCommand stores the intersection, union or difference of the
// sets srcs in dst (SINTERSTORE, SUNIONSTORE, SDIFFSTORE), replacing it
// (deleting it when empty). Result.Value is the members stored, in
// decimal; CodeWrongType when a source is not a set.
func SetStoreCommand(dst []byte, srcs [][]byte, mode SetStoreMode) *Command {
	return &Command{Type: TypeSetStore, Key: dst, Value: EncodeList(srcs), Mode: SetMode(mode)}
}

// MoreKeys reports whether a command of type t carries further keys, a
// list's encoding, in Value (BLPOP's, a set algebra's): a face maps them
// as it maps Key.
func (t Type) MoreKeys() bool {
	return t == TypeListPop || t == TypeCollRead || t == TypeSetMove || t == TypeSetStore || t == TypeZStore || t == TypeZRemRange || t == TypeStreamGroup
}

// WholeCommand reads the collection of kind under key whole, as a
// script's sandbox is given one: WholeColl, or a stream's StreamReadAll.
func WholeCommand(key []byte, kind Kind) *Command {
	if kind == KindStream {
		return StreamAllCommand(key)
	}
	op := CollReadCommand(key, kind == KindSet, ReadAll, nil, 0, 0, false)
	if kind == KindZSet {
		op.Flags = FlagCollZSet
	}
	return op
}
