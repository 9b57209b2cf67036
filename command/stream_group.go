package command

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A stream's consumer groups (Redis 7.0's XGROUP, XREADGROUP, XACK,
// XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS and CONSUMERS). A group's
// state lives in the element bucket under the stream's id, beside the
// stream's entries, so every way the stream's key goes (DEL, expiry, an
// overwrite, FLUSH) takes its groups with it, RENAME leaves them where
// they are, and COPY copies them, as Redis's do:
//
//	group:        id | 4 (TagStreamGroup)    | name                        ->  GroupRecord
//	group PEL:    id | 5 (TagStreamPending)  | gid (8) | ms (8) | seq (8)   ->  PendingEntry
//	consumer:     id | 6 (TagStreamConsumer) | gid (8) | name              ->  ConsumerRecord
//	consumer PEL: id | 7 (TagConsumerPending) | gid (8) | len (2) | name | ms (8) | seq (8)  ->  ""
//
// gid is the revision that created the group (GroupRecord.GID): a group
// destroyed and made again under its name starts with nothing. Names are
// bbolt keys, so they sort as Redis's radix trees sort them (by bytes):
// XINFO GROUPS and CONSUMERS list them in Redis's order, and a PEL walk
// is in id order. A pending entry is in both PELs, as in Redis: the
// group's answers XPENDING and XCLAIM, the consumer's XREADGROUP's
// history and XPENDING of one consumer.
//
// Times (a delivery's, a consumer's last seen) are the state machine's
// clock in milliseconds (the entry's replicated stamp), never a node's:
// every replica stores the same PEL. A read's idle time is its node's
// read clock minus that.
//
// The stream's header counts its groups (StreamHeader.Groups, XINFO
// STREAM's "groups"): CREATE and DESTROY write it; the other group
// commands change the groups' entries only, never the header.

// TagConsumerPending is the tag of the consumers' PELs (the stream's
// spare group tag, TagStreamSpare).
const TagConsumerPending = TagStreamSpare

// appendID appends id's 16 bytes to b.
func appendID(b []byte, id StreamID) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(b, id.Ms), id.Seq)
}

// InvalidEntriesRead is a group's entries-read when it is not known
// (Redis's SCG_INVALID_ENTRIES_READ).
const InvalidEntriesRead = -1

// GroupRecord is a group's element value.
type GroupRecord struct {
	Last        StreamID // last-delivered-id
	EntriesRead int64    // InvalidEntriesRead: unknown
	GID         uint64   // the revision that created it: its PELs' and consumers' prefix
	Pending     uint64   // its PEL's entries
	Consumers   uint64
}

// groupRecordLen is an encoded GroupRecord's length.
const groupRecordLen = 48

// Encode is r as stored.
func (r GroupRecord) Encode() []byte {
	b := appendID(make([]byte, 0, groupRecordLen), r.Last)
	b = binary.BigEndian.AppendUint64(b, uint64(r.EntriesRead))
	b = binary.BigEndian.AppendUint64(b, r.GID)
	b = binary.BigEndian.AppendUint64(b, r.Pending)
	return binary.BigEndian.AppendUint64(b, r.Consumers)
}

// DecodeGroupRecord parses Encode.
func DecodeGroupRecord(v []byte) (GroupRecord, bool) {
	if len(v) != groupRecordLen {
		return GroupRecord{}, false
	}
	last, _ := StreamIDOf(v[:16])
	return GroupRecord{Last: last, EntriesRead: int64(binary.BigEndian.Uint64(v[16:])), GID: binary.BigEndian.Uint64(v[24:]),
		Pending: binary.BigEndian.Uint64(v[32:]), Consumers: binary.BigEndian.Uint64(v[40:])}, true
}

// PendingEntry is a group PEL entry's value: who holds it, since when
// (ms of the state machine's clock) and how often it was delivered.
type PendingEntry struct {
	Delivered int64
	Count     uint64
	Consumer  []byte
}

// Encode is p as stored.
func (p PendingEntry) Encode() []byte {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 16+len(p.Consumer)), uint64(p.Delivered))
	b = binary.BigEndian.AppendUint64(b, p.Count)
	return append(b, p.Consumer...)
}

// DecodePendingEntry parses Encode; Consumer aliases v.
func DecodePendingEntry(v []byte) (PendingEntry, bool) {
	if len(v) < 16 {
		return PendingEntry{}, false
	}
	return PendingEntry{Delivered: int64(binary.BigEndian.Uint64(v)), Count: binary.BigEndian.Uint64(v[8:]), Consumer: v[16:]}, true
}

// ConsumerRecord is a consumer's element value: when it was last seen
// (ms) and how many entries it holds.
type ConsumerRecord struct {
	Seen    int64
	Pending uint64
}

// Encode is r as stored.
func (r ConsumerRecord) Encode() []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(make([]byte, 0, 16), uint64(r.Seen)), r.Pending)
}

// DecodeConsumerRecord parses Encode.
func DecodeConsumerRecord(v []byte) (ConsumerRecord, bool) {
	if len(v) != 16 {
		return ConsumerRecord{}, false
	}
	return ConsumerRecord{Seen: int64(binary.BigEndian.Uint64(v)), Pending: binary.BigEndian.Uint64(v[8:])}, true
}

// The keys of a group's entries within their tags (the stream's id and
// the tag before them are the tagged element functions'): a PEL entry's
// (TagStreamPending) is its group's gid and the id, so a group's PEL is
// in id order; a consumer's (TagStreamConsumer) its group's gid and its
// name; a consumer's PEL entry's (TagConsumerPending) its group's gid,
// its name's length and name, and the id. A group's (TagStreamGroup) is
// its name.

// GroupPendingKey is an entry's key in a group's PEL.
func GroupPendingKey(gid uint64, id StreamID) []byte { return appendID(GroupPrefix(gid), id) }

// GroupPrefix is the prefix of a group's PEL and of its consumers.
func GroupPrefix(gid uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 24), gid) }

// ConsumerKey is a consumer's key.
func ConsumerKey(gid uint64, name []byte) []byte { return append(GroupPrefix(gid), name...) }

// ConsumerPendingPrefix is the prefix of a consumer's PEL; with name
// nil, of every consumer's of the group.
func ConsumerPendingPrefix(gid uint64, name []byte) []byte {
	b := GroupPrefix(gid)
	if name == nil {
		return b
	}
	return append(binary.BigEndian.AppendUint16(b, uint16(len(name))), name...)
}

// ConsumerPendingKey is an entry's key in a consumer's PEL.
func ConsumerPendingKey(gid uint64, name []byte, id StreamID) []byte {
	return appendID(ConsumerPendingPrefix(gid, name), id)
}

// GroupOp is what a TypeStreamGroup or TypeStreamGroupRead command does
// (its Mode).
type GroupOp byte

// The group writes (TypeStreamGroup).
const (
	GroupCreate GroupOp = iota
	GroupSetID
	GroupDestroy
	GroupCreateConsumer
	GroupDelConsumer
	GroupRead // XREADGROUP
	GroupAck
	GroupClaim
	GroupAutoClaim
	groupWriteEnd
)

// The group reads (TypeStreamGroupRead).
const (
	GroupPendingSummary GroupOp = iota
	GroupPendingRange
	GroupInfoGroups
	GroupInfoConsumers
	// GroupInfoFull: the groups part of XINFO STREAM FULL.
	GroupInfoFull
	groupReadEnd
)

// Group flags (GroupArgs.Flags).
const (
	GroupMkStream    uint16 = 1 << iota // CREATE: make an empty stream when there is none
	GroupLastID                         // CREATE, SETID: the id is the stream's last ("$")
	GroupBadID                          // an argument did not parse: refused (GroupBadIDs) after the key's and the group's checks
	GroupNoAck                          // XREADGROUP NOACK
	GroupJustID                         // XCLAIM, XAUTOCLAIM JUSTID
	GroupForce                          // XCLAIM FORCE
	GroupIdle                           // XCLAIM IDLE: Time is an idle time
	GroupTime                           // XCLAIM TIME: Time is a unix time
	GroupSetLast                        // XCLAIM LASTID: ID
	GroupEntriesRead                    // CREATE, SETID ENTRIESREAD: EntriesRead
	groupFlagsEnd
)

// GroupArgs are a group command's arguments (its Body): the fields its
// op reads, the others zero.
type GroupArgs struct {
	Group, Consumer []byte
	// ID: CREATE's and SETID's id, XCLAIM's LASTID, XAUTOCLAIM's and
	// XPENDING's start; End: XPENDING's end.
	ID, End StreamID
	// IDs: XACK's and XCLAIM's; XREADGROUP's, one per key (MaxStreamID:
	// ">").
	IDs []StreamID
	// Count: XREADGROUP's (0: all), XAUTOCLAIM's, XPENDING's, XINFO
	// FULL's (0: all).
	Count int64
	// MinIdle: XCLAIM's, XAUTOCLAIM's, XPENDING's IDLE, in ms.
	MinIdle int64
	// Time: XCLAIM's IDLE or TIME, in ms; Retry its RETRYCOUNT (-1: none).
	Time, Retry int64
	EntriesRead int64
	// BadAt: with GroupBadID, XREADGROUP's key whose id did not parse
	// (the keys before it, and it, are checked first, as Redis does).
	BadAt int64
	Flags uint16
}

// Encode is a as a command's Body.
func (a GroupArgs) Encode() []byte {
	b := appendBytes(nil, a.Group)
	b = appendBytes(b, a.Consumer)
	b = appendID(appendID(b, a.ID), a.End)
	b = binary.AppendUvarint(b, uint64(len(a.IDs)))
	for _, id := range a.IDs {
		b = appendID(b, id)
	}
	for _, n := range []int64{a.Count, a.MinIdle, a.Time, a.Retry, a.EntriesRead, a.BadAt} {
		b = binary.AppendVarint(b, n)
	}
	return binary.BigEndian.AppendUint16(b, a.Flags)
}

// DecodeGroupArgs parses Encode; the names alias v.
func DecodeGroupArgs(v []byte) (GroupArgs, error) {
	r := reader{b: v}
	var a GroupArgs
	a.Group, a.Consumer = r.bytes(), r.bytes()
	var id [32]byte
	r.fixed(id[:])
	a.ID, _ = StreamIDOf(id[:16])
	a.End, _ = StreamIDOf(id[16:])
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/16) {
		r.fail("ids")
	}
	if r.err == nil && n > 0 {
		a.IDs = make([]StreamID, n)
		for i := range a.IDs {
			r.fixed(id[:16])
			a.IDs[i], _ = StreamIDOf(id[:16])
		}
	}
	for _, p := range []*int64{&a.Count, &a.MinIdle, &a.Time, &a.Retry, &a.EntriesRead, &a.BadAt} {
		*p = r.varint()
	}
	if len(r.b) == 2 {
		a.Flags = binary.BigEndian.Uint16(r.b)
		r.b = nil
	} else {
		r.fail("flags")
	}
	if r.err != nil {
		return a, fmt.Errorf("%w: a group command's arguments: %v", ErrBadCommand, r.err)
	}
	return a, nil
}

// MaxGroupName bounds a group's and a consumer's name (each is a bbolt
// key's part; Redis has no bound).
const MaxGroupName = MaxFieldLen

// MaxGroupReply bounds the entries' bytes one XREADGROUP, XCLAIM or
// XAUTOCLAIM answers (an answer crosses the forwarding hop, whose frames
// are bounded): past it, the entries that would follow are neither
// delivered nor claimed, and stay as they are for the next call.
const MaxGroupReply = 4 << 20

// ErrGroupNameTooLong is the bound's error.
var ErrGroupNameTooLong = fmt.Errorf("consumer group or consumer name too long: at most %d bytes", MaxGroupName)

// The refusals a group command answers in Result.Value with
// CodeWrongState, after its key's index (Num: XREADGROUP's keys are
// many; else 0).
const (
	GroupNoKey   byte = 1 // the stream is not there
	GroupNoGroup byte = 2 // the group is not there
	GroupBadIDs  byte = 3 // GroupBadID: the checks passed, the id is the refusal
)

func checkStreamGroup(c *Command) error {
	op := GroupOp(c.Mode)
	if op >= groupWriteEnd {
		return errors.New("unknown group op")
	}
	if len(c.Value) != 0 && op != GroupRead {
		return errors.New("further keys of a one-key group command")
	}
	a, err := checkGroupArgs(c)
	if err != nil {
		return err
	}
	switch op {
	case GroupRead:
		keys, err := DecodeList(c.Value)
		if err != nil {
			return errors.New("further keys are a list's encoding")
		}
		if len(a.IDs) != len(keys)+1 {
			return errors.New("an id per key")
		}
		return checkMoreKeys(c.Value)
	case GroupAck:
		if len(a.IDs) == 0 {
			return errors.New("ids to ack")
		}
	case GroupAutoClaim:
		if a.Count < 1 {
			return errors.New("an autoclaim's count is positive")
		}
	}
	return nil
}

func checkStreamGroupRead(c *Command) error {
	if GroupOp(c.Mode) >= groupReadEnd {
		return errors.New("unknown group read")
	}
	_, err := checkGroupArgs(c)
	return err
}

func checkGroupArgs(c *Command) (GroupArgs, error) {
	a, err := DecodeGroupArgs(c.Body)
	switch {
	case err != nil:
		return a, err
	case len(a.Group) > MaxGroupName || len(a.Consumer) > MaxGroupName:
		return a, ErrGroupNameTooLong
	case a.Flags >= groupFlagsEnd:
		return a, errors.New("unknown group flags")
	case a.Count < 0:
		return a, errors.New("a negative count")
	}
	return a, nil
}

// StreamGroupCommand is a write of a stream's groups (op below
// groupWriteEnd) on key; keys are XREADGROUP's further streams.
// Result: CodeOK with the op's answer in Value (GroupResult and friends
// say its encoding); CodeWrongState with a refusal (GroupNoKey, ...);
// CodeExists: CREATE of a group there (BUSYGROUP); CodeNotFound:
// XREADGROUP served nothing (its Version the first stream's); CodeWrongType.
func StreamGroupCommand(key []byte, keys [][]byte, op GroupOp, a GroupArgs) *Command {
	c := &Command{Type: TypeStreamGroup, Key: key, Mode: SetMode(op), Body: a.Encode()}
	if op == GroupRead {
		c.Value = EncodeList(keys)
	}
	return c
}

// StreamGroupReadCommand is a read of a stream's groups (XPENDING, XINFO
// GROUPS and CONSUMERS, the groups of XINFO STREAM FULL). Result: CodeOK
// with its answer; CodeWrongState with a refusal; CodeWrongType.
func StreamGroupReadCommand(key []byte, op GroupOp, a GroupArgs) *Command {
	return &Command{Type: TypeStreamGroupRead, Key: key, Mode: SetMode(op), Body: a.Encode()}
}

// A group command's answer is a tree of lists (EncodeList), the leaves
// ids (16 bytes), numbers (8, big-endian) and names: Tree builds one,
// DecodeTree reads it.

// GroupEntry is one stream entry in an answer: its id and its fields
// and values (nil: deleted from the stream, still pending).
type GroupEntry struct {
	ID     StreamID
	Fields [][]byte
}

// EncodeGroupEntries encodes entries as a list: each an id, then a
// marker (1: there, 0: deleted), then its fields' list.
func EncodeGroupEntries(es []GroupEntry) []byte {
	b := binary.AppendUvarint(nil, uint64(len(es)))
	for _, e := range es {
		b = appendID(b, e.ID)
		if e.Fields == nil {
			b = append(b, 0)
			continue
		}
		b = append(b, 1)
		b = appendBytes(b, EncodeList(e.Fields))
	}
	return b
}

// DecodeGroupEntries parses EncodeGroupEntries; the fields alias v.
func DecodeGroupEntries(v []byte) ([]GroupEntry, error) {
	r := reader{b: v}
	n := r.uvarint()
	if r.err == nil && n > uint64(len(r.b)/17) {
		r.fail("entries")
	}
	out := make([]GroupEntry, 0, n)
	var id [16]byte
	for i := uint64(0); i < n && r.err == nil; i++ {
		r.fixed(id[:])
		e := GroupEntry{}
		e.ID, _ = StreamIDOf(id[:])
		if r.byte() == 1 {
			f, err := DecodeList(r.bytes())
			if err != nil {
				r.fail("fields")
			}
			e.Fields = f
			if e.Fields == nil {
				e.Fields = [][]byte{}
			}
		}
		out = append(out, e)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, fmt.Errorf("%w: a group's entries", ErrBadCommand)
	}
	return out, nil
}

// Num is n as an answer's 8-byte leaf.
func Num(n int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(n)) }

// NumOf reads Num (0 when b is not 8 bytes).
func NumOf(b []byte) int64 {
	if len(b) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(b))
}
