package fsm

import (
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The stream's commands (package command's stream.go): XADD, XTRIM,
// XDEL, XSETID and the stream reads. An entry is a tag 2 entry keyed by
// its id; the node it belongs to (tag 3, keyed by its first id, as
// Redis's radix tree keys its listpacks) counts it, so that a "~" trim
// removes what Redis's removes. An XADD's "*" id is the entry's stamp's
// millisecond (the applier's clock, never this node's), or one past the
// last id when the clock is behind it, so every replica gives the same
// id and ids always increase.
//
// For consumer groups: streamOf reads a stream's header, storeStream
// writes it back (an emptied stream stays); the tagged element functions
// of kvStore (tagGet, tagPut, tagDel, tagWalk) read and write the
// groups' tags (command.TagStreamGroup ...); streamEntry reads an entry.

// streamOf reads the key's stream: its entry and header, or exists
// false; CodeWrongType when the key holds another kind.
func (a *applier) streamOf(kv kvStore, key []byte) (e command.KVEntry, h command.StreamHeader, exists bool, code command.Code) {
	e, exists, err := a.liveKV(kv, key)
	switch {
	case err != nil:
		return e, h, false, command.CodeStorage
	case !exists:
		return e, h, false, command.CodeOK
	case e.Kind != command.KindStream:
		return e, h, true, command.CodeWrongType
	}
	h, ok := command.DecodeStreamHeader(e.Value)
	if !ok {
		return e, h, true, command.CodeStorage
	}
	return e, h, true, command.CodeOK
}

// storeStream writes h as the key's header (old its entry, if exists),
// keeping its lifetime. value is the result's.
func (a *applier) storeStream(kv kvStore, key []byte, h command.StreamHeader, old command.KVEntry, exists bool, rev uint64, value []byte) *command.Result {
	e := command.KVEntry{Version: rev, Created: rev, ExpiresAt: old.ExpiresAt, Kind: command.KindStream, Value: h.Encode()}
	return a.storeKV(kv, key, &e, old, exists, value)
}

// streamEntry is the fields and values of the entry id (a list's
// encoding, aliasing the store's memory), or false.
func streamEntry(kv kvStore, key []byte, h command.StreamHeader, id command.StreamID) ([]byte, bool) {
	return kv.tagGet(key, h.CollHeader, command.TagStreamEntry, id.Bytes())
}

// streamEntries calls fn with the entries from from on (rev: from from
// back), until fn returns false.
func streamEntries(kv kvStore, key []byte, h command.StreamHeader, from command.StreamID, rev bool, fn func(id command.StreamID, v []byte) bool) error {
	return kv.tagWalk(key, h.CollHeader, command.TagStreamEntry, from.Bytes(), rev, func(k, v []byte) bool {
		id, ok := command.StreamIDOf(k)
		return !ok || fn(id, v)
	})
}

// streamNode is the node that holds id (the last whose first id is at or
// before it), or false.
func streamNode(kv kvStore, key []byte, h command.StreamHeader, id command.StreamID) (first command.StreamID, n command.StreamNode, ok bool) {
	_ = kv.tagWalk(key, h.CollHeader, command.TagStreamNode, id.Bytes(), true, func(k, v []byte) bool {
		first, _ = command.StreamIDOf(k)
		n, ok = command.DecodeStreamNode(v)
		return false
	})
	return first, n, ok
}

// entrySize is what an entry counts toward its stream's and its node's
// bytes: its fields' and values' lengths.
func entrySize(pairs [][]byte) uint64 {
	n := uint64(0)
	for _, p := range pairs {
		n += uint64(len(p))
	}
	return n
}

// xaddID is the id an XADD gives: CodeOutOfRange when it is not above
// the last, CodeOverflow when the stream has given the last id there is.
func (a *applier) xaddID(h command.StreamHeader, mode command.XAddIDMode, id command.StreamID) (command.StreamID, command.Code) {
	if h.Last == command.MaxStreamID {
		return id, command.CodeOverflow
	}
	switch mode {
	case command.XAddAuto:
		ms := uint64(max(a.now, 0) / 1e6)
		if ms > h.Last.Ms {
			return command.StreamID{Ms: ms}, command.CodeOK
		}
		next, _ := h.Last.Next()
		return next, command.CodeOK
	case command.XAddMsAuto:
		if id.Ms != h.Last.Ms {
			id.Seq = 0
			break
		}
		next, ok := h.Last.Next()
		if !ok || next.Ms != id.Ms {
			return id, command.CodeNotFloat // the sequence's end: CodeOutOfRange with XAddSeqExhausted
		}
		id = next
	}
	if !h.Last.Less(id) {
		return id, command.CodeOutOfRange
	}
	return id, command.CodeOK
}

// streamAdd is XADD.
func (a *applier) streamAdd(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamAddIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamAddIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	mode, want, trim, err := command.DecodeXAdd(c.Body)
	pairs, derr := command.DecodeList(c.Value)
	if err != nil || derr != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, h, exists, code := a.streamOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists && c.Flags&command.FlagStreamNoMk != 0:
		return &command.Result{Code: command.CodeNotFound}
	case !exists:
		h = command.StreamHeader{CollHeader: newColl(rev)}
	}
	id, code := a.xaddID(h, mode, want)
	switch code {
	case command.CodeOK:
	case command.CodeNotFloat:
		return &command.Result{Code: command.CodeOutOfRange, Value: []byte(command.XAddSeqExhausted)}
	default:
		return &command.Result{Code: code}
	}
	size := entrySize(pairs)
	nh := h
	nh.Count++
	nh.Bytes += size
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	if err := a.streamAppend(kv, c.Key, &nh, id, size, c.Value); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if _, err := streamTrim(kv, c.Key, &nh, trim); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return a.storeStream(kv, c.Key, nh, old, exists, rev, id.Bytes())
}

// streamAppend writes the entry id of fields (a list's encoding, of size
// bytes) at the end of the stream h (its counts already grown), into
// the last node, or a new one when that is full as Redis's would be.
func (a *applier) streamAppend(kv kvStore, key []byte, h *command.StreamHeader, id command.StreamID, size uint64, fields []byte) error {
	if err := kv.tagPut(key, h.CollHeader, command.TagStreamEntry, id.Bytes(), fields); err != nil {
		return err
	}
	h.Added++
	h.Last = id
	if h.Count == 1 {
		h.First = id
	}
	first, n, ok := streamNode(kv, key, *h, command.MaxStreamID)
	if !ok || n.Bytes+size >= command.StreamNodeBytes || n.Live+n.Deleted >= command.StreamNodeEntries {
		first, n = id, command.StreamNode{}
		h.Nodes++
	}
	n.Live++
	n.Last = id
	n.Bytes += size
	return kv.tagPut(key, h.CollHeader, command.TagStreamNode, first.Bytes(), n.Encode())
}

// streamDelete removes the entry id, whose fields are v, from the
// stream h and from its node (a node left with no live entry goes, as
// Redis's listpack does).
func streamDelete(kv kvStore, key []byte, h *command.StreamHeader, id command.StreamID, v []byte) error {
	fields, err := command.DecodeElems(v)
	if err != nil {
		return err
	}
	if err := kv.tagDel(key, h.CollHeader, command.TagStreamEntry, id.Bytes()); err != nil {
		return err
	}
	h.Count--
	h.Bytes -= min(h.Bytes, entrySize(fields))
	first, n, ok := streamNode(kv, key, *h, id)
	if !ok {
		return nil
	}
	if n.Live <= 1 {
		h.Nodes--
		return kv.tagDel(key, h.CollHeader, command.TagStreamNode, first.Bytes())
	}
	n.Live--
	n.Deleted++
	return kv.tagPut(key, h.CollHeader, command.TagStreamNode, first.Bytes(), n.Encode())
}

// streamFirst sets h.First to the stream's first entry's id (0-0 when
// it has none).
func streamFirst(kv kvStore, key []byte, h *command.StreamHeader) error {
	h.First = command.StreamID{}
	if h.Count == 0 {
		return nil
	}
	return streamEntries(kv, key, *h, command.StreamID{}, false, func(id command.StreamID, _ []byte) bool {
		h.First = id
		return false
	})
}

// streamTrim trims h as Redis's streamTrim does: whole nodes from the
// first while the stream stays at or above MAXLEN (or while a node's
// last id is below MINID), at most LIMIT entries; then, unless Approx,
// the entries of the next node that the bound still takes. It answers
// how many entries it removed.
func streamTrim(kv kvStore, key []byte, h *command.StreamHeader, t command.StreamTrim) (int64, error) {
	if t.Strategy == command.TrimNone {
		return 0, nil
	}
	var deleted int64
	for {
		if t.Strategy == command.TrimMaxLen && h.Count <= t.MaxLen {
			break
		}
		var nfirst command.StreamID
		var n command.StreamNode
		found := false
		err := kv.tagWalk(key, h.CollHeader, command.TagStreamNode, nil, false, func(k, v []byte) bool {
			nfirst, _ = command.StreamIDOf(k)
			n, found = command.DecodeStreamNode(v)
			return false
		})
		if err != nil {
			return deleted, err
		}
		if !found {
			break
		}
		entries := int64(n.Live)
		if t.Limit != 0 && deleted+entries > t.Limit {
			break
		}
		var remove bool
		if t.Strategy == command.TrimMaxLen {
			remove = h.Count-n.Live >= t.MaxLen
		} else {
			remove = n.Last.Less(t.MinID)
		}
		if remove {
			if err := dropNode(kv, key, h, nfirst, n); err != nil {
				return deleted, err
			}
			deleted += entries
			continue
		}
		if t.Approx {
			break
		}
		// Within the node: its entries from the first, while the bound
		// still takes them.
		var ids []command.StreamID
		var sizes []uint64
		budget := h.Count - t.MaxLen
		err = streamEntries(kv, key, *h, nfirst, false, func(id command.StreamID, v []byte) bool {
			if n.Last.Less(id) {
				return false
			}
			if t.Strategy == command.TrimMaxLen && uint64(len(ids)) >= budget {
				return false
			}
			if t.Strategy == command.TrimMinID && !id.Less(t.MinID) {
				return false
			}
			fields, _ := command.DecodeElems(v)
			ids, sizes = append(ids, id), append(sizes, entrySize(fields))
			return true
		})
		if err != nil {
			return deleted, err
		}
		for i, id := range ids {
			if err := kv.tagDel(key, h.CollHeader, command.TagStreamEntry, id.Bytes()); err != nil {
				return deleted, err
			}
			h.Count--
			h.Bytes -= min(h.Bytes, sizes[i])
		}
		n.Live -= uint64(len(ids))
		n.Deleted += uint64(len(ids))
		deleted += int64(len(ids))
		if err := kv.tagPut(key, h.CollHeader, command.TagStreamNode, nfirst.Bytes(), n.Encode()); err != nil {
			return deleted, err
		}
		break
	}
	return deleted, streamFirst(kv, key, h)
}

// dropNode removes the node first, n, and its entries.
func dropNode(kv kvStore, key []byte, h *command.StreamHeader, first command.StreamID, n command.StreamNode) error {
	var ids []command.StreamID
	var size uint64
	err := streamEntries(kv, key, *h, first, false, func(id command.StreamID, v []byte) bool {
		if n.Last.Less(id) {
			return false
		}
		fields, _ := command.DecodeElems(v)
		ids = append(ids, id)
		size += entrySize(fields)
		return true
	})
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := kv.tagDel(key, h.CollHeader, command.TagStreamEntry, id.Bytes()); err != nil {
			return err
		}
	}
	h.Count -= min(h.Count, n.Live)
	h.Bytes -= min(h.Bytes, size)
	h.Nodes--
	return kv.tagDel(key, h.CollHeader, command.TagStreamNode, first.Bytes())
}

// streamTrimCmd is XTRIM.
func (a *applier) streamTrimCmd(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamTrimIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamTrimIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	t, err := command.DecodeStreamTrim(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, h, exists, code := a.streamOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	}
	n, err := streamTrim(kv, c.Key, &h, t)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	out := strconv.AppendInt(nil, n, 10)
	if n == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: out}
	}
	return a.storeStream(kv, c.Key, h, old, true, rev, out)
}

// streamDel is XDEL.
func (a *applier) streamDel(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamDelIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamDelIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, h, exists, code := a.streamOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeOK, Value: []byte("0")}
	}
	n, firstGone := 0, false
	for i := 0; i+16 <= len(c.Body); i += 16 {
		id, _ := command.StreamIDOf(c.Body[i : i+16])
		v, ok := streamEntry(kv, c.Key, h, id)
		if !ok {
			continue
		}
		if err := streamDelete(kv, c.Key, &h, id, clone(v)); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		n++
		if h.MaxDeleted.Less(id) {
			h.MaxDeleted = id
		}
		firstGone = firstGone || id == h.First
	}
	out := strconv.AppendInt(nil, int64(n), 10)
	if n == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: out}
	}
	if firstGone {
		if err := streamFirst(kv, c.Key, &h); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	return a.storeStream(kv, c.Key, h, old, true, rev, out)
}

// streamSetID is XSETID.
func (a *applier) streamSetID(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamSetIDIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamSetIDIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	last, added, maxDel, err := command.DecodeXSetID(c)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, h, exists, code := a.streamOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound}
	case last.Less(h.MaxDeleted):
		return &command.Result{Code: command.CodeOutOfRange, Value: []byte(command.XSetIDBelowMaxDeleted)}
	}
	if h.Count > 0 {
		var top command.StreamID
		if err := streamEntries(kv, c.Key, h, command.MaxStreamID, true, func(id command.StreamID, _ []byte) bool {
			top = id
			return false
		}); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		switch {
		case last.Less(top):
			return &command.Result{Code: command.CodeOutOfRange, Value: []byte(command.XSetIDBelowTop)}
		case added >= 0 && h.Count > uint64(added):
			return &command.Result{Code: command.CodeOutOfRange, Value: []byte(command.XSetIDAddedBelowLen)}
		}
	}
	h.Last = last
	if added >= 0 {
		h.Added = uint64(added)
	}
	if !maxDel.IsZero() {
		h.MaxDeleted = maxDel
	}
	return a.storeStream(kv, c.Key, h, old, true, rev, nil)
}

// streamRead answers a stream read (command.StreamReadMode). It changes
// nothing (but the lazy removal of an expired key).
func (a *applier) streamRead(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.streamReadIn(boltKV{a, tx}, c, rev)
}

func (a *applier) streamReadIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	e, h, exists, code := a.streamOf(kv, c.Key)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound}
	}
	var pairs [][]byte
	var err error
	switch command.StreamReadMode(c.Mode) {
	case command.StreamReadRange:
		from, to, count, derr := command.DecodeStreamRange(c.Body)
		if derr != nil {
			return &command.Result{Code: command.CodeBadCommand}
		}
		rev := c.Flags&command.FlagStreamRev != 0
		start := from
		if rev {
			start = to
		}
		if count != 0 && !to.Less(from) {
			err = streamEntries(kv, c.Key, h, start, rev, func(id command.StreamID, v []byte) bool {
				if (!rev && to.Less(id)) || (rev && id.Less(from)) {
					return false
				}
				pairs = append(pairs, id.Bytes(), clone(v))
				return count < 0 || int64(len(pairs)/2) < count
			})
		}
	case command.StreamReadAll:
		for tag := command.TagStreamEntry; tag <= command.TagStreamSpare && err == nil; tag++ {
			err = kv.tagWalk(c.Key, h.CollHeader, tag, nil, false, func(k, v []byte) bool {
				pairs = append(pairs, append([]byte{tag}, k...), clone(v))
				return true
			})
		}
	default:
		return &command.Result{Code: command.CodeBadCommand}
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return &command.Result{Code: command.CodeOK, Version: e.Version, ExpiresAt: e.ExpiresAt, Fence: h.Count,
		Value: append(h.Encode(), command.EncodeList(pairs)...)}
}

// The applier's rows of this file's commands (commands.go joins them).
var streamApplies = applies{
	command.TypeStreamAdd:   {remembered: true, apply: (*applier).streamAdd, kv: (*applier).streamAddIn},
	command.TypeStreamTrim:  {remembered: true, apply: (*applier).streamTrimCmd, kv: (*applier).streamTrimIn},
	command.TypeStreamDel:   {remembered: true, apply: (*applier).streamDel, kv: (*applier).streamDelIn},
	command.TypeStreamSetID: {remembered: true, apply: (*applier).streamSetID, kv: (*applier).streamSetIDIn},
	command.TypeStreamRead:  {apply: (*applier).streamRead, kv: (*applier).streamReadIn},
}
