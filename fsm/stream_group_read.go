package fsm

import (
	"bytes"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// XREADGROUP, and the reads of a stream's groups (XPENDING, XINFO GROUPS
// and CONSUMERS, the groups of XINFO STREAM FULL).

// entryBytes is what an entry adds to an answer (MaxGroupReply).
func entryBytes(e command.GroupEntry) int {
	n := 17
	for _, f := range e.Fields {
		n += len(f) + 2
	}
	return n
}

// readGroup is XREADGROUP (t_stream.c's xreadCommand and
// streamReplyWithRange, 7.0): every key's stream and group are checked
// first, then each key is served in turn: from the consumer's own PEL
// for an id, or the entries after the group's last delivered for ">".
// CodeNotFound when no key was served (Value: each stream's version, 8
// bytes each, what a blocked reader waits to see change); else CodeOK
// with, per key served, its index and its entries.
func (a *applier) readGroup(kv kvStore, c *command.Command, args command.GroupArgs) *command.Result {
	more, err := command.DecodeList(c.Value)
	if err != nil || len(args.IDs) != len(more)+1 {
		return &command.Result{Code: command.CodeBadCommand}
	}
	keys := append([][]byte{c.Key}, more...)
	versions := make([]byte, 0, 8*len(keys))
	for i, k := range keys {
		if args.Flags&command.GroupBadID != 0 && int64(i) > args.BadAt {
			break
		}
		g, exists, code := a.groupsOf(kv, k)
		switch {
		case code != command.CodeOK:
			return &command.Result{Code: code}
		case !exists:
			return refused(i, command.GroupNoKey)
		}
		if _, ok, err := g.group(args.Group); err != nil || !ok {
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
			return refused(i, command.GroupNoGroup)
		}
		versions = append(versions, command.Num(int64(g.e.Version))...)
	}
	if args.Flags&command.GroupBadID != 0 {
		return refused(int(args.BadAt), command.GroupBadIDs)
	}
	var out [][]byte
	budget := command.MaxGroupReply
	for i, k := range keys {
		g, _, _ := a.groupsOf(kv, k)
		gr, _, err := g.group(args.Group)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		var es []command.GroupEntry
		served := false
		switch id := args.IDs[i]; {
		case id != command.MaxStreamID:
			served = true
			es, err = g.history(&gr, args, id, &budget)
		case g.h.Count > 0 && g.lastValid().Compare(gr.Last) > 0:
			served = true
			es, err = g.deliver(&gr, args, &budget)
		}
		if err == nil && served {
			err = g.flush()
			if err == nil {
				err = g.putGroup(args.Group, gr)
			}
			out = append(out, command.Num(int64(i)), command.EncodeGroupEntries(es))
		}
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	if out == nil {
		return &command.Result{Code: command.CodeNotFound, Value: versions}
	}
	return &command.Result{Code: command.CodeOK, Value: command.EncodeList(out)}
}

// history serves a consumer its own pending entries after id: each
// still in the stream is delivered again (now, once more); one deleted
// is answered by its id alone.
func (g *groupTx) history(gr *command.GroupRecord, args command.GroupArgs, id command.StreamID, budget *int) ([]command.GroupEntry, error) {
	c, err := g.consumer(gr, args.Consumer, true, true)
	if err != nil {
		return nil, err
	}
	start, ok := id.Next()
	if !ok {
		return nil, nil
	}
	prefix := command.ConsumerPendingPrefix(gr.GID, c.name)
	var ids []command.StreamID
	err = g.walk(command.TagConsumerPending, prefix, command.ConsumerPendingKey(gr.GID, c.name, start), func(k, _ []byte) bool {
		id, _ := command.StreamIDOf(k[len(prefix):])
		ids = append(ids, id)
		return args.Count == 0 || int64(len(ids)) < args.Count
	})
	if err != nil {
		return nil, err
	}
	var out []command.GroupEntry
	for _, id := range ids {
		f, there := g.entry(id)
		if !there {
			out = append(out, command.GroupEntry{ID: id})
			continue
		}
		e := command.GroupEntry{ID: id, Fields: f}
		if *budget -= entryBytes(e); *budget < 0 && len(out) > 0 {
			break
		}
		p, ok, err := g.pending(*gr, id)
		if err != nil {
			return nil, err
		}
		if ok {
			p.Delivered, p.Count = g.now, p.Count+1
			if err := g.put(command.TagStreamPending, command.GroupPendingKey(gr.GID, id), p.Encode()); err != nil {
				return nil, err
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// deliver serves the entries after the group's last delivered, up to
// the count: the group's last delivered and entries read move on, and
// (without NOACK) each becomes pending for the consumer.
func (g *groupTx) deliver(gr *command.GroupRecord, args command.GroupArgs, budget *int) ([]command.GroupEntry, error) {
	c, err := g.consumer(gr, args.Consumer, true, true)
	if err != nil {
		return nil, err
	}
	start, ok := gr.Last.Next()
	if !ok {
		return nil, nil
	}
	var out []command.GroupEntry
	err = streamEntries(g.kv, g.key, g.h, start, false, func(id command.StreamID, v []byte) bool {
		f, derr := command.DecodeList(v)
		if derr != nil {
			return false
		}
		e := command.GroupEntry{ID: id, Fields: make([][]byte, len(f))}
		for i := range f {
			if e.Fields[i] = clone(f[i]); e.Fields[i] == nil {
				e.Fields[i] = []byte{}
			}
		}
		if *budget -= entryBytes(e); *budget < 0 && len(out) > 0 {
			return false
		}
		out = append(out, e)
		return args.Count == 0 || int64(len(out)) < args.Count
	})
	if err != nil {
		return nil, err
	}
	var ids []command.StreamID
	var olds []*command.PendingEntry
	for _, e := range out {
		if e.ID.Compare(gr.Last) > 0 {
			switch {
			case gr.EntriesRead != command.InvalidEntriesRead && !tombstonesFrom(g.h, e.ID):
				gr.EntriesRead++
			case g.h.Added != 0:
				gr.EntriesRead = entriesReadAt(g.h, e.ID)
			}
			gr.Last = e.ID
		}
		if args.Flags&command.GroupNoAck != 0 {
			continue
		}
		p, ok, err := g.pending(*gr, e.ID)
		if err != nil {
			return nil, err
		}
		var old *command.PendingEntry
		if ok {
			old = &p
		}
		ids, olds = append(ids, e.ID), append(olds, old)
	}
	return out, g.assignMany(gr, ids, olds, c, g.now, 1)
}

// tombstonesFrom reports whether an entry deleted may lie at or after
// id (Redis's streamRangeHasTombstones(s, id, NULL)).
func tombstonesFrom(h command.StreamHeader, id command.StreamID) bool {
	switch {
	case h.Count == 0 || h.MaxDeleted.IsZero():
		return false
	case h.First.Compare(h.MaxDeleted) > 0:
		return false
	}
	return id.Compare(h.MaxDeleted) <= 0
}

// entriesReadAt is the entries-read counter of id, or InvalidEntriesRead
// when it cannot be known (Redis's
// streamEstimateDistanceFromFirstEverEntry).
func entriesReadAt(h command.StreamHeader, id command.StreamID) int64 {
	if h.Added == 0 {
		return 0
	}
	if h.Count == 0 && id.Compare(h.Last) < 1 {
		return int64(h.Added)
	}
	switch cmp := id.Compare(h.Last); {
	case cmp == 0:
		return int64(h.Added)
	case cmp > 0:
		return command.InvalidEntriesRead
	}
	if h.MaxDeleted.IsZero() || h.MaxDeleted.Compare(h.First) < 0 {
		switch cmp := id.Compare(h.First); {
		case cmp < 0:
			return int64(h.Added - h.Count)
		case cmp == 0:
			return int64(h.Added - h.Count + 1)
		}
	}
	return command.InvalidEntriesRead
}

// groupLag is a group's lag, or false when it cannot be known (Redis's
// streamReplyWithCGLag).
func groupLag(h command.StreamHeader, gr command.GroupRecord) (int64, bool) {
	switch {
	case h.Added == 0:
		return 0, true
	case gr.EntriesRead != command.InvalidEntriesRead && !tombstonesFrom(h, gr.Last):
		return int64(h.Added) - gr.EntriesRead, true
	}
	if er := entriesReadAt(h, gr.Last); er != command.InvalidEntriesRead {
		return int64(h.Added) - er, true
	}
	return 0, false
}

// streamGroupRead answers a read of a stream's groups (command.GroupOp).
func (a *applier) streamGroupRead(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamGroupReadIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamGroupReadIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	args, err := command.DecodeGroupArgs(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	g, exists, code := a.groupsOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return refused(0, command.GroupNoKey)
	}
	op := command.GroupOp(c.Mode)
	var out []byte
	switch op {
	case command.GroupInfoGroups, command.GroupInfoFull:
		out, err = g.infoGroups(op == command.GroupInfoFull, args.Count)
	default:
		gr, ok, gerr := g.group(args.Group)
		switch {
		case gerr != nil:
			return &command.Result{Code: command.CodeStorage}
		case !ok:
			return refused(0, command.GroupNoGroup)
		}
		switch op {
		case command.GroupPendingSummary:
			out, err = g.pendingSummary(gr)
		case command.GroupPendingRange:
			out, err = g.pendingRange(gr, args)
		case command.GroupInfoConsumers:
			out, err = g.infoConsumers(gr)
		}
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Version: g.e.Version, ExpiresAt: g.e.ExpiresAt, Value: out}
}

// pendingSummary is XPENDING key group: the PEL's size, its first and
// last ids (empty: none), and each consumer holding some, with how many.
func (g *groupTx) pendingSummary(gr command.GroupRecord) ([]byte, error) {
	var first, last []byte
	prefix := command.GroupPrefix(gr.GID)
	err := g.walk(command.TagStreamPending, prefix, nil, func(k, _ []byte) bool {
		first = clone(k[len(prefix):])
		return false
	})
	if err == nil && first != nil {
		err = g.kv.tagWalk(g.key, g.h.CollHeader, command.TagStreamPending, command.GroupPendingKey(gr.GID, command.MaxStreamID), true,
			func(k, _ []byte) bool {
				if bytes.HasPrefix(k, prefix) {
					last = clone(k[len(prefix):])
				}
				return false
			})
	}
	var holders [][]byte
	if err == nil {
		err = g.walk(command.TagStreamConsumer, prefix, nil, func(k, v []byte) bool {
			if r, ok := command.DecodeConsumerRecord(v); ok && r.Pending > 0 {
				holders = append(holders, clone(k[len(prefix):]), command.Num(int64(r.Pending)))
			}
			return true
		})
	}
	return command.EncodeList([][]byte{command.Num(int64(gr.Pending)), first, last, command.EncodeList(holders)}), err
}

// pendingRange is XPENDING's extended form: up to count entries from
// start to end (the consumer's, when one is named; none when it is not
// there), idle at least MinIdle: each its id, consumer, idle time and
// deliveries, flattened.
func (g *groupTx) pendingRange(gr command.GroupRecord, args command.GroupArgs) ([]byte, error) {
	tag, prefix := command.TagStreamPending, command.GroupPrefix(gr.GID)
	from := command.GroupPendingKey(gr.GID, args.ID)
	if args.Consumer != nil {
		if _, ok := g.get(command.TagStreamConsumer, command.ConsumerKey(gr.GID, args.Consumer)); !ok {
			return command.EncodeList(nil), nil
		}
		tag, prefix = command.TagConsumerPending, command.ConsumerPendingPrefix(gr.GID, args.Consumer)
		from = command.ConsumerPendingKey(gr.GID, args.Consumer, args.ID)
	}
	var out [][]byte
	n := args.Count
	var err error
	werr := g.walk(tag, prefix, from, func(k, v []byte) bool {
		id, _ := command.StreamIDOf(k[len(prefix):])
		if n <= 0 || id.Compare(args.End) > 0 {
			return false
		}
		p, ok := command.DecodePendingEntry(v)
		if args.Consumer != nil { // a consumer's PEL holds ids: the entry is the group's
			p, ok, err = g.pending(gr, id)
		}
		if err != nil || !ok {
			err = command.ErrStorage
			return false
		}
		if args.MinIdle == 0 || g.now-p.Delivered >= args.MinIdle {
			out = append(out, id.Bytes(), clone(p.Consumer), command.Num(max(g.now-p.Delivered, 0)), command.Num(int64(p.Count)))
			n--
		}
		return true
	})
	if err == nil {
		err = werr
	}
	if err != nil {
		return nil, err
	}
	return command.EncodeList(out), nil
}

// infoGroups is XINFO GROUPS (each group's name, consumers, pending,
// last delivered, entries read and lag; empty: null), or with full the
// groups of XINFO STREAM FULL, their PELs and consumers up to count
// entries each (0: all).
func (g *groupTx) infoGroups(full bool, count int64) ([]byte, error) {
	type named struct {
		name []byte
		r    command.GroupRecord
	}
	var groups []named
	bad := false
	err := g.walk(command.TagStreamGroup, nil, nil, func(k, v []byte) bool {
		r, ok := command.DecodeGroupRecord(v)
		bad = bad || !ok
		groups = append(groups, named{clone(k), r})
		return true
	})
	if err != nil || bad {
		return nil, command.ErrStorage
	}
	out := make([][]byte, 0, len(groups))
	for _, gn := range groups {
		var er, lag []byte
		if gn.r.EntriesRead != command.InvalidEntriesRead {
			er = command.Num(gn.r.EntriesRead)
		}
		if l, ok := groupLag(g.h, gn.r); ok {
			lag = command.Num(l)
		}
		if !full {
			out = append(out, command.EncodeList([][]byte{gn.name, command.Num(int64(gn.r.Consumers)), command.Num(int64(gn.r.Pending)),
				gn.r.Last.Bytes(), er, lag}))
			continue
		}
		more := func(n int) bool { return count <= 0 || int64(n) < count }
		prefix := command.GroupPrefix(gn.r.GID)
		var pel [][]byte
		err := g.walk(command.TagStreamPending, prefix, nil, func(k, v []byte) bool {
			if !more(len(pel)) {
				return false
			}
			p, _ := command.DecodePendingEntry(v)
			pel = append(pel, command.EncodeList([][]byte{clone(k[len(prefix):]), clone(p.Consumer), command.Num(p.Delivered), command.Num(int64(p.Count))}))
			return true
		})
		var names [][]byte
		var recs []command.ConsumerRecord
		if err == nil {
			err = g.walk(command.TagStreamConsumer, prefix, nil, func(k, v []byte) bool {
				r, _ := command.DecodeConsumerRecord(v)
				names, recs = append(names, clone(k[len(prefix):])), append(recs, r)
				return true
			})
		}
		var consumers [][]byte
		for i, name := range names {
			if err != nil {
				break
			}
			var cpel [][]byte
			cp := command.ConsumerPendingPrefix(gn.r.GID, name)
			err = g.walk(command.TagConsumerPending, cp, nil, func(k, _ []byte) bool {
				if !more(len(cpel)) {
					return false
				}
				id, _ := command.StreamIDOf(k[len(cp):])
				p, _, perr := g.pending(gn.r, id)
				if perr != nil {
					err = perr
					return false
				}
				cpel = append(cpel, command.EncodeList([][]byte{id.Bytes(), command.Num(p.Delivered), command.Num(int64(p.Count))}))
				return true
			})
			consumers = append(consumers, command.EncodeList([][]byte{name, command.Num(recs[i].Seen), command.Num(int64(recs[i].Pending)),
				command.EncodeList(cpel)}))
		}
		if err != nil {
			return nil, err
		}
		out = append(out, command.EncodeList([][]byte{gn.name, gn.r.Last.Bytes(), er, lag, command.Num(int64(gn.r.Pending)),
			command.EncodeList(pel), command.EncodeList(consumers)}))
	}
	return command.EncodeList(out), nil
}

// infoConsumers is XINFO CONSUMERS: each consumer's name, pending and
// idle time.
func (g *groupTx) infoConsumers(gr command.GroupRecord) ([]byte, error) {
	prefix := command.GroupPrefix(gr.GID)
	var out [][]byte
	bad := false
	err := g.walk(command.TagStreamConsumer, prefix, nil, func(k, v []byte) bool {
		r, ok := command.DecodeConsumerRecord(v)
		bad = bad || !ok
		out = append(out, command.EncodeList([][]byte{clone(k[len(prefix):]), command.Num(int64(r.Pending)), command.Num(max(g.now-r.Seen, 0))}))
		return true
	})
	if err != nil || bad {
		return nil, command.ErrStorage
	}
	return command.EncodeList(out), nil
}
