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
func (a *applier) readGroup(tx *bolt.Tx, c *command.Command, args command.GroupArgs) *command.Result {
	more, err := command.DecodeList(c.Value)
	if err != nil || len(args.IDs) != len(more)+1 {
		return &command.Result{Code: command.CodeBadCommand}
	}
	keys := append([][]byte{c.Key}, more...)
	versions := make([]byte, 0, 8*len(keys))
	for i, k := range keys {
		s, exists, code := a.groupStreamOf(tx, k)
		switch {
		case code != command.CodeOK:
			return &command.Result{Code: code}
		case !exists:
			return refused(i, command.GroupNoKey)
		}
		if _, ok, err := a.groupsOf(tx, s).group(args.Group); err != nil || !ok {
			if err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
			return refused(i, command.GroupNoGroup)
		}
		versions = append(versions, command.Num(int64(s.e.Version))...)
	}
	var out [][]byte
	budget := command.MaxGroupReply
	for i, k := range keys {
		s, _, _ := a.groupStreamOf(tx, k)
		g := a.groupsOf(tx, s)
		gr, _, err := g.group(args.Group)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		var es []command.GroupEntry
		served := false
		switch id := args.IDs[i]; {
		case id != command.MaxEntryID:
			served = true
			es, err = g.history(&gr, args, id, &budget)
		case s.length > 0 && s.lastValid.Compare(gr.Last) > 0:
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
func (g *groupTx) history(gr *command.GroupRecord, args command.GroupArgs, id command.EntryID, budget *int) ([]command.GroupEntry, error) {
	c, err := g.consumer(gr, args.Consumer, true, true)
	if err != nil {
		return nil, err
	}
	start, ok := id.Next()
	if !ok {
		return nil, nil
	}
	prefix := command.ConsumerPendingPrefix(g.s.sid, gr.GID, c.name)
	var ids []command.EntryID
	g.walk(prefix, command.ConsumerPendingKey(g.s.sid, gr.GID, c.name, start), func(k, _ []byte) bool {
		id, _ := command.EntryIDFrom(k[len(prefix):])
		ids = append(ids, id)
		return args.Count == 0 || int64(len(ids)) < args.Count
	})
	var out []command.GroupEntry
	for _, id := range ids {
		f, there := g.s.entry(g.tx, id)
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
			if err := g.b.Put(command.GroupPendingKey(g.s.sid, gr.GID, id), p.Encode()); err != nil {
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
	err = g.s.entriesFrom(g.tx, start, func(id command.EntryID, f [][]byte) bool {
		e := command.GroupEntry{ID: id, Fields: f}
		if *budget -= entryBytes(e); *budget < 0 && len(out) > 0 {
			return false
		}
		out = append(out, e)
		return args.Count == 0 || int64(len(out)) < args.Count
	})
	if err != nil {
		return nil, err
	}
	for _, e := range out {
		if e.ID.Compare(gr.Last) > 0 {
			switch {
			case gr.EntriesRead != command.InvalidEntriesRead && !g.s.tombstonesFrom(e.ID):
				gr.EntriesRead++
			case g.s.entriesAdded != 0:
				gr.EntriesRead = g.s.entriesReadAt(e.ID)
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
		if err := g.assign(gr, e.ID, old, c, g.now, 1); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// tombstonesFrom reports whether an entry deleted may lie at or after
// id (Redis's streamRangeHasTombstones(s, id, NULL)).
func (s groupStream) tombstonesFrom(id command.EntryID) bool {
	switch {
	case s.length == 0 || s.maxDeleted.IsZero():
		return false
	case s.first.Compare(s.maxDeleted) > 0:
		return false
	}
	return id.Compare(s.maxDeleted) <= 0
}

// entriesReadAt is the entries-read counter of id, or InvalidEntriesRead
// when it cannot be known (Redis's
// streamEstimateDistanceFromFirstEverEntry).
func (s groupStream) entriesReadAt(id command.EntryID) int64 {
	if s.entriesAdded == 0 {
		return 0
	}
	if s.length == 0 && id.Compare(s.last) < 1 {
		return int64(s.entriesAdded)
	}
	switch cmp := id.Compare(s.last); {
	case cmp == 0:
		return int64(s.entriesAdded)
	case cmp > 0:
		return command.InvalidEntriesRead
	}
	if s.maxDeleted.IsZero() || s.maxDeleted.Compare(s.first) < 0 {
		switch cmp := id.Compare(s.first); {
		case cmp < 0:
			return int64(s.entriesAdded - s.length)
		case cmp == 0:
			return int64(s.entriesAdded - s.length + 1)
		}
	}
	return command.InvalidEntriesRead
}

// lag is a group's lag, or false when it cannot be known (Redis's
// streamReplyWithCGLag).
func (s groupStream) lag(gr command.GroupRecord) (int64, bool) {
	switch {
	case s.entriesAdded == 0:
		return 0, true
	case gr.EntriesRead != command.InvalidEntriesRead && !s.tombstonesFrom(gr.Last):
		return int64(s.entriesAdded) - gr.EntriesRead, true
	}
	if er := s.entriesReadAt(gr.Last); er != command.InvalidEntriesRead {
		return int64(s.entriesAdded) - er, true
	}
	return 0, false
}

// streamGroupRead answers a read of a stream's groups (command.GroupOp).
func (a *applier) streamGroupRead(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	args, err := command.DecodeGroupArgs(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	s, exists, code := a.groupStreamOf(tx, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return refused(0, command.GroupNoKey)
	}
	g := a.groupsOf(tx, s)
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
			out = g.pendingSummary(gr)
		case command.GroupPendingRange:
			out, err = g.pendingRange(gr, args)
		case command.GroupInfoConsumers:
			out, err = g.infoConsumers(gr)
		}
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Version: s.e.Version, Value: out}
}

// pendingSummary is XPENDING key group: the PEL's size, its first and
// last ids (empty: none), and each consumer holding some, with how many.
func (g *groupTx) pendingSummary(gr command.GroupRecord) []byte {
	var first, last []byte
	prefix := command.GroupPendingPrefix(g.s.sid, gr.GID)
	g.walk(prefix, nil, func(k, _ []byte) bool {
		first = clone(k[len(prefix):])
		return false
	})
	if first != nil {
		last = g.lastUnder(prefix)[len(prefix):]
	}
	var holders [][]byte
	cp := command.ConsumerPrefix(g.s.sid, gr.GID)
	g.walk(cp, nil, func(k, v []byte) bool {
		if r, ok := command.DecodeConsumerRecord(v); ok && r.Pending > 0 {
			holders = append(holders, clone(k[len(cp):]), command.Num(int64(r.Pending)))
		}
		return true
	})
	return command.EncodeList([][]byte{command.Num(int64(gr.Pending)), first, last, command.EncodeList(holders)})
}

// pendingRange is XPENDING's extended form: up to count entries from
// start to end (the consumer's, when one is named; none when it is not
// there), idle at least MinIdle: each its id, consumer, idle time and
// deliveries, flattened.
func (g *groupTx) pendingRange(gr command.GroupRecord, args command.GroupArgs) ([]byte, error) {
	prefix := command.GroupPendingPrefix(g.s.sid, gr.GID)
	from := command.GroupPendingKey(g.s.sid, gr.GID, args.ID)
	if args.Consumer != nil {
		if _, ok := g.get(command.ConsumerKey(g.s.sid, gr.GID, args.Consumer)); !ok {
			return command.EncodeList(nil), nil
		}
		prefix = command.ConsumerPendingPrefix(g.s.sid, gr.GID, args.Consumer)
		from = command.ConsumerPendingKey(g.s.sid, gr.GID, args.Consumer, args.ID)
	}
	var out [][]byte
	n := args.Count
	var err error
	g.walk(prefix, from, func(k, v []byte) bool {
		id, _ := command.EntryIDFrom(k[len(prefix):])
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
	if err != nil {
		return nil, err
	}
	return command.EncodeList(out), nil
}

// lastUnder is the last key under prefix, copied (nil: none).
func (g *groupTx) lastUnder(prefix []byte) []byte {
	c := g.b.Cursor()
	end := clone(prefix)
	for i := len(end) - 1; i >= 0; i-- { // the first key past the prefix's keys
		if end[i]++; end[i] != 0 {
			break
		}
	}
	k, _ := c.Seek(end)
	if k == nil {
		k, _ = c.Last()
	} else {
		k, _ = c.Prev()
	}
	if k == nil || !bytes.HasPrefix(k, prefix) {
		return nil
	}
	return clone(k)
}

// infoGroups is XINFO GROUPS (each group's name, consumers, pending,
// last delivered, entries read and lag; empty: null), or with full the
// groups of XINFO STREAM FULL, their PELs and consumers up to count
// entries each (0: all).
func (g *groupTx) infoGroups(full bool, count int64) ([]byte, error) {
	prefix := command.GroupKey(g.s.sid, nil)
	type named struct {
		name []byte
		r    command.GroupRecord
	}
	var groups []named
	bad := false
	g.walk(prefix, nil, func(k, v []byte) bool {
		r, ok := command.DecodeGroupRecord(v)
		bad = bad || !ok
		groups = append(groups, named{clone(k[len(prefix):]), r})
		return true
	})
	if bad {
		return nil, command.ErrStorage
	}
	out := make([][]byte, 0, len(groups))
	for _, gn := range groups {
		var er, lag []byte
		if gn.r.EntriesRead != command.InvalidEntriesRead {
			er = command.Num(gn.r.EntriesRead)
		}
		if l, ok := g.s.lag(gn.r); ok {
			lag = command.Num(l)
		}
		if !full {
			out = append(out, command.EncodeList([][]byte{gn.name, command.Num(int64(gn.r.Consumers)), command.Num(int64(gn.r.Pending)),
				gn.r.Last.Bytes(), er, lag}))
			continue
		}
		var pel [][]byte
		pp := command.GroupPendingPrefix(g.s.sid, gn.r.GID)
		g.walk(pp, nil, func(k, v []byte) bool {
			if count > 0 && int64(len(pel)) >= count {
				return false
			}
			p, _ := command.DecodePendingEntry(v)
			pel = append(pel, command.EncodeList([][]byte{clone(k[len(pp):]), clone(p.Consumer), command.Num(p.Delivered), command.Num(int64(p.Count))}))
			return true
		})
		var consumers [][]byte
		cp := command.ConsumerPrefix(g.s.sid, gn.r.GID)
		var names [][]byte
		var recs []command.ConsumerRecord
		g.walk(cp, nil, func(k, v []byte) bool {
			r, _ := command.DecodeConsumerRecord(v)
			names, recs = append(names, clone(k[len(cp):])), append(recs, r)
			return true
		})
		for i, name := range names {
			var cpel [][]byte
			cpp := command.ConsumerPendingPrefix(g.s.sid, gn.r.GID, name)
			var ids []command.EntryID
			g.walk(cpp, nil, func(k, _ []byte) bool {
				if count > 0 && int64(len(ids)) >= count {
					return false
				}
				id, _ := command.EntryIDFrom(k[len(cpp):])
				ids = append(ids, id)
				return true
			})
			for _, id := range ids {
				p, _, err := g.pending(gn.r, id)
				if err != nil {
					return nil, err
				}
				cpel = append(cpel, command.EncodeList([][]byte{id.Bytes(), command.Num(p.Delivered), command.Num(int64(p.Count))}))
			}
			consumers = append(consumers, command.EncodeList([][]byte{name, command.Num(recs[i].Seen), command.Num(int64(recs[i].Pending)),
				command.EncodeList(cpel)}))
		}
		out = append(out, command.EncodeList([][]byte{gn.name, gn.r.Last.Bytes(), er, lag, command.Num(int64(gn.r.Pending)),
			command.EncodeList(pel), command.EncodeList(consumers)}))
	}
	return command.EncodeList(out), nil
}

// infoConsumers is XINFO CONSUMERS: each consumer's name, pending and
// idle time.
func (g *groupTx) infoConsumers(gr command.GroupRecord) ([]byte, error) {
	cp := command.ConsumerPrefix(g.s.sid, gr.GID)
	var out [][]byte
	bad := false
	g.walk(cp, nil, func(k, v []byte) bool {
		r, ok := command.DecodeConsumerRecord(v)
		bad = bad || !ok
		out = append(out, command.EncodeList([][]byte{clone(k[len(cp):]), command.Num(int64(r.Pending)), command.Num(max(g.now-r.Seen, 0))}))
		return true
	})
	if bad {
		return nil, command.ErrStorage
	}
	return command.EncodeList(out), nil
}
