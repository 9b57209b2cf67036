package fsm

import (
	"bytes"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// A stream's consumer groups (package command's stream_group.go): each
// command reads its stream through stream_group_stream.go, then reads and
// writes only the groups' elements it names, with Redis 7.0's
// t_stream.c semantics. Every time stored is the entry's clock in ms
// (a.now), so the replicas store the same state.

// groupTx is one command's view of one stream's groups: the consumers
// it touched, written back by flush.
type groupTx struct {
	a         *applier
	tx        *bolt.Tx
	b         *bolt.Bucket
	s         groupStream
	now       int64 // ms
	consumers map[string]*consumerState
}

// consumerState is a consumer a command read or made.
type consumerState struct {
	gid     uint64
	name    []byte
	rec     command.ConsumerRecord
	changed bool
}

func (a *applier) groupsOf(tx *bolt.Tx, s groupStream) *groupTx {
	return &groupTx{a: a, tx: tx, b: tx.Bucket(bucketElems), s: s, now: a.now / 1e6, consumers: map[string]*consumerState{}}
}

// get is the value at k, copied; false when there is none.
func (g *groupTx) get(k []byte) ([]byte, bool) {
	ek, v := g.b.Cursor().Seek(k)
	if !bytes.Equal(ek, k) {
		return nil, false
	}
	return clone(v), true
}

func (g *groupTx) group(name []byte) (command.GroupRecord, bool, error) {
	v, ok := g.get(command.GroupKey(g.s.sid, name))
	if !ok {
		return command.GroupRecord{}, false, nil
	}
	r, ok := command.DecodeGroupRecord(v)
	if !ok {
		return r, false, command.ErrStorage
	}
	return r, true, nil
}

func (g *groupTx) putGroup(name []byte, r command.GroupRecord) error {
	return g.b.Put(command.GroupKey(g.s.sid, name), r.Encode())
}

// consumer is the group's consumer name: nil when there is none and
// create is false. A consumer looked up with seen true is seen now (Redis's
// streamLookupConsumer without SLC_NO_REFRESH); one made is seen now.
func (g *groupTx) consumer(gr *command.GroupRecord, name []byte, create, seen bool) (*consumerState, error) {
	k := string(command.ConsumerKey(g.s.sid, gr.GID, name))
	c := g.consumers[k]
	if c == nil {
		v, ok := g.get([]byte(k))
		switch {
		case !ok && !create:
			return nil, nil
		case !ok:
			c = &consumerState{gid: gr.GID, name: clone(name), rec: command.ConsumerRecord{Seen: g.now}, changed: true}
			gr.Consumers++
		default:
			rec, ok := command.DecodeConsumerRecord(v)
			if !ok {
				return nil, command.ErrStorage
			}
			c = &consumerState{gid: gr.GID, name: clone(name), rec: rec}
		}
		g.consumers[k] = c
	}
	if seen && c.rec.Seen != g.now {
		c.rec.Seen, c.changed = g.now, true
	}
	return c, nil
}

// flush writes the consumers changed.
func (g *groupTx) flush() error {
	for k, c := range g.consumers {
		if c.changed {
			if err := g.b.Put([]byte(k), c.rec.Encode()); err != nil {
				return err
			}
			c.changed = false
		}
	}
	return nil
}

func (g *groupTx) pending(gr command.GroupRecord, id command.EntryID) (command.PendingEntry, bool, error) {
	v, ok := g.get(command.GroupPendingKey(g.s.sid, gr.GID, id))
	if !ok {
		return command.PendingEntry{}, false, nil
	}
	p, ok := command.DecodePendingEntry(v)
	if !ok {
		return p, false, command.ErrStorage
	}
	return p, true, nil
}

// assign makes id pending for consumer c, delivered at and count times:
// an entry pending for another consumer (or for none: XCLAIM FORCE's)
// moves to c.
func (g *groupTx) assign(gr *command.GroupRecord, id command.EntryID, old *command.PendingEntry, c *consumerState, at int64, count uint64) error {
	if old == nil {
		gr.Pending++
	}
	if old == nil || !bytes.Equal(old.Consumer, c.name) {
		if old != nil && old.Consumer != nil {
			if err := g.unholdBy(gr, old.Consumer, id); err != nil {
				return err
			}
		}
		if err := g.b.Put(command.ConsumerPendingKey(g.s.sid, gr.GID, c.name, id), []byte{}); err != nil {
			return err
		}
		c.rec.Pending++
		c.changed = true
	}
	return g.b.Put(command.GroupPendingKey(g.s.sid, gr.GID, id), command.PendingEntry{Delivered: at, Count: count, Consumer: c.name}.Encode())
}

// unholdBy takes id out of consumer name's PEL.
func (g *groupTx) unholdBy(gr *command.GroupRecord, name []byte, id command.EntryID) error {
	c, err := g.consumer(gr, name, false, false)
	if err != nil {
		return err
	}
	if c != nil {
		c.rec.Pending--
		c.changed = true
	}
	return g.b.Delete(command.ConsumerPendingKey(g.s.sid, gr.GID, name, id))
}

// unpend takes id out of the group's PEL and its consumer's.
func (g *groupTx) unpend(gr *command.GroupRecord, id command.EntryID, p command.PendingEntry) error {
	gr.Pending--
	if err := g.unholdBy(gr, p.Consumer, id); err != nil {
		return err
	}
	return g.b.Delete(command.GroupPendingKey(g.s.sid, gr.GID, id))
}

// walk calls fn with the keys and values under prefix from from on (nil:
// its start), until fn returns false; fn must not write.
func (g *groupTx) walk(prefix, from []byte, fn func(k, v []byte) bool) {
	if from == nil {
		from = prefix
	}
	c := g.b.Cursor()
	for k, v := c.Seek(from); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		if !fn(k, v) {
			return
		}
	}
}

// dropPrefix deletes every key under prefix, in chunks as dropElems does.
func (g *groupTx) dropPrefix(prefix []byte) (int, error) {
	n := 0
	for {
		var keys [][]byte
		g.walk(prefix, nil, func(k, _ []byte) bool {
			keys = append(keys, clone(k))
			return len(keys) < dropChunk
		})
		for _, k := range keys {
			if err := g.b.Delete(k); err != nil {
				return n, err
			}
		}
		n += len(keys)
		if len(keys) < dropChunk {
			return n, nil
		}
	}
}

// refused is a group command's refusal (command.GroupNoKey, ...), of its
// key at index i.
func refused(i int, why byte) *command.Result {
	return &command.Result{Code: command.CodeWrongState, Value: []byte{byte(i), why}}
}

func stored(err error) *command.Result {
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return nil
}

// streamGroup applies a group write (command.GroupOp).
func (a *applier) streamGroup(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	args, err := command.DecodeGroupArgs(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	op := command.GroupOp(c.Mode)
	if op == command.GroupRead {
		return a.readGroup(tx, c, args)
	}
	s, exists, code := a.groupStreamOf(tx, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists && op == command.GroupAck:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	case !exists && (op == command.GroupClaim || op == command.GroupAutoClaim):
		return refused(0, command.GroupNoGroup)
	case !exists && (op != command.GroupCreate || args.Flags&command.GroupMkStream == 0):
		return refused(0, command.GroupNoKey)
	}
	if op == command.GroupCreate {
		return a.createGroup(tx, c.Key, s, exists, args, rev)
	}
	g := a.groupsOf(tx, s)
	gr, ok, err := g.group(args.Group)
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case !ok && op == command.GroupDestroy:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	case !ok && op == command.GroupAck:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	case !ok:
		return refused(0, command.GroupNoGroup)
	case args.Flags&command.GroupBadID != 0 && op != command.GroupDestroy:
		return refused(0, command.GroupBadIDs)
	}
	var out []byte
	switch op {
	case command.GroupSetID:
		gr.Last, gr.EntriesRead = args.ID, command.InvalidEntriesRead
		if args.Flags&command.GroupLastID != 0 {
			gr.Last = s.last
		}
		if args.Flags&command.GroupEntriesRead != 0 {
			gr.EntriesRead = args.EntriesRead
		}
		out = []byte("OK")
	case command.GroupDestroy:
		return a.destroyGroup(g, args.Group, gr)
	case command.GroupCreateConsumer:
		before := gr.Consumers
		if _, err := g.consumer(&gr, args.Consumer, true, false); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		out = []byte(strconv.FormatUint(gr.Consumers-before, 10))
	case command.GroupDelConsumer:
		n, err := g.delConsumer(&gr, args.Consumer)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		out = strconv.AppendUint(nil, n, 10)
	case command.GroupAck:
		n := 0
		for _, id := range args.IDs {
			p, ok, err := g.pending(gr, id)
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
			if ok {
				if err := g.unpend(&gr, id, p); err != nil {
					return &command.Result{Code: command.CodeStorage}
				}
				n++
			}
		}
		out = strconv.AppendInt(nil, int64(n), 10)
	case command.GroupClaim:
		if out, err = g.claim(&gr, args); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	case command.GroupAutoClaim:
		if out, err = g.autoClaim(&gr, args); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	default:
		return &command.Result{Code: command.CodeBadCommand}
	}
	if r := stored(g.flush()); r != nil {
		return r
	}
	if r := stored(g.putGroup(args.Group, gr)); r != nil {
		return r
	}
	return &command.Result{Code: command.CodeOK, Version: s.e.Version, Value: out}
}

// createGroup is XGROUP CREATE: after the key's checks, the id's.
func (a *applier) createGroup(tx *bolt.Tx, key []byte, s groupStream, exists bool, args command.GroupArgs, rev uint64) *command.Result {
	if args.Flags&command.GroupBadID != 0 {
		return refused(0, command.GroupBadIDs)
	}
	id := args.ID
	if args.Flags&command.GroupLastID != 0 {
		id = s.last // an absent stream's: 0-0
	}
	if !exists {
		var code command.Code
		if s, code = a.makeGroupStream(tx, key, rev); code != command.CodeOK {
			return &command.Result{Code: code}
		}
	}
	g := a.groupsOf(tx, s)
	if _, there, err := g.group(args.Group); err != nil || there {
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		return &command.Result{Code: command.CodeExists, Version: s.e.Version}
	}
	er := int64(command.InvalidEntriesRead)
	if args.Flags&command.GroupEntriesRead != 0 {
		er = args.EntriesRead
	}
	if r := stored(g.putGroup(args.Group, command.GroupRecord{Last: id, EntriesRead: er, GID: rev})); r != nil {
		return r
	}
	return &command.Result{Code: command.CodeOK, Version: s.e.Version, Value: []byte("OK")}
}

// destroyGroup is XGROUP DESTROY of a group there: its PELs and
// consumers go with it.
func (a *applier) destroyGroup(g *groupTx, name []byte, gr command.GroupRecord) *command.Result {
	for _, p := range [][]byte{command.GroupPendingPrefix(g.s.sid, gr.GID), command.ConsumerPrefix(g.s.sid, gr.GID),
		command.ConsumerPendingPrefix(g.s.sid, gr.GID, nil)} {
		if _, err := g.dropPrefix(p); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	if r := stored(g.b.Delete(command.GroupKey(g.s.sid, name))); r != nil {
		return r
	}
	return &command.Result{Code: command.CodeOK, Version: g.s.e.Version, Value: []byte("1")}
}

// delConsumer is XGROUP DELCONSUMER: the consumer's pending entries leave
// the group's PEL too; how many they were.
func (g *groupTx) delConsumer(gr *command.GroupRecord, name []byte) (uint64, error) {
	k := command.ConsumerKey(g.s.sid, gr.GID, name)
	if _, ok := g.get(k); !ok {
		return 0, nil
	}
	prefix := command.ConsumerPendingPrefix(g.s.sid, gr.GID, name)
	for {
		var ids []command.EntryID
		g.walk(prefix, nil, func(k, _ []byte) bool {
			id, _ := command.EntryIDFrom(k[len(prefix):])
			ids = append(ids, id)
			return len(ids) < dropChunk
		})
		for _, id := range ids {
			if g.b.Delete(command.GroupPendingKey(g.s.sid, gr.GID, id)) != nil || g.b.Delete(command.ConsumerPendingKey(g.s.sid, gr.GID, name, id)) != nil {
				return 0, command.ErrStorage
			}
		}
		gr.Pending -= uint64(len(ids))
		if len(ids) < dropChunk {
			break
		}
	}
	v, _ := g.get(k)
	rec, _ := command.DecodeConsumerRecord(v)
	delete(g.consumers, string(k))
	gr.Consumers--
	return rec.Pending, g.b.Delete(k)
}

// claim is XCLAIM (t_stream.c's xclaimCommand): the answer is the
// entries claimed (or their ids, JUSTID).
func (g *groupTx) claim(gr *command.GroupRecord, a command.GroupArgs) ([]byte, error) {
	minIdle := max(a.MinIdle, 0)
	if a.Flags&command.GroupSetLast != 0 && a.ID.Compare(gr.Last) > 0 {
		gr.Last = a.ID
	}
	at := g.now
	switch {
	case a.Flags&command.GroupIdle != 0:
		at = g.now - a.Time
	case a.Flags&command.GroupTime != 0:
		at = a.Time
	}
	if at < 0 || at > g.now {
		at = g.now
	}
	justID := a.Flags&command.GroupJustID != 0
	var out []command.GroupEntry
	var c *consumerState
	budget := command.MaxGroupReply
	for _, id := range a.IDs {
		p, ok, err := g.pending(*gr, id)
		if err != nil {
			return nil, err
		}
		f, there := g.s.entry(g.tx, id)
		if !there {
			if ok {
				if err := g.unpend(gr, id, p); err != nil {
					return nil, err
				}
			}
			continue
		}
		var old *command.PendingEntry
		count := p.Count
		switch {
		case ok:
			old = &p
			if minIdle > 0 && g.now-p.Delivered < minIdle {
				continue
			}
		case a.Flags&command.GroupForce != 0:
			// A PEL entry of no consumer yet, delivered once (Redis's
			// streamCreateNACK(NULL)); its idle time is not checked.
			count = 1
		default:
			continue
		}
		e := command.GroupEntry{ID: id}
		if !justID {
			if e.Fields = f; e.Fields == nil {
				e.Fields = [][]byte{}
			}
			if budget -= entryBytes(e); budget < 0 && len(out) > 0 {
				break
			}
		}
		if c == nil {
			if c, err = g.consumer(gr, a.Consumer, true, true); err != nil {
				return nil, err
			}
		}
		switch {
		case a.Retry >= 0:
			count = uint64(a.Retry)
		case !justID:
			count++
		}
		if err := g.assign(gr, id, old, c, at, count); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return command.EncodeGroupEntries(out), nil
}

// autoClaim is XAUTOCLAIM (t_stream.c's xautoclaimCommand, 7.0): a walk
// of the group's PEL from the start id, up to count entries claimed (or
// found deleted) in count*10 looked at. The answer: the next start (0-0:
// the walk reached the end), the entries claimed, the ids deleted.
func (g *groupTx) autoClaim(gr *command.GroupRecord, a command.GroupArgs) ([]byte, error) {
	minIdle := max(a.MinIdle, 0)
	count, attempts := a.Count, a.Count*10
	justID := a.Flags&command.GroupJustID != 0
	prefix := command.GroupPendingPrefix(g.s.sid, gr.GID)
	var out []command.GroupEntry
	var deleted []byte
	var c *consumerState
	budget := command.MaxGroupReply
	from, last, visited := a.ID, command.EntryID{}, false
	for ; attempts > 0 && count > 0; attempts-- {
		var id command.EntryID
		var p command.PendingEntry
		found, bad := false, false
		g.walk(prefix, command.GroupPendingKey(g.s.sid, gr.GID, from), func(k, v []byte) bool {
			id, _ = command.EntryIDFrom(k[len(prefix):])
			p, bad = command.DecodePendingEntry(clone(v))
			bad, found = !bad, true
			return false
		})
		if bad {
			return nil, command.ErrStorage
		}
		if !found {
			break
		}
		f, there := g.s.entry(g.tx, id)
		e := command.GroupEntry{ID: id, Fields: f}
		if there && !justID && (minIdle == 0 || g.now-p.Delivered >= minIdle) {
			if e.Fields == nil {
				e.Fields = [][]byte{}
			}
			if budget -= entryBytes(e); budget < 0 && len(out) > 0 {
				break // the cursor is this entry's id
			}
		}
		last, visited = id, true
		next, more := id.Next()
		if !there {
			if err := g.unpend(gr, id, p); err != nil {
				return nil, err
			}
			deleted = id.Append(deleted)
			count--
		} else if minIdle == 0 || g.now-p.Delivered >= minIdle {
			if c == nil {
				var err error
				if c, err = g.consumer(gr, a.Consumer, true, true); err != nil {
					return nil, err
				}
			}
			n := p.Count
			if !justID {
				n++
			}
			if err := g.assign(gr, id, &p, c, g.now, n); err != nil {
				return nil, err
			}
			if justID {
				e.Fields = nil
			}
			out = append(out, e)
			count--
		}
		if !more {
			break
		}
		from = next
	}
	var cursor command.EntryID
	if visited {
		if next, more := last.Next(); more {
			g.walk(prefix, command.GroupPendingKey(g.s.sid, gr.GID, next), func(k, _ []byte) bool {
				cursor, _ = command.EntryIDFrom(k[len(prefix):])
				return false
			})
		}
	}
	return command.EncodeList([][]byte{cursor.Bytes(), command.EncodeGroupEntries(out), deleted}), nil
}

// The applier's rows of this file's commands (commands.go joins them).
var streamGroupApplies = applies{
	command.TypeStreamGroup:     {remembered: true, apply: (*applier).streamGroup},
	command.TypeStreamGroupRead: {apply: (*applier).streamGroupRead},
}
