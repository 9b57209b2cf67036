package resp

import (
	"context"
	"fmt"
	"math/big"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The list commands, with Redis 7.0's replies. A list is a KV key of the
// list kind (package fsm's list.go): reads answer from the key's entry,
// writes are the state machine's list commands. BLPOP and BRPOP block
// here (blocking.go); inside MULTI they are LPOP and RPOP of the first
// non-empty key, and scripts may not call them, as in Redis 7.0.

const (
	msgNotPositive = "ERR value is out of range, must be positive"
	msgTimeoutNaN  = "ERR timeout is not a float or out of range"
	msgTimeoutNeg  = "ERR timeout is negative"
)

// listRead is a list read's command: fn answers from the key's entry,
// read here (after the pipeline's barrier) or in the log inside a
// transaction; args, when set, refuses bad arguments first, before the
// key is read, as Redis does.
func listRead(name string, arity int, fn func(w *writer, a [][]byte, e command.KVEntry, ok bool), args func(a [][]byte) string) *redisCommand {
	return &redisCommand{name: name, op: command.TypeKVRead, arity: arity, firstKey: 1, lastKey: 1, step: 1,
		read: func(c *conn, ctx context.Context, a [][]byte) {
			if args != nil {
				if refusal := args(a); refusal != "" {
					c.w.errorLine(refusal)
					return
				}
			}
			e, ok, err := c.local(ctx, a[1])
			if err != nil {
				c.w.errorLine(errorReply(err))
				return
			}
			fn(&c.w, a, e, ok)
		},
		txRead: func(a [][]byte) plan {
			if args != nil {
				if refusal := args(a); refusal != "" {
					return plan{err: refusal}
				}
			}
			return txReads(a[1:2], true, func(w *writer, es []command.KVEntry, oks []bool) { fn(w, a, es[0], oks[0]) })
		}}
}

// listWrite is a list write's command of op, its keys from the first
// argument to last (negative: counted from the end).
func listWrite(name string, op command.Type, arity, last int, fn func(*conn, [][]byte) plan, flags ...string) *redisCommand {
	return &redisCommand{name: name, op: op, arity: arity, flags: flags, firstKey: 1, lastKey: last, step: 1, plan: fn}
}

func init() {
	rd, wr := listRead, listWrite
	register(
		rd("llen", 2, answerLLen, nil),
		rd("lrange", 4, answerLRange, func(a [][]byte) string { return intArgs(a[2:4]) }),
		rd("lindex", 3, answerLIndex, nil),
		wr("lpush", command.TypeListPush, -3, 1, func(c *conn, a [][]byte) plan { return planPush(a, false, false) }),
		wr("rpush", command.TypeListPush, -3, 1, func(c *conn, a [][]byte) plan { return planPush(a, true, false) }),
		wr("lpushx", command.TypeListPush, -3, 1, func(c *conn, a [][]byte) plan { return planPush(a, false, true) }),
		wr("rpushx", command.TypeListPush, -3, 1, func(c *conn, a [][]byte) plan { return planPush(a, true, true) }),
		wr("lpop", command.TypeListPop, -2, 1, func(c *conn, a [][]byte) plan { return planPop(a, false) }),
		wr("rpop", command.TypeListPop, -2, 1, func(c *conn, a [][]byte) plan { return planPop(a, true) }),
		wr("lrem", command.TypeListRem, 4, 1, planLRem),
		wr("ltrim", command.TypeListTrim, 4, 1, planLTrim),
		// A blocking pop waits for a push: never in a script's sandbox.
		notInScripts(wr("blpop", command.TypeListPop, -3, -2, func(c *conn, a [][]byte) plan { return planBlockingPop(a, false) })),
		notInScripts(wr("brpop", command.TypeListPop, -3, -2, func(c *conn, a [][]byte) plan { return planBlockingPop(a, true) })),
	)
}

// intArgs: each is an integer, or Redis's refusal.
func intArgs(a [][]byte) string {
	for _, b := range a {
		if _, ok := parseInt64(b); !ok {
			return msgNotInteger
		}
	}
	return ""
}

// listElems is the key's list: false (and the reply written) when the
// key holds another kind or a list that does not decode.
func listElems(w *writer, e command.KVEntry) ([][]byte, bool) {
	if e.Kind != command.KindList {
		w.errorLine(msgWrongType)
		return nil, false
	}
	elems, err := command.DecodeList(e.Value)
	if err != nil {
		w.errorLine(errorReply(err))
		return nil, false
	}
	return elems, true
}

func answerLLen(w *writer, _ [][]byte, e command.KVEntry, ok bool) {
	if !ok {
		w.integer(0)
		return
	}
	if elems, ok := listElems(w, e); ok {
		w.integer(int64(len(elems)))
	}
}

func answerLRange(w *writer, a [][]byte, e command.KVEntry, ok bool) {
	if !ok {
		w.array(0)
		return
	}
	elems, ok := listElems(w, e)
	if !ok {
		return
	}
	start, _ := parseInt64(a[2])
	stop, _ := parseInt64(a[3])
	lo, hi, ok := command.ListRange(len(elems), start, stop)
	if !ok {
		w.array(0)
		return
	}
	w.array(hi - lo)
	for _, el := range elems[lo:hi] {
		w.bulk(el)
	}
}

// answerLIndex: Redis reads the key before the index, so an absent key
// answers nil whatever the index.
func answerLIndex(w *writer, a [][]byte, e command.KVEntry, ok bool) {
	if !ok {
		w.null()
		return
	}
	elems, ok := listElems(w, e)
	if !ok {
		return
	}
	i, ok := parseInt64(a[2])
	if !ok {
		w.errorLine(msgNotInteger)
		return
	}
	if i < 0 {
		i += int64(len(elems))
	}
	if i < 0 || i >= int64(len(elems)) {
		w.null()
		return
	}
	w.bulk(elems[i])
}

// answerList answers a list command's result: ok writes the success,
// or an outcome that is an answer of its own (no key, no pivot).
func answerList(w *writer, r storeapi.OpResult, ok func(res *command.Result)) {
	switch {
	case r.Err != nil:
		w.errorLine(errorReply(r.Err))
	case r.Res.Code == command.CodeTooLong:
		w.errorLine("ERR " + command.ErrListTooLong.Error())
	case r.Res.Code == command.CodeOK || r.Res.Code == command.CodeCreated || r.Res.Code == command.CodeNotFound ||
		r.Res.Code == command.CodeUnchanged:
		ok(r.Res)
	default:
		w.errorLine(errorReply(r.Res.Err()))
	}
}

// decimal is a result's decimal count.
func decimal(res *command.Result) int64 {
	n, _ := parseInt64(res.Value)
	return n
}

func planPush(a [][]byte, right, existing bool) plan {
	op := command.ListPushCommand(a[1], a[2:], right, existing)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// planPop is LPOP key [count] and RPOP: one element (nil without the
// key), or with a count an array of up to count (a null array without
// the key).
func planPop(a [][]byte, right bool) plan {
	if len(a) > 3 {
		return plan{err: fmt.Sprintf("ERR wrong number of arguments for '%s' command", lower(a[0]))}
	}
	count, refusal := parsePopCount(a, -1)
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.ListPopCommand(a[1:2], right, count)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				if count >= 0 {
					w.nullArray()
				} else {
					w.null()
				}
				return
			}
			_, elems, err := command.ListPopped(res)
			switch {
			case err != nil:
				w.errorLine(errorReply(err))
			case count < 0:
				w.bulk(elems[0])
			default:
				w.array(len(elems))
				for _, el := range elems {
					w.bulk(el)
				}
			}
		})
	}}
}

func planLRem(_ *conn, a [][]byte) plan {
	count, ok := parseInt64(a[2])
	if !ok {
		return plan{err: msgNotInteger}
	}
	op := command.ListRemCommand(a[1], a[3], count)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

func planLTrim(_ *conn, a [][]byte) plan {
	if refusal := intArgs(a[2:4]); refusal != "" {
		return plan{err: refusal}
	}
	start, _ := parseInt64(a[2])
	stop, _ := parseInt64(a[3])
	op := command.ListTrimCommand(a[1], start, stop)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(*command.Result) { w.ok() })
	}}
}

// planBlockingPop is BLPOP key [key ...] timeout and BRPOP: a pop from
// the first key that exists, answered [key, element]; when none does, the
// connection waits (blocking.go) up to the timeout (seconds, 0: for
// ever) for a push, and answers a null array if none came. The plan's
// ops are the pop, which MULTI runs as it is: there an empty list answers
// the null array at once, as in Redis.
func planBlockingPop(a [][]byte, right bool) plan {
	block, refusal := blockArgs(a)
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.ListPopCommand(block.keys, right, -1)
	return plan{ops: []*command.Command{op}, answer: answerBlockingPop, block: block}
}

// blockArgs reads BLPOP's and BZPOPMIN's arguments, key [key ...]
// timeout, the timeout first, as Redis reads them.
func blockArgs(a [][]byte) (*blockSpec, string) {
	wait, forever, refusal := parseTimeout(a[len(a)-1])
	if refusal != "" {
		return nil, refusal
	}
	keys := a[1 : len(a)-1]
	for _, k := range keys[1:] { // the pipeline checks the first, the op's key
		if err := storeapi.CheckKVKey(k); err != nil {
			return nil, errorReply(err)
		}
	}
	return &blockSpec{keys: keys, wait: wait, forever: forever}, ""
}

// answerBlockingPop: [key, element], or a null array when no key had one.
func answerBlockingPop(w *writer, r []storeapi.OpResult) { answerKeyPop(w, r[0], false) }

// answerKeyPop answers a pop from the first of several keys that holds a
// list: [key, element], or nested (LMPOP's) [key, [element ...]] in pop
// order; a null array when none did.
func answerKeyPop(w *writer, r storeapi.OpResult, nested bool) {
	answerList(w, r, func(res *command.Result) {
		if res.Code == command.CodeNotFound {
			w.nullArray()
			return
		}
		key, elems, err := command.ListPopped(res)
		if err != nil {
			w.errorLine(errorReply(err))
			return
		}
		_, key, _ = command.KeyspaceOf(key) // the client's key, not as stored
		w.array(2)
		w.bulk(key)
		if !nested {
			w.bulk(elems[0])
			return
		}
		w.array(len(elems))
		for _, el := range elems {
			w.bulk(el)
		}
	})
}

// maxWait is the longest wait a timer is set for; a longer timeout (Redis
// takes up to about 292 million years) waits for ever.
const maxWait = 100 * 365 * 24 * 3600 * 1000 // milliseconds

// parseTimeout reads a blocking timeout as Redis 7.0 does
// (getTimeoutFromObjectOrReply): a number as strtold reads it (NaN
// refused), in seconds, made milliseconds in long double and rounded up
// (ceill), so 0.0001 waits a millisecond, as does 0.001 (a long double a
// hair under it), and -0.0001 or -0.001 is 0: for ever; a negative one, an
// infinite one or one whose milliseconds overflow a 64-bit integer (which
// C's conversion makes negative) is "negative".
func parseTimeout(b []byte) (ms int64, forever bool, refusal string) {
	f, err := command.ParseLongDouble(b)
	if err != nil {
		return 0, false, msgTimeoutNaN
	}
	if f.IsInf() {
		return 0, false, msgTimeoutNeg
	}
	f.Mul(f, big.NewFloat(1000))
	i, acc := f.Int(nil) // truncated toward zero: below f when f > 0 has a fraction
	if acc == big.Below {
		i.Add(i, big.NewInt(1))
	}
	if !i.IsInt64() || i.Int64() < 0 {
		return 0, false, msgTimeoutNeg
	}
	ms = i.Int64()
	if ms == 0 || ms > maxWait {
		return 0, true, ""
	}
	return ms, false, ""
}

// lower is an ASCII lowercase copy of a command name.
func lower(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		out[i] = c
	}
	return string(out)
}
