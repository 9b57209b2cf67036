package fsm

import (
	"bytes"
	"slices"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// A stream's consumer groups (package command's stream_group.go): each
// command reads its stream through stream_group_stream.go, then reads and
// writes only the groups' elements it names, with Redis 7.0's
// t_stream.c semantics. Every time stored is the entry's clock in ms
// (a.now), so the replicas store the same state.

// groupTx is one command's view of one stream's groups: the stream's
// header, and the consumers it touched, written back by flush.
type groupTx struct {
	a         *applier
	kv        kvStore
	key       []byte
	e         command.KVEntry
	h         command.StreamHeader
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

// groupsOf is the groups of key's stream: exists false when there is
// none, CodeWrongType when key holds another kind.
func (a *applier) groupsOf(kv kvStore, key []byte) (g *groupTx, exists bool, code command.Code) {
	e, h, exists, code := a.streamOf(kv, key)
	return &groupTx{a: a, kv: kv, key: key, e: e, h: h, now: a.now / 1e6, consumers: map[string]*consumerState{}}, exists, code
}

// get is the value at k of tag, copied; false when there is none.
func (g *groupTx) get(tag byte, k []byte) ([]byte, bool) {
	v, ok := g.kv.tagGet(g.key, g.h.CollHeader, tag, k)
	return clone(v), ok
}

func (g *groupTx) put(tag byte, k, v []byte) error {
	return g.kv.tagPut(g.key, g.h.CollHeader, tag, k, v)
}

func (g *groupTx) del(tag byte, k []byte) error { return g.kv.tagDel(g.key, g.h.CollHeader, tag, k) }

// walk calls fn with the keys and values of tag under prefix from from on
// (nil: the prefix's first), until fn returns false; fn must not write.
func (g *groupTx) walk(tag byte, prefix, from []byte, fn func(k, v []byte) bool) error {
	if from == nil {
		from = prefix
	}
	return g.kv.tagWalk(g.key, g.h.CollHeader, tag, from, false, func(k, v []byte) bool {
		return bytes.HasPrefix(k, prefix) && fn(k, v)
	})
}

// entry is the stream's entry id's fields and values, copied; false when
// it is not there.
func (g *groupTx) entry(id command.StreamID) ([][]byte, bool) {
	v, ok := streamEntry(g.kv, g.key, g.h, id)
	if !ok {
		return nil, false
	}
	f, err := command.DecodeList(v)
	if err != nil {
		return nil, false
	}
	out := make([][]byte, len(f))
	for i := range f {
		out[i] = clone(f[i])
		if out[i] == nil {
			out[i] = []byte{}
		}
	}
	return out, true
}

// lastValid is the last entry's id there (Redis's streamLastValidID).
func (g *groupTx) lastValid() command.StreamID {
	var last command.StreamID
	_ = g.kv.tagWalk(g.key, g.h.CollHeader, command.TagStreamEntry, nil, true, func(k, _ []byte) bool {
		last, _ = command.StreamIDOf(k)
		return false
	})
	return last
}

func (g *groupTx) group(name []byte) (command.GroupRecord, bool, error) {
	v, ok := g.get(command.TagStreamGroup, name)
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
	return g.put(command.TagStreamGroup, name, r.Encode())
}

// consumer is the group's consumer name: nil when there is none and
// create is false. A consumer looked up with seen true is seen now
// (Redis's streamLookupConsumer without SLC_NO_REFRESH); one made is seen
// now.
func (g *groupTx) consumer(gr *command.GroupRecord, name []byte, create, seen bool) (*consumerState, error) {
	k := string(command.ConsumerKey(gr.GID, name))
	c := g.consumers[k]
	if c == nil {
		v, ok := g.get(command.TagStreamConsumer, []byte(k))
		switch {
		case !ok && !create:
			return nil, nil
		case !ok:
			c = &consumerState{gid: gr.GID, name: clone(name), rec: command.ConsumerRecord{Seen: g.now}, changed: true}
			if c.name == nil {
				c.name = []byte{}
			}
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

// flush writes the consumers changed, in their keys' order (a sandbox
// and a batch see the same writes).
func (g *groupTx) flush() error {
	keys := make([]string, 0, len(g.consumers))
	for k, c := range g.consumers {
		if c.changed {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		c := g.consumers[k]
		if err := g.put(command.TagStreamConsumer, []byte(k), c.rec.Encode()); err != nil {
			return err
		}
		c.changed = false
	}
	return nil
}

func (g *groupTx) pending(gr command.GroupRecord, id command.StreamID) (command.PendingEntry, bool, error) {
	v, ok := g.get(command.TagStreamPending, command.GroupPendingKey(gr.GID, id))
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
// an entry pending for another consumer (old) moves to c.
func (g *groupTx) assign(gr *command.GroupRecord, id command.StreamID, old *command.PendingEntry, c *consumerState, at int64, count uint64) error {
	if old == nil {
		gr.Pending++
	}
	if old == nil || !bytes.Equal(old.Consumer, c.name) {
		if old != nil {
			if err := g.unholdBy(gr, old.Consumer, id); err != nil {
				return err
			}
		}
		if err := g.put(command.TagConsumerPending, command.ConsumerPendingKey(gr.GID, c.name, id), []byte{}); err != nil {
			return err
		}
		c.rec.Pending++
		c.changed = true
	}
	return g.put(command.TagStreamPending, command.GroupPendingKey(gr.GID, id), command.PendingEntry{Delivered: at, Count: count, Consumer: c.name}.Encode())
}

// assignMany is assign of many ids, in id order, to one consumer: the
// group's PEL entries are written first, then the consumer's, so that
// each index is appended to in turn (bbolt splits a node only at commit:
// writes interleaved between two indexes would shift one's entries at
// every write to the other, a cost of the count squared).
func (g *groupTx) assignMany(gr *command.GroupRecord, ids []command.StreamID, olds []*command.PendingEntry, c *consumerState, at int64, count uint64) error {
	for i, id := range ids {
		old := olds[i]
		if old == nil {
			gr.Pending++
		} else if !bytes.Equal(old.Consumer, c.name) {
			if err := g.unholdBy(gr, old.Consumer, id); err != nil {
				return err
			}
		}
		if err := g.put(command.TagStreamPending, command.GroupPendingKey(gr.GID, id), command.PendingEntry{Delivered: at, Count: count, Consumer: c.name}.Encode()); err != nil {
			return err
		}
	}
	for i, id := range ids {
		if old := olds[i]; old != nil && bytes.Equal(old.Consumer, c.name) {
			continue
		}
		if err := g.put(command.TagConsumerPending, command.ConsumerPendingKey(gr.GID, c.name, id), []byte{}); err != nil {
			return err
		}
		c.rec.Pending++
		c.changed = true
	}
	return nil
}

// unholdBy takes id out of consumer name's PEL.
func (g *groupTx) unholdBy(gr *command.GroupRecord, name []byte, id command.StreamID) error {
	c, err := g.consumer(gr, name, false, false)
	if err != nil {
		return err
	}
	if c != nil {
		c.rec.Pending--
		c.changed = true
	}
	return g.del(command.TagConsumerPending, command.ConsumerPendingKey(gr.GID, name, id))
}

// unpend takes id out of the group's PEL and its consumer's.
func (g *groupTx) unpend(gr *command.GroupRecord, id command.StreamID, p command.PendingEntry) error {
	gr.Pending--
	if err := g.unholdBy(gr, p.Consumer, id); err != nil {
		return err
	}
	return g.del(command.TagStreamPending, command.GroupPendingKey(gr.GID, id))
}

// dropPrefix deletes every key of tag under prefix, in chunks as
// dropElems does.
func (g *groupTx) dropPrefix(tag byte, prefix []byte) error {
	for {
		var keys [][]byte
		err := g.walk(tag, prefix, nil, func(k, _ []byte) bool {
			keys = append(keys, clone(k))
			return len(keys) < dropChunk
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := g.del(tag, k); err != nil {
				return err
			}
		}
		if len(keys) < dropChunk {
			return nil
		}
	}
}

// refused is a group command's refusal (command.GroupNoKey, ...), of its
// key at index i.
func refused(i int, why byte) *command.Result {
	return &command.Result{Code: command.CodeWrongState, Value: append(command.Num(int64(i)), why)}
}

// streamGroup applies a group write (command.GroupOp).
func (a *applier) streamGroup(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamGroupIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamGroupIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	args, err := command.DecodeGroupArgs(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	op := command.GroupOp(c.Mode)
	if op == command.GroupRead {
		return a.readGroup(kv, c, args)
	}
	g, exists, code := a.groupsOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists && op == command.GroupAck:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	case !exists && (op == command.GroupClaim || op == command.GroupAutoClaim):
		return refused(0, command.GroupNoGroup)
	case !exists && (op != command.GroupCreate || args.Flags&command.GroupMkStream == 0):
		return refused(0, command.GroupNoKey)
	case op == command.GroupCreate:
		return g.create(args, exists, rev)
	}
	gr, ok, err := g.group(args.Group)
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case !ok && (op == command.GroupDestroy || op == command.GroupAck):
		return &command.Result{Code: command.CodeOK, Version: g.e.Version, Value: []byte("0")}
	case !ok:
		return refused(0, command.GroupNoGroup)
	case args.Flags&command.GroupBadID != 0:
		return refused(0, command.GroupBadIDs)
	case op == command.GroupDestroy:
		return g.destroy(args.Group, gr, rev)
	}
	var out []byte
	switch op {
	case command.GroupSetID:
		gr.Last, gr.EntriesRead = args.ID, command.InvalidEntriesRead
		if args.Flags&command.GroupLastID != 0 {
			gr.Last = g.h.Last
		}
		if args.Flags&command.GroupEntriesRead != 0 {
			gr.EntriesRead = args.EntriesRead
		}
		out = []byte("OK")
	case command.GroupCreateConsumer:
		before := gr.Consumers
		if _, err := g.consumer(&gr, args.Consumer, true, false); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		out = strconv.AppendUint(nil, gr.Consumers-before, 10)
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
			if err == nil && ok {
				err = g.unpend(&gr, id, p)
				n++
			}
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
		out = strconv.AppendInt(nil, int64(n), 10)
	case command.GroupClaim:
		out, err = g.claim(&gr, args)
	case command.GroupAutoClaim:
		out, err = g.autoClaim(&gr, args)
	default:
		return &command.Result{Code: command.CodeBadCommand}
	}
	if err == nil {
		err = g.flush()
	}
	if err == nil {
		err = g.putGroup(args.Group, gr)
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Version: g.e.Version, ExpiresAt: g.e.ExpiresAt, Value: out}
}

// create is XGROUP CREATE, after the key's checks: the id's, then the
// group's (BUSYGROUP: CodeExists). MKSTREAM makes the stream here.
func (g *groupTx) create(args command.GroupArgs, exists bool, rev uint64) *command.Result {
	if args.Flags&command.GroupBadID != 0 {
		return refused(0, command.GroupBadIDs)
	}
	id := args.ID
	if args.Flags&command.GroupLastID != 0 {
		id = g.h.Last // an absent stream's: 0-0
	}
	if !exists {
		g.h = command.StreamHeader{CollHeader: newColl(rev)}
	}
	if _, there, err := g.group(args.Group); err != nil || there {
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		return &command.Result{Code: command.CodeExists, Version: g.e.Version, ExpiresAt: g.e.ExpiresAt}
	}
	er := int64(command.InvalidEntriesRead)
	if args.Flags&command.GroupEntriesRead != 0 {
		er = args.EntriesRead
	}
	if err := g.putGroup(args.Group, command.GroupRecord{Last: id, EntriesRead: er, GID: rev}); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	g.h.Groups++
	r := g.a.storeStream(g.kv, g.key, g.h, g.e, exists, rev, []byte("OK"))
	if r.Code == command.CodeCreated {
		r.Code = command.CodeOK
	}
	return r
}

// destroy is XGROUP DESTROY of a group there: its PEL and consumers go
// with it.
func (g *groupTx) destroy(name []byte, gr command.GroupRecord, rev uint64) *command.Result {
	p := command.GroupPrefix(gr.GID)
	for _, tag := range []byte{command.TagStreamPending, command.TagStreamConsumer, command.TagConsumerPending} {
		if err := g.dropPrefix(tag, p); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	if err := g.del(command.TagStreamGroup, name); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	g.h.Groups--
	return g.a.storeStream(g.kv, g.key, g.h, g.e, true, rev, []byte("1"))
}

// delConsumer is XGROUP DELCONSUMER: the consumer's pending entries leave
// the group's PEL too; how many they were.
func (g *groupTx) delConsumer(gr *command.GroupRecord, name []byte) (uint64, error) {
	c, err := g.consumer(gr, name, false, false)
	if err != nil || c == nil {
		return 0, err
	}
	prefix := command.ConsumerPendingPrefix(gr.GID, name)
	for {
		var ids []command.StreamID
		err := g.walk(command.TagConsumerPending, prefix, nil, func(k, _ []byte) bool {
			id, _ := command.StreamIDOf(k[len(prefix):])
			ids = append(ids, id)
			return len(ids) < dropChunk
		})
		if err != nil {
			return 0, err
		}
		for _, id := range ids {
			if err := g.del(command.TagStreamPending, command.GroupPendingKey(gr.GID, id)); err != nil {
				return 0, err
			}
			if err := g.del(command.TagConsumerPending, command.ConsumerPendingKey(gr.GID, name, id)); err != nil {
				return 0, err
			}
		}
		gr.Pending -= uint64(len(ids))
		if len(ids) < dropChunk {
			break
		}
	}
	k := command.ConsumerKey(gr.GID, name)
	delete(g.consumers, string(k))
	gr.Consumers--
	return c.rec.Pending, g.del(command.TagStreamConsumer, k)
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
		f, there := g.entry(id)
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
	prefix := command.GroupPrefix(gr.GID)
	var out []command.GroupEntry
	var deleted []byte
	var c *consumerState
	budget := command.MaxGroupReply
	from, last, visited := a.ID, command.StreamID{}, false
	for ; attempts > 0 && count > 0; attempts-- {
		var id command.StreamID
		var p command.PendingEntry
		found, bad := false, false
		err := g.walk(command.TagStreamPending, prefix, command.GroupPendingKey(gr.GID, from), func(k, v []byte) bool {
			id, _ = command.StreamIDOf(k[len(prefix):])
			p, bad = command.DecodePendingEntry(clone(v))
			bad, found = !bad, true
			return false
		})
		if err != nil || bad {
			return nil, command.ErrStorage
		}
		if !found {
			break
		}
		f, there := g.entry(id)
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
			deleted = append(deleted, id.Bytes()...)
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
	var cursor command.StreamID
	if visited {
		if next, more := last.Next(); more {
			err := g.walk(command.TagStreamPending, prefix, command.GroupPendingKey(gr.GID, next), func(k, _ []byte) bool {
				cursor, _ = command.StreamIDOf(k[len(prefix):])
				return false
			})
			if err != nil {
				return nil, err
			}
		}
	}
	return command.EncodeList([][]byte{cursor.Bytes(), command.EncodeGroupEntries(out), deleted}), nil
}

// The applier's rows of this file's commands (commands.go joins them).
var streamGroupApplies = applies{
	command.TypeStreamGroup:     {remembered: true, apply: (*applier).streamGroup, kv: (*applier).streamGroupIn},
	command.TypeStreamGroupRead: {apply: (*applier).streamGroupRead, kv: (*applier).streamGroupReadIn},
}
