package resp

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The hash commands, with Redis 7.0's replies. A hash is a KV key of the
// hash kind whose fields are elements of their own (package command's
// coll.go): writes are the state machine's collection commands; reads are
// its collection reads (command.TypeCollRead), answered here from this
// node's state after the pipeline's barrier, inside MULTI as reads in the
// log, and in a script from its sandbox. A random choice (HRANDFIELD,
// SRANDMEMBER, SPOP) is drawn from a seed the command carries, so every
// replica draws the same.

const (
	msgHashNotInt   = "ERR hash value is not an integer"
	msgHashNotFloat = "ERR hash value is not a float"
	msgNotFinite    = "ERR increment would produce NaN or Infinity"
	msgNaNIncr      = "ERR value is NaN or Infinity"
	msgOutOfRange   = "ERR value is out of range"
	msgLongRange    = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
)

// maxRandomCount bounds HRANDFIELD's and SRANDMEMBER's count with
// repeats (a negative one): the reply is that many elements, whatever the
// collection holds. Redis takes up to 2^63.
const maxRandomCount = command.MaxCollElems

// maxReadReply bounds what one collection read outside a transaction may
// answer; the connection's budget bounds what it holds (budget.go).
const maxReadReply = math.MaxInt32

func init() {
	wr := func(name string, op command.Type, arity, last int, fn func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, flags: []string{"write"}, firstKey: 1, lastKey: last, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	register(
		wr("hset", command.TypeCollPut, -4, 1, func(a [][]byte) plan { return planHSet(a, false) }),
		wr("hmset", command.TypeCollPut, -4, 1, func(a [][]byte) plan { return planHSet(a, true) }),
		wr("hsetnx", command.TypeCollPut, 4, 1, planHSetNX),
		wr("hdel", command.TypeCollDel, -3, 1, func(a [][]byte) plan { return planCollDel(a, false) }),
		wr("hincrby", command.TypeHashIncr, 4, 1, planHIncrBy),
		wr("hincrbyfloat", command.TypeHashIncr, 4, 1, planHIncrByFloat),
		collRd("hget", 3, 1, func(a [][]byte) plan {
			return readFields(a[1], false, a[2:3], func(w *writer, vals [][]byte, found []bool, _ bool) { bulkOrNull(w, vals[0], found[0]) })
		}),
		collRd("hmget", -3, 1, func(a [][]byte) plan {
			return readFields(a[1], false, a[2:], func(w *writer, vals [][]byte, found []bool, _ bool) {
				w.array(len(vals))
				for i := range vals {
					bulkOrNull(w, vals[i], found[i])
				}
			})
		}),
		collRd("hexists", 3, 1, func(a [][]byte) plan {
			return readFields(a[1], false, a[2:3], func(w *writer, _ [][]byte, found []bool, _ bool) { w.integer(b2i(found[0])) })
		}),
		collRd("hstrlen", 3, 1, func(a [][]byte) plan {
			return readFields(a[1], false, a[2:3], func(w *writer, vals [][]byte, _ []bool, _ bool) { w.integer(int64(len(vals[0]))) })
		}),
		collRd("hlen", 2, 1, func(a [][]byte) plan { return readLen(a[1], false) }),
		collRd("hgetall", 2, 1, func(a [][]byte) plan {
			return readAll(a[1], false, func(w *writer, pairs [][]byte) {
				w.mapHeader(len(pairs) / 2)
				for _, p := range pairs {
					w.bulk(p)
				}
			})
		}),
		collRd("hkeys", 2, 1, func(a [][]byte) plan {
			return readAll(a[1], false, func(w *writer, p [][]byte) { answerHalf(w, p, 0, false) })
		}),
		collRd("hvals", 2, 1, func(a [][]byte) plan {
			return readAll(a[1], false, func(w *writer, p [][]byte) { answerHalf(w, p, 1, false) })
		}),
		collRd("hrandfield", -2, 1, planHRandField),
		collRd("hscan", -3, 1, func(a [][]byte) plan { return planCollScan(a, false) }),
	)
}

// collRd is a read of a hash or a set: mk plans its collection read and
// answer, run here, in the sandbox, or inside MULTI (txRead).
func collRd(name string, arity, last int, mk func(a [][]byte) plan) *redisCommand {
	return &redisCommand{name: name, op: command.TypeCollRead, arity: arity, flags: []string{"readonly"}, firstKey: 1, lastKey: last, step: 1,
		read: func(c *conn, ctx context.Context, a [][]byte) { c.runRead(ctx, mk(a)) }, txRead: mk}
}

// runRead runs a plan of reads: from the script's sandbox in a script,
// else from this node's applied state (the pipeline ran the barrier that
// makes it linearizable, unless READONLY), in one read.
func (c *conn) runRead(_ context.Context, p plan) {
	p = c.inKeyspace(p)
	if p.err != "" {
		c.w.errorLine(p.err)
		return
	}
	res := make([]storeapi.OpResult, len(p.ops))
	if c.script != nil {
		for i, op := range p.ops {
			res[i].Res, res[i].Err = c.script.sb.Apply(op)
		}
		p.answer(&c.w, res)
		return
	}
	r, err := c.s.store.LocalTx(command.TxRequest{Commands: p.ops, ReplyBudget: maxReadReply})
	var results []*command.Result
	if err == nil {
		err = r.Err()
	}
	if err == nil {
		err = c.hold(len(r.Value))
	}
	if err == nil {
		if results, err = command.TxResults(r); err == nil && len(results) != len(p.ops) {
			err = fmt.Errorf("%w: %d results for %d commands", command.ErrBadCommand, len(results), len(p.ops))
		}
	}
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	for i := range res {
		res[i].Res = results[i]
	}
	p.answer(&c.w, res)
}

// answerColl answers a collection command's result: ok writes the
// success (CodeOK, CodeCreated, CodeNotFound: an absent key).
func answerColl(w *writer, r storeapi.OpResult, ok func(res *command.Result)) {
	if r.Err != nil {
		w.errorLine(errorReply(r.Err))
		return
	}
	switch r.Res.Code {
	case command.CodeOK, command.CodeCreated, command.CodeNotFound:
		ok(r.Res)
	case command.CodeTooLong:
		w.errorLine("ERR " + command.ErrCollTooLarge.Error())
	case command.CodeNotInteger:
		w.errorLine(msgHashNotInt)
	case command.CodeOverflow:
		w.errorLine(msgOverflow)
	case command.CodeNotFloat:
		w.errorLine(msgHashNotFloat)
	case command.CodeNotFinite:
		w.errorLine(msgNotFinite)
	default:
		w.errorLine(errorReply(r.Res.Err()))
	}
}

// checkElems refuses fields past a field's bound, and more than a
// command carries.
func checkElems(elems [][]byte, step int) string {
	if len(elems) > command.MaxCmdElems {
		return fmt.Sprintf("ERR too many fields or members in one command: at most %d", command.MaxCmdElems/step)
	}
	for i := 0; i < len(elems); i += step {
		if len(elems[i]) > command.MaxFieldLen {
			return "ERR " + command.ErrFieldTooLong.Error()
		}
	}
	return ""
}

func planHSet(a [][]byte, hmset bool) plan {
	if len(a)%2 != 0 {
		return plan{err: fmt.Sprintf("ERR wrong number of arguments for '%s' command", lower(a[0]))}
	}
	if refusal := checkElems(a[2:], 2); refusal != "" {
		return plan{err: refusal}
	}
	op := command.HashSetCommand(a[1], a[2:], false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if hmset {
				w.ok()
				return
			}
			w.integer(decimal(res))
		})
	}}
}

func planHSetNX(a [][]byte) plan {
	if refusal := checkElems(a[2:], 2); refusal != "" {
		return plan{err: refusal}
	}
	op := command.HashSetCommand(a[1], a[2:], true)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

func planCollDel(a [][]byte, set bool) plan {
	if refusal := checkElems(a[2:], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.CollDelCommand(a[1], a[2:], set)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

func planHIncrBy(a [][]byte) plan {
	if _, ok := parseInt64(a[3]); !ok {
		return plan{err: msgNotInteger}
	}
	if refusal := checkElems(a[2:3], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.HashIncrCommand(a[1], a[2], a[3], false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

func planHIncrByFloat(a [][]byte) plan {
	f, err := command.ParseLongDouble(a[3])
	switch {
	case err != nil:
		return plan{err: msgNotFloat}
	case f.IsInf():
		return plan{err: msgNaNIncr}
	}
	if refusal := checkElems(a[2:3], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.HashIncrCommand(a[1], a[2], a[3], true)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.bulk(res.Value) })
	}}
}

func b2i(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

func bulkOrNull(w *writer, v []byte, ok bool) {
	if ok {
		w.bulk(v)
		return
	}
	w.null()
}

// readFields plans a read of fields of a hash (set: members of a set);
// answer is given a value and whether it is there for each (none there
// for an absent key, and ok false).
func readFields(key []byte, set bool, fields [][]byte, answer func(w *writer, vals [][]byte, found []bool, ok bool)) plan {
	if refusal := checkElems(fields, 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.CollReadCommand(key, set, command.ReadFields, fields, 0, 0, false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				answer(w, make([][]byte, len(fields)), make([]bool, len(fields)), false)
				return
			}
			vals, found, err := command.DecodeFound(res.Value)
			if err != nil || len(vals) != len(fields) {
				w.errorLine(errorReply(command.ErrBadCommand))
				return
			}
			answer(w, vals, found, true)
		})
	}}
}

// readLen plans HLEN, SCARD: the elements, 0 for an absent key.
func readLen(key []byte, set bool) plan {
	op := command.CollReadCommand(key, set, command.ReadFields, nil, 0, 0, false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(int64(res.Fence)) })
	}}
}

// readAll plans a read of every element: answer is given the fields and
// values, alternating (none for an absent key).
func readAll(key []byte, set bool, answer func(w *writer, pairs [][]byte)) plan {
	op := command.CollReadCommand(key, set, command.ReadAll, nil, 0, 0, false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				answer(w, nil)
				return
			}
			_, pairs, err := command.DecodeWholeColl(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			answer(w, pairs)
		})
	}}
}

// answerHalf answers the fields (half 0) or the values (1) of pairs, an
// array (as a set with set: RESP3's ~).
func answerHalf(w *writer, pairs [][]byte, half int, set bool) {
	if set {
		w.set(len(pairs) / 2)
	} else {
		w.array(len(pairs) / 2)
	}
	for i := half; i < len(pairs); i += 2 {
		w.bulk(pairs[i])
	}
}

// parseRandomCount reads HRANDFIELD's and SRANDMEMBER's count as Redis
// 7.0 does (-LONG_MAX to LONG_MAX), and ours: a count with repeats is at
// most maxRandomCount.
func parseRandomCount(b []byte) (int64, string) {
	n, ok := parseInt64(b)
	switch {
	case !ok:
		return 0, msgNotInteger
	case n == math.MinInt64:
		return 0, msgLongRange
	}
	return n, ""
}

// overRandomCount is our bound's refusal, checked after Redis's own.
func overRandomCount(n int64) string {
	if n < -maxRandomCount {
		return fmt.Sprintf("ERR a count with repeats is at most %d here", maxRandomCount)
	}
	return ""
}

// planHRandField is HRANDFIELD key [count [WITHVALUES]].
func planHRandField(a [][]byte) plan {
	if len(a) == 2 {
		return readRandom(a[1], false, 0, false, func(w *writer, pairs [][]byte, ok bool) {
			if !ok || len(pairs) == 0 {
				w.null()
				return
			}
			w.bulk(pairs[0])
		})
	}
	count, refusal := parseRandomCount(a[2])
	if refusal != "" {
		return plan{err: refusal}
	}
	withValues := false
	switch {
	case len(a) > 4 || (len(a) == 4 && !eq(string(a[3]), "withvalues")):
		return plan{err: msgSyntax}
	case len(a) == 4:
		withValues = true
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			return plan{err: msgOutOfRange}
		}
	}
	if refusal := overRandomCount(count); refusal != "" {
		return plan{err: refusal}
	}
	return readRandom(a[1], false, count, true, func(w *writer, pairs [][]byte, _ bool) {
		switch {
		case !withValues:
			answerHalf(w, pairs, 0, false)
		case w.proto >= 3:
			w.array(len(pairs) / 2)
			for i := 0; i < len(pairs); i += 2 {
				w.array(2)
				w.bulk(pairs[i])
				w.bulk(pairs[i+1])
			}
		default:
			w.array(len(pairs))
			for _, p := range pairs {
				w.bulk(p)
			}
		}
	})
}

// readRandom plans a random read: answer is given the elements chosen,
// fields and values alternating, and whether the key exists.
func readRandom(key []byte, set bool, count int64, hasCount bool, answer func(w *writer, pairs [][]byte, ok bool)) plan {
	op := command.CollReadCommand(key, set, command.ReadRandom, nil, int64(rand.Uint64()), count, hasCount)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				answer(w, nil, false)
				return
			}
			pairs, err := command.DecodeElems(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			answer(w, pairs, true)
		})
	}}
}

// planCollScan is HSCAN and SSCAN key cursor [MATCH pattern] [COUNT n]:
// the cursor is an element's order (package command's ElemOrder), the
// same on every node; a hash or a set of Redis's small encoding answers
// whole, cursor 0, as Redis's does. As in Redis, the cursor is read
// first, then the key (absent: an empty scan), then the options.
func planCollScan(a [][]byte, set bool) plan { return planScanOf(a, set, nil) }

// planScanOf is planCollScan; value, if not nil, is how an element's
// value is answered (a sorted set's score), and op's flags are a sorted
// set's.
func planScanOf(a [][]byte, set bool, value func([]byte) []byte) plan {
	cursor, ok := parseCursor(a[2])
	if !ok {
		return plan{err: "ERR invalid cursor"}
	}
	count, match, refusal := int64(10), []byte(nil), ""
	for i := 3; i < len(a) && refusal == ""; i += 2 {
		switch opt := string(a[i]); {
		case eq(opt, "count") && i+1 < len(a):
			n, ok := parseInt64(a[i+1])
			switch {
			case !ok:
				refusal = msgNotInteger
			case n < 1:
				refusal = msgSyntax
			}
			count = n
		case eq(opt, "match") && i+1 < len(a):
			match = a[i+1]
			if string(match) == "*" {
				match = nil
			}
		default:
			refusal = msgSyntax
		}
	}
	op := command.CollReadCommand(a[1], set, command.ReadScan, nil, int64(cursor), min(max(count, 1), command.MaxScanLook), true)
	if value != nil {
		op = command.ZScanCommand(a[1], cursor, min(max(count, 1), command.MaxScanLook))
	}
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.array(2)
				w.bulkString("0")
				w.array(0)
				return
			}
			if refusal != "" {
				w.errorLine(refusal)
				return
			}
			if len(res.Value) < 8 {
				w.errorLine(errorReply(command.ErrBadCommand))
				return
			}
			pairs, err := command.DecodeElems(res.Value[8:])
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			var keep [][]byte
			for i := 0; i+1 < len(pairs); i += 2 {
				if match == nil || globMatch(match, pairs[i]) {
					keep = append(keep, pairs[i])
					switch {
					case value != nil:
						keep = append(keep, value(pairs[i+1]))
					case !set:
						keep = append(keep, pairs[i+1])
					}
				}
			}
			w.array(2)
			w.bulkString(strconv.FormatUint(beUint64(res.Value), 10))
			w.array(len(keep))
			for _, k := range keep {
				w.bulk(k)
			}
		})
	}}
}

func beUint64(b []byte) uint64 {
	var n uint64
	for _, c := range b[:8] {
		n = n<<8 | uint64(c)
	}
	return n
}
