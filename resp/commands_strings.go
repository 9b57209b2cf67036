package resp

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// Redis's older string commands, over the state machine's KV commands:
// GETSET, SETEX, PSETEX, GETEX, MSET, MSETNX, APPEND, SETRANGE,
// INCRBYFLOAT, and RENAME, RENAMENX and COPY.

func init() {
	wr := func(name string, op command.Type, arity, last, step int, fn func(*conn, [][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, firstKey: 1, lastKey: last, step: step, plan: fn}
	}
	register(
		wr("getset", command.TypeKVSet, 3, 1, 1, planGetSet),
		wr("setex", command.TypeKVSet, 4, 1, 1, func(c *conn, a [][]byte) plan { return planSetEx(c, a, "ex") }),
		wr("psetex", command.TypeKVSet, 4, 1, 1, func(c *conn, a [][]byte) plan { return planSetEx(c, a, "px") }),
		notInScripts(wr("getex", command.TypeKVExpire, -2, 1, 1, planGetEx)), // not yet proven in scripts against Redis
		wr("mset", command.TypeKVSet, -3, -1, 2, planMSet),
		notInScripts(wr("msetnx", command.TypeKVSet, -3, -1, 2, planMSetNX)), // its watches are not the sandbox's
		wr("append", command.TypeKVSetRange, 3, 1, 1, planAppend),
		wr("setrange", command.TypeKVSetRange, 4, 1, 1, planSetRange),
		wr("incrbyfloat", command.TypeKVIncrFloat, 3, 1, 1, planIncrByFloat),
		wr("rename", command.TypeKVRename, 3, 2, 1, func(c *conn, a [][]byte) plan { return planRename(c, a, command.RenamePlain) }),
		wr("renamenx", command.TypeKVRename, 3, 2, 1, func(c *conn, a [][]byte) plan { return planRename(c, a, command.RenameNX) }),
		wr("copy", command.TypeKVRename, -3, 2, 1, planCopy),
		wr("move", command.TypeKVRename, 3, 1, 1, planMove),
	)
}

// planGetSet is GETSET key value: SET key value GET (the lifetime goes).
func planGetSet(c *conn, a [][]byte) plan {
	op := command.KVSetCommand(command.KVSetRequest{Key: a[1], Value: a[2], ReturnOld: true})
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) { answerSet(w, true, r) }}
}

// planSetEx is SETEX key seconds value (opt "ex") or PSETEX key ms value
// ("px"): Redis's SET key value EX|PX n, with the command's own error.
func planSetEx(c *conn, a [][]byte, opt string) plan {
	n, ok := parseInt64(a[2])
	if !ok {
		return plan{err: msgNotInteger}
	}
	d, ok := expiryOf(opt, n, c.now())
	if !ok {
		return plan{err: "ERR invalid expire time in '" + map[string]string{"ex": "setex", "px": "psetex"}[opt] + "' command"}
	}
	op := command.KVSetCommand(command.KVSetRequest{Key: a[1], Value: a[3], TTL: d})
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) { answerSet(w, false, r) }}
}

// planGetEx is GETEX key [EX s|PX ms|EXAT t|PXAT t|PERSIST]: the value,
// and the key's lifetime changed in the same command
// (command.FlagExpireGet). As in Redis, an absent key answers nil before its
// expire time is looked at: a bad time is an error only for a key that
// exists, so it is a read in the log that answers one or the other.
func planGetEx(c *conn, a [][]byte) plan {
	var (
		opt     string // the expiry option given, the last of its value's
		val     []byte
		persist bool
	)
	for i := 2; i < len(a); i++ {
		s := string(a[i])
		switch {
		case eq(s, "persist") && opt == "": // PERSIST PERSIST is Redis's PERSIST
			persist = true
		case (eq(s, "ex") || eq(s, "px") || eq(s, "exat") || eq(s, "pxat")) && (opt == "" || eq(s, strings.ToLower(opt))) &&
			!persist && i+1 < len(a): // EX 1 EX 2 is EX 2, as in Redis
			i++
			opt, val = s, a[i]
		default:
			return plan{err: msgSyntax}
		}
	}
	n, ok := parseInt64(val)
	if opt != "" && !ok {
		return planExistsOr(a[1], msgNotInteger)
	}
	var op *command.Command
	switch {
	case persist:
		op = command.KVExpireCommand(a[1], 0, command.FlagExpireGet)
	case opt == "":
		return plan{ops: []*command.Command{command.KVReadCommand(a[1], true)}, answer: func(w *writer, r []storeapi.OpResult) {
			e, ok, err := readOf(r[0])
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			answerGet(w, e, ok)
		}}
	default:
		now := c.now()
		d, ok := expiryOf(opt, n, now)
		if !ok {
			return planExistsOr(a[1], "ERR invalid expire time in 'getex' command")
		}
		flags := command.FlagExpireGet
		if (eq(opt, "exat") && n <= now.Unix()) || (eq(opt, "pxat") && n <= now.UnixMilli()) {
			flags, d = flags|command.FlagExpireNow, 0 // already past: the key goes, as in Redis
		}
		op = command.KVExpireCommand(a[1], d, flags)
	}
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) {
			if code == command.CodeNotFound {
				w.null()
				return
			}
			w.bulk(r[0].Res.Value)
		}, command.CodeNotFound, command.CodeUnchanged)
	}}
}

// planExistsOr answers nil when key is absent and refusal when it
// exists: a read in the log, so it holds inside a transaction too.
func planExistsOr(key []byte, refusal string) plan {
	return plan{ops: []*command.Command{command.KVReadCommand(key, false)}, answer: func(w *writer, r []storeapi.OpResult) {
		_, ok, err := readOf(r[0])
		switch {
		case err != nil:
			w.errorLine(errorReply(err))
		case ok:
			w.errorLine(refusal)
		default:
			w.null()
		}
	}}
}

// msetOps are MSET's writes, one per pair; the refusal of an odd count.
func msetOps(a [][]byte, name string) ([]*command.Command, string) {
	if len(a)%2 != 1 {
		return nil, "ERR wrong number of arguments for '" + name + "' command"
	}
	ops := make([]*command.Command, 0, len(a)/2)
	for i := 1; i < len(a); i += 2 {
		ops = append(ops, command.KVSetCommand(command.KVSetRequest{Key: a[i], Value: a[i+1]}))
	}
	return ops, ""
}

// planMSet is MSET k v [k v ...]: its writes apply together, as one
// transaction of the state machine (inside MULTI, as part of that one), so
// no reader sees some of them and not the others.
func planMSet(c *conn, a [][]byte) plan {
	ops, refusal := msetOps(a, "mset")
	if refusal != "" {
		return plan{err: refusal}
	}
	return plan{ops: ops, atomic: true, answer: func(w *writer, r []storeapi.OpResult) {
		if err := setsFailed(r); err != nil {
			w.errorLine(errorReply(err))
			return
		}
		w.ok()
	}}
}

// setsFailed is the first error among MSET's writes, nil when all applied.
func setsFailed(r []storeapi.OpResult) error {
	for _, x := range r {
		if x.Err != nil {
			return x.Err
		}
		if x.Res.Code != command.CodeOK && x.Res.Code != command.CodeCreated {
			return x.Res.Err()
		}
	}
	return nil
}

// planMSetNX is MSETNX k v [k v ...]: all the keys are set, or none when
// one of them exists (1 or 0). One transaction of the state machine that
// watches every key as absent: it applies whole or not at all. It is a
// transaction of its own, so it cannot be queued in one.
func planMSetNX(c *conn, a [][]byte) plan {
	ops, refusal := msetOps(a, "msetnx")
	if refusal != "" {
		return plan{err: refusal}
	}
	watches := make([]command.Watch, len(ops))
	for i, op := range ops {
		watches[i] = command.Watch{Key: op.Key} // absent
	}
	return plan{ops: ops, atomic: true, watches: watches, conflict: func(w *writer) { w.integer(0) },
		answer: func(w *writer, r []storeapi.OpResult) {
			if err := setsFailed(r); err != nil {
				w.errorLine(errorReply(err))
				return
			}
			w.integer(1)
		}}
}

// atomically is an atomic plan made to run alone: its ops go to the store
// as one transaction (command.KVTxCommand) under its watches.
func (c *conn) atomically(p plan) plan {
	return plan{direct: func(ctx context.Context, w *writer) {
		res, err := c.applyTx(ctx, "", command.TxRequest{Watches: p.watches, Commands: p.ops,
			ReplyBudget: c.s.cfg.MaxBulk - txResultOverhead*len(p.ops)}, func() {})
		if err == nil && res.Code == command.CodeVersionMismatch && p.conflict != nil {
			p.conflict(w)
			return
		}
		var results []*command.Result
		if err == nil {
			if results, err = command.TxResults(res); err == nil && len(results) != len(p.ops) {
				err = fmt.Errorf("%w: %d results for %d commands", command.ErrBadCommand, len(results), len(p.ops))
			}
		}
		if err != nil {
			w.errorLine(errorReply(err))
			return
		}
		rs := make([]storeapi.OpResult, len(results))
		for i := range rs {
			rs[i].Res = results[i]
		}
		p.answer(w, rs)
	}}
}

// The edits that depend on the value: one state machine command each
// (kv_setrange, kv_incrfloat), so racing edits never lose one.

// planAppend is APPEND key value: the value's new length.
func planAppend(c *conn, a [][]byte) plan {
	return plan{ops: []*command.Command{command.KVAppendCommand(a[1], a[2], uint64(c.s.cfg.MaxBulk))}, answer: answerLength}
}

// planSetRange is SETRANGE key offset value: the value's new length.
// Values may grow to the listener's bulk bound (Redis's
// proto-max-bulk-len).
func planSetRange(c *conn, a [][]byte) plan {
	off, ok := parseInt64(a[2])
	switch {
	case !ok:
		return plan{err: msgNotInteger}
	case off < 0:
		return plan{err: "ERR offset is out of range"}
	}
	return plan{ops: []*command.Command{command.KVSetRangeCommand(a[1], uint64(off), a[3], uint64(c.s.cfg.MaxBulk))}, answer: answerLength}
}

func answerLength(w *writer, r []storeapi.OpResult) {
	answerCode(w, r[0], func(command.Code) {
		n, _ := strconv.ParseInt(string(r[0].Res.Value), 10, 64)
		w.integer(n)
	}, command.CodeCreated)
}

// planIncrByFloat is INCRBYFLOAT key increment: the new value, as Redis
// prints it (command.KVIncrFloatCommand).
func planIncrByFloat(c *conn, a [][]byte) plan {
	if _, err := command.ParseLongDouble(a[2]); err != nil {
		return plan{err: msgNotFloat}
	}
	return plan{ops: []*command.Command{command.KVIncrFloatCommand(a[1], a[2])}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(command.Code) { w.bulk(r[0].Res.Value) }, command.CodeCreated)
	}}
}

// planRename is RENAME src dst (mode command.RenamePlain) or RENAMENX
// (command.RenameNX): one command that moves the value and its lifetime.
func planRename(c *conn, a [][]byte, mode command.RenameMode) plan {
	if err := storeapi.CheckKVKey(a[2]); err != nil {
		return plan{err: errorReply(err)}
	}
	return plan{ops: []*command.Command{command.KVRenameCommand(a[1], c.key(a[2]), mode, false)}, answer: func(w *writer, r []storeapi.OpResult) {
		switch {
		case r[0].Err == nil && r[0].Res.Code == command.CodeNotFound:
			w.errorLine("ERR no such key")
		case mode == command.RenameNX:
			answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeOK))) }, command.CodeExists)
		default:
			answerCode(w, r[0], func(command.Code) { w.ok() })
		}
	}}
}

// planCopy is COPY src dst [DB n] [REPLACE]: 1 when copied, 0 when the
// source is absent or the destination exists (without REPLACE); DB names
// the destination's keyspace (the connection's by default).
func planCopy(c *conn, a [][]byte) plan {
	replace, db := false, c.db
	for i := 3; i < len(a); i++ {
		switch s := string(a[i]); {
		case eq(s, "replace"):
			replace = true
		case eq(s, "db") && i+1 < len(a):
			i++
			var refusal string
			if db, refusal = parseDB(a[i]); refusal != "" {
				return plan{err: refusal}
			}
		default:
			return plan{err: msgSyntax}
		}
	}
	if string(a[1]) == string(a[2]) && db == c.db {
		return plan{err: msgSameObject}
	}
	if err := storeapi.CheckKVKey(a[2]); err != nil {
		return plan{err: errorReply(err)}
	}
	dst := command.KeyspaceKey(db, a[2])
	return plan{ops: []*command.Command{command.KVRenameCommand(a[1], dst, command.RenameCopy, replace)}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeOK))) }, command.CodeNotFound, command.CodeExists)
	}}
}

// planMove is MOVE key db: 1 when the key moved, with its lifetime, to
// keyspace db; 0 when it is absent or db holds the key already (RENAMENX
// across keyspaces, one command).
func planMove(c *conn, a [][]byte) plan {
	db, refusal := parseDB(a[2])
	switch {
	case refusal != "":
		return plan{err: refusal}
	case db == c.db:
		return plan{err: msgSameObject}
	}
	dst := command.KeyspaceKey(db, a[1])
	return plan{ops: []*command.Command{command.KVRenameCommand(a[1], dst, command.RenameNX, false)}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeOK))) }, command.CodeNotFound, command.CodeExists)
	}}
}
