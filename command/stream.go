package command

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"strconv"
)

// Streams, Redis's sixth type: a collection (coll.go) of kind KindStream.
// Its KV entry holds a StreamHeader (a CollHeader, then the stream's own
// fields); every other part is an element entry of the element bucket
// under the collection's id, on a tag of its own:
//
//	tag 2 (TagStreamEntry):  id | 2 | ms (8) | seq (8)     ->  fields and values, a list's encoding
//	tag 3 (TagStreamNode):   id | 3 | master ms | seq (16) ->  StreamNode (40)
//	tags 4-7: the consumer groups' (TagStreamGroup ...), kept for them
//
// so the entries sort by their id (ms, then seq, big-endian) and an
// XADD, whose id is above every other, appends at the end of its tag:
// one entry and the node it joins are written, and the header. A range
// is a seek. The nodes are Redis's listpack nodes (a new one every
// StreamNodeEntries entries, or when one would pass StreamNodeBytes of
// fields and values): what their counts say is what XADD's and XTRIM's
// "~" trims (whole nodes only) and what XINFO's radix-tree-keys counts.
// The header's CollHeader is as for every collection (ID, Count: the
// entries, Bytes: their fields and values), so every path that drops or
// copies a collection (coll.go) drops or copies a stream, all its tags.
//
// Consumer groups (XGROUP, XREADGROUP, XACK ...) live on tags 4-7 of
// the same id, and keep their count in StreamHeader.Groups (XINFO
// STREAM's "groups"); GroupSpare is theirs too. The state machine's
// tagged element functions (package fsm: tagGet, tagPut, tagDel,
// tagWalk of its kvStore) read and write any tag, in a batch's
// transaction and in a script's sandbox alike; a stream read whole
// (StreamReadAll, a script's) carries every tag.
//
// A stream is bounded as other collections are (MaxCollElems entries,
// MaxCollBytes of fields and values, MaxFieldLen a field's name or
// value); an XADD past a bound is refused whole (CodeTooLong). Unlike
// other collections, an emptied stream stays, as in Redis.

// The tags of a stream's element entries.
const (
	TagStreamEntry byte = 2
	TagStreamNode  byte = 3
	// Reserved for consumer groups: a group by name, its pending
	// entries, its consumers, and one more.
	TagStreamGroup    byte = 4
	TagStreamPending  byte = 5
	TagStreamConsumer byte = 6
	TagStreamSpare    byte = 7
)

// Redis 7.0's defaults for a stream's nodes (stream-node-max-entries,
// stream-node-max-bytes).
const (
	StreamNodeEntries = 100
	StreamNodeBytes   = 4096
)

// StreamID is an entry's id, ms-seq.
type StreamID struct{ Ms, Seq uint64 }

// MaxStreamID is the last id there is.
var MaxStreamID = StreamID{math.MaxUint64, math.MaxUint64}

// Bytes is the id as a key's 16 bytes, which sort as the ids do.
func (id StreamID) Bytes() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), id.Ms), id.Seq)
}

// StreamIDOf reads 16 bytes of an id; false when b is not 16 bytes.
func StreamIDOf(b []byte) (StreamID, bool) {
	if len(b) != 16 {
		return StreamID{}, false
	}
	return StreamID{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:])}, true
}

// Compare is -1, 0 or 1 as id is before, at or after o.
func (id StreamID) Compare(o StreamID) int {
	switch {
	case id.Ms < o.Ms || (id.Ms == o.Ms && id.Seq < o.Seq):
		return -1
	case id == o:
		return 0
	}
	return 1
}

// Less reports whether id is before o.
func (id StreamID) Less(o StreamID) bool { return id.Compare(o) < 0 }

// IsZero reports whether id is 0-0.
func (id StreamID) IsZero() bool { return id == StreamID{} }

// Next is the id after id; false past the last (Redis's streamIncrID).
func (id StreamID) Next() (StreamID, bool) {
	switch {
	case id.Seq < math.MaxUint64:
		return StreamID{id.Ms, id.Seq + 1}, true
	case id.Ms < math.MaxUint64:
		return StreamID{id.Ms + 1, 0}, true
	}
	return StreamID{}, false
}

// Prev is the id before id; false before the first (streamDecrID).
func (id StreamID) Prev() (StreamID, bool) {
	switch {
	case id.Seq > 0:
		return StreamID{id.Ms, id.Seq - 1}, true
	case id.Ms > 0:
		return StreamID{id.Ms - 1, math.MaxUint64}, true
	}
	return StreamID{}, false
}

// String is the id as Redis writes it.
func (id StreamID) String() string {
	return string(id.Append(nil))
}

// Append appends the id as Redis writes it.
func (id StreamID) Append(b []byte) []byte {
	b = strconv.AppendUint(b, id.Ms, 10)
	b = append(b, '-')
	return strconv.AppendUint(b, id.Seq, 10)
}

// StreamHeaderLen is a stream header's length.
const StreamHeaderLen = CollHeaderLen + 3*16 + 4*8

// StreamHeader is a stream's KV entry value: a collection's header, then
// what XINFO STREAM answers and XADD needs.
type StreamHeader struct {
	CollHeader          // ID; Count: the entries; Bytes: their fields and values
	Last       StreamID // the last id given (XSETID may move it on)
	MaxDeleted StreamID // the highest id deleted by XDEL
	First      StreamID // the first entry's (0-0 when empty)
	Added      uint64   // entries ever added (XSETID may set it)
	Nodes      uint64   // Redis's nodes (radix-tree-keys)
	Groups     uint64   // consumer groups: theirs to keep
	GroupSpare uint64   // reserved for consumer groups
}

// Encode is the header as stored.
func (h StreamHeader) Encode() []byte {
	b := append(make([]byte, 0, StreamHeaderLen), h.CollHeader.Encode()...)
	for _, id := range []StreamID{h.Last, h.MaxDeleted, h.First} {
		b = append(b, id.Bytes()...)
	}
	for _, n := range []uint64{h.Added, h.Nodes, h.Groups, h.GroupSpare} {
		b = binary.BigEndian.AppendUint64(b, n)
	}
	return b
}

// DecodeStreamHeader reads a header from the front of v.
func DecodeStreamHeader(v []byte) (StreamHeader, bool) {
	ch, ok := DecodeCollHeader(v)
	if !ok || len(v) < StreamHeaderLen {
		return StreamHeader{}, false
	}
	h := StreamHeader{CollHeader: ch}
	b := v[CollHeaderLen:]
	id := func(i int) StreamID { s, _ := StreamIDOf(b[16*i : 16*i+16]); return s }
	h.Last, h.MaxDeleted, h.First = id(0), id(1), id(2)
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[48+8*i:]) }
	h.Added, h.Nodes, h.Groups, h.GroupSpare = u(0), u(1), u(2), u(3)
	return h, true
}

// StreamNode is a node's value (TagStreamNode): its entries live and
// deleted (in Redis a node keeps its deleted entries until all are), its
// last id (deleted or not) and the bytes of its fields and values.
type StreamNode struct {
	Live, Deleted uint64
	Last          StreamID
	Bytes         uint64
}

// Encode is the node as stored.
func (n StreamNode) Encode() []byte {
	b := binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 40), n.Live), n.Deleted)
	return binary.BigEndian.AppendUint64(append(b, n.Last.Bytes()...), n.Bytes)
}

// DecodeStreamNode parses Encode.
func DecodeStreamNode(b []byte) (StreamNode, bool) {
	if len(b) != 40 {
		return StreamNode{}, false
	}
	last, _ := StreamIDOf(b[16:32])
	return StreamNode{binary.BigEndian.Uint64(b), binary.BigEndian.Uint64(b[8:]), last, binary.BigEndian.Uint64(b[32:])}, true
}

// XAddIDMode is how an XADD's id is given.
type XAddIDMode byte

// The ids of an XADD.
const (
	XAddAuto     XAddIDMode = iota // "*": from the entry's stamp
	XAddMsAuto                     // "ms-*": the sequence after the last of ms
	XAddExplicit                   // "ms-seq"
	xaddIDEnd
)

// Trim strategies.
const (
	TrimNone   byte = 0
	TrimMaxLen byte = 1
	TrimMinID  byte = 2
)

// StreamTrim is an XADD's or XTRIM's trim: MAXLEN or MINID, "~"
// (Approx: whole nodes only) and LIMIT (at most that many entries, 0
// none; only with Approx: Redis's default is 100 nodes' entries).
type StreamTrim struct {
	Strategy byte
	Approx   bool
	MaxLen   uint64
	MinID    StreamID
	Limit    int64
}

const streamTrimLen = 2 + 8 + 16 + 8

// Encode is the trim as a command carries it.
func (t StreamTrim) Encode() []byte {
	b := []byte{t.Strategy, 0}
	if t.Approx {
		b[1] = 1
	}
	b = binary.BigEndian.AppendUint64(b, t.MaxLen)
	b = append(b, t.MinID.Bytes()...)
	return binary.BigEndian.AppendUint64(b, uint64(t.Limit))
}

// DecodeStreamTrim parses Encode.
func DecodeStreamTrim(b []byte) (StreamTrim, error) {
	if len(b) != streamTrimLen || b[0] > TrimMinID || b[1] > 1 {
		return StreamTrim{}, fmt.Errorf("%w: a stream's trim", ErrBadCommand)
	}
	id, _ := StreamIDOf(b[10:26])
	t := StreamTrim{Strategy: b[0], Approx: b[1] == 1, MaxLen: binary.BigEndian.Uint64(b[2:]), MinID: id, Limit: int64(binary.BigEndian.Uint64(b[26:]))}
	if t.Limit < 0 || (t.Limit != 0 && !t.Approx) || (t.Strategy == TrimNone && (t.Approx || t.Limit != 0)) {
		return StreamTrim{}, fmt.Errorf("%w: a stream's trim", ErrBadCommand)
	}
	return t, nil
}

// FlagStreamNoMk: an XADD to an absent key adds nothing (NOMKSTREAM).
const FlagStreamNoMk byte = 1 << 0

// XAddCommand appends an entry of fields and values (pairs alternating)
// to a stream (XADD): its id as mode says (for XAddMsAuto only id.Ms
// counts; for XAddAuto none), then trims. Result.Value is the id (16
// bytes); CodeNotFound: NOMKSTREAM and no key; CodeOutOfRange: the id
// is not above the stream's last; CodeOverflow: the stream has given the
// last id there is; CodeTooLong, CodeWrongType.
func XAddCommand(key []byte, mode XAddIDMode, id StreamID, pairs [][]byte, trim StreamTrim, noMk bool) *Command {
	body := append([]byte{byte(mode)}, id.Bytes()...)
	c := &Command{Type: TypeStreamAdd, Key: key, Value: EncodeList(pairs), Body: append(body, trim.Encode()...)}
	if noMk {
		c.Flags = FlagStreamNoMk
	}
	return c
}

// DecodeXAdd parses an XADD's Body.
func DecodeXAdd(b []byte) (XAddIDMode, StreamID, StreamTrim, error) {
	if len(b) != 17+streamTrimLen || XAddIDMode(b[0]) >= xaddIDEnd {
		return 0, StreamID{}, StreamTrim{}, fmt.Errorf("%w: an XADD's id", ErrBadCommand)
	}
	id, _ := StreamIDOf(b[1:17])
	t, err := DecodeStreamTrim(b[17:])
	return XAddIDMode(b[0]), id, t, err
}

func checkStreamAdd(c *Command) error {
	if c.Flags&^FlagStreamNoMk != 0 {
		return errors.New("unknown XADD flags")
	}
	mode, id, _, err := DecodeXAdd(c.Body)
	if err != nil {
		return err
	}
	if mode == XAddExplicit && id.IsZero() {
		return errors.New("an XADD's id is above 0-0")
	}
	elems, err := DecodeList(c.Value)
	if err != nil || len(elems) == 0 || len(elems)%2 != 0 {
		return errors.New("an entry is fields and values, in pairs, not none")
	}
	for _, e := range elems {
		if len(e) > MaxFieldLen {
			return ErrFieldTooLong
		}
	}
	return nil
}

// XTrimCommand trims a stream (XTRIM). Result.Value is the entries
// removed, in decimal; CodeWrongType. An absent key is 0 removed.
func XTrimCommand(key []byte, trim StreamTrim) *Command {
	return &Command{Type: TypeStreamTrim, Key: key, Body: trim.Encode()}
}

func checkStreamTrim(c *Command) error {
	t, err := DecodeStreamTrim(c.Body)
	if err == nil && t.Strategy == TrimNone {
		err = errors.New("a trim is by MAXLEN or MINID")
	}
	return err
}

// XDelCommand deletes entries by id (XDEL). Result.Value is how many
// were there, in decimal; CodeWrongType.
func XDelCommand(key []byte, ids []StreamID) *Command {
	b := make([]byte, 0, 16*len(ids))
	for _, id := range ids {
		b = append(b, id.Bytes()...)
	}
	return &Command{Type: TypeStreamDel, Key: key, Body: b}
}

func checkStreamDel(c *Command) error {
	if len(c.Body) == 0 || len(c.Body)%16 != 0 || len(c.Body)/16 > MaxCmdElems {
		return errors.New("a delete's ids are 16 bytes each, not none")
	}
	return nil
}

// Flags of an XSETID: what it sets beside the last id.
const (
	FlagStreamAdded      byte = 1 << 0 // ENTRIESADDED
	FlagStreamMaxDeleted byte = 1 << 1 // MAXDELETEDID
)

// XSetIDCommand sets a stream's last id, and its entries added (added >=
// 0) and its highest deleted id (maxDel not 0-0), as XSETID does.
// CodeNotFound without the key; CodeOutOfRange with Result.Value
// naming the rule it broke (XSetIDBelow...); CodeWrongType.
func XSetIDCommand(key []byte, last StreamID, added int64, maxDel StreamID) *Command {
	c := &Command{Type: TypeStreamSetID, Key: key, Body: last.Bytes()}
	c.Body = binary.BigEndian.AppendUint64(c.Body, uint64(max(added, 0)))
	c.Body = append(c.Body, maxDel.Bytes()...)
	if added >= 0 {
		c.Flags |= FlagStreamAdded
	}
	if !maxDel.IsZero() {
		c.Flags |= FlagStreamMaxDeleted
	}
	return c
}

// The rules an XSETID or an XADD may break (Result.Value of its
// CodeOutOfRange; an XADD's id not above the top has none).
const (
	XSetIDBelowMaxDeleted = "maxdeleted" // the id is below the stream's highest deleted
	XSetIDBelowTop        = "top"        // the id is below the stream's last entry
	XSetIDAddedBelowLen   = "added"      // entries added below the length
	// XAddSeqExhausted: an XADD's ms-* whose ms's sequence is at its
	// end (Redis answers it as elements too large).
	XAddSeqExhausted = "seq"
)

// DecodeXSetID parses an XSETID's Body.
func DecodeXSetID(c *Command) (last StreamID, added int64, maxDel StreamID, err error) {
	if len(c.Body) != 40 || c.Flags&^(FlagStreamAdded|FlagStreamMaxDeleted) != 0 {
		return last, 0, maxDel, fmt.Errorf("%w: an XSETID", ErrBadCommand)
	}
	last, _ = StreamIDOf(c.Body[:16])
	maxDel, _ = StreamIDOf(c.Body[24:])
	added = -1
	if c.Flags&FlagStreamAdded != 0 {
		added = int64(binary.BigEndian.Uint64(c.Body[16:]))
	}
	if added < -1 || last.Less(maxDel) {
		return last, 0, maxDel, fmt.Errorf("%w: an XSETID", ErrBadCommand)
	}
	return last, added, maxDel, nil
}

func checkStreamSetID(c *Command) error {
	_, _, _, err := DecodeXSetID(c)
	return err
}

// StreamReadMode is what a stream read reads.
type StreamReadMode byte

// The stream reads. Each answers CodeNotFound for an absent key,
// CodeWrongType for one of another kind, else CodeOK with Result.Value
// the header (StreamHeaderLen) and then a list's encoding of what the
// mode reads.
const (
	// StreamReadRange: Body from (16), to (16), count (8, signed: < 0
	// every one); with FlagStreamRev from to back to from. The entries'
	// ids (16) and fields (a list's encoding), alternating.
	StreamReadRange StreamReadMode = iota
	// StreamReadAll: every element entry of the stream, of every tag:
	// tag (1) and key, then value, alternating (a script's sandbox is
	// given a stream so).
	StreamReadAll
	streamReadEnd
)

// FlagStreamRev: a range read backwards (XREVRANGE).
const FlagStreamRev byte = 1 << 0

// StreamRangeCommand reads the entries from from to to, both included,
// at most count of them (< 0: all; 0: none, the header alone), from the
// end with rev.
func StreamRangeCommand(key []byte, from, to StreamID, count int64, rev bool) *Command {
	body := append(from.Bytes(), to.Bytes()...)
	c := &Command{Type: TypeStreamRead, Key: key, Mode: SetMode(StreamReadRange), Body: binary.BigEndian.AppendUint64(body, uint64(count))}
	if rev {
		c.Flags = FlagStreamRev
	}
	return c
}

// StreamAllCommand reads a stream whole (StreamReadAll).
func StreamAllCommand(key []byte) *Command {
	return &Command{Type: TypeStreamRead, Key: key, Mode: SetMode(StreamReadAll)}
}

// DecodeStreamRange parses a range read's Body.
func DecodeStreamRange(b []byte) (from, to StreamID, count int64, err error) {
	if len(b) != 40 {
		return from, to, 0, fmt.Errorf("%w: a stream's range", ErrBadCommand)
	}
	from, _ = StreamIDOf(b[:16])
	to, _ = StreamIDOf(b[16:32])
	return from, to, int64(binary.BigEndian.Uint64(b[32:])), nil
}

func checkStreamRead(c *Command) error {
	switch m := StreamReadMode(c.Mode); {
	case m >= streamReadEnd:
		return errors.New("unknown stream read mode")
	case c.Flags&^FlagStreamRev != 0:
		return errors.New("unknown stream read flags")
	case m == StreamReadRange:
		_, _, _, err := DecodeStreamRange(c.Body)
		return err
	case len(c.Body) != 0 || c.Flags != 0:
		return errors.New("arguments of a whole read")
	}
	return nil
}

// StreamRead is a stream read's answer, decoded: the header and the
// pairs the mode reads (aliasing the result's value).
func StreamRead(r *Result) (StreamHeader, [][]byte, error) {
	h, ok := DecodeStreamHeader(r.Value)
	if !ok {
		return h, nil, fmt.Errorf("%w: a stream's header", ErrBadCommand)
	}
	pairs, err := DecodeElems(r.Value[StreamHeaderLen:])
	if err != nil || len(pairs)%2 != 0 {
		return h, nil, fmt.Errorf("%w: a stream read's entries", ErrBadCommand)
	}
	return h, pairs, nil
}
