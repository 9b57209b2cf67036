package resp

import (
	"fmt"
	"math/rand/v2"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The set commands, with Redis 7.0's replies: a set is a collection as a
// hash is (commands_hash.go), its members with no value.

func init() {
	wr := func(name string, op command.Type, arity, first, last int, fn func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, flags: []string{"write"}, firstKey: first, lastKey: last, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	algebra := func(name string, mode command.CollReadMode) *redisCommand {
		return collRd(name, -2, -1, func(a [][]byte) plan { return planAlgebra(a[1:], mode, 0, false) })
	}
	store := func(name string, mode command.SetStoreMode) *redisCommand {
		return wr(name, command.TypeSetStore, -3, 1, -1, func(a [][]byte) plan { return planSetStore(a, mode) })
	}
	inter := collRd("sintercard", -3, -1, planSInterCard)
	inter.firstKey = 2
	register(
		wr("sadd", command.TypeCollPut, -3, 1, 1, planSAdd),
		wr("srem", command.TypeCollDel, -3, 1, 1, func(a [][]byte) plan { return planCollDel(a, true) }),
		wr("spop", command.TypeSetPop, -2, 1, 1, planSPop),
		wr("smove", command.TypeSetMove, 4, 1, 2, planSMove),
		store("sinterstore", command.StoreInter),
		store("sunionstore", command.StoreUnion),
		store("sdiffstore", command.StoreDiff),
		collRd("sismember", 3, 1, func(a [][]byte) plan {
			return readFields(a[1], true, a[2:3], func(w *writer, _ [][]byte, found []bool, _ bool) { w.integer(b2i(found[0])) })
		}),
		collRd("smismember", -3, 1, func(a [][]byte) plan {
			return readFields(a[1], true, a[2:], func(w *writer, _ [][]byte, found []bool, _ bool) {
				w.array(len(found))
				for _, f := range found {
					w.integer(b2i(f))
				}
			})
		}),
		collRd("scard", 2, 1, func(a [][]byte) plan { return readLen(a[1], true) }),
		collRd("smembers", 2, 1, func(a [][]byte) plan {
			return readAll(a[1], true, func(w *writer, p [][]byte) { answerHalf(w, p, 0, true) })
		}),
		collRd("srandmember", -2, 1, planSRandMember),
		collRd("sscan", -3, 1, func(a [][]byte) plan { return planCollScan(a, true) }),
		algebra("sinter", command.ReadInter),
		algebra("sunion", command.ReadUnion),
		algebra("sdiff", command.ReadDiff),
		inter,
	)
}

func planSAdd(a [][]byte) plan {
	if refusal := checkElems(a[2:], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.SetAddCommand(a[1], a[2:])
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// parsePopCount reads the count of a pop (SPOP, ZPOPMIN and ZPOPMAX,
// LPOP and RPOP: key [count]) as Redis 7.0 does: absent, it is none; a
// count that is not an integer of at least 0 (a word, a fraction, a
// negative, "-0", one past the int64 range) is "value is out of range,
// must be positive" whatever it is, and a further argument a syntax
// error (LPOP's arity refuses it first).
func parsePopCount(a [][]byte, none int64) (int64, string) {
	switch {
	case len(a) > 3:
		return 0, msgSyntax
	case len(a) < 3:
		return none, ""
	}
	n, ok := parseInt64(a[2])
	if !ok || n < 0 {
		return 0, msgNotPositive
	}
	return n, ""
}

// planSPop is SPOP key [count]: one member (nil without the key), or with
// a count a set of up to count.
func planSPop(a [][]byte) plan {
	count, refusal := parsePopCount(a, -1)
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.SetPopCommand(a[1], rand.Uint64(), count)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			var members [][]byte
			if res.Code != command.CodeNotFound {
				var err error
				if members, err = command.DecodeElems(res.Value); err != nil {
					w.errorLine(errorReply(err))
					return
				}
			}
			switch {
			case count >= 0:
				w.set(len(members))
				for _, m := range members {
					w.bulk(m)
				}
			case len(members) == 0:
				w.null()
			default:
				w.bulk(members[0])
			}
		})
	}}
}

// planSRandMember is SRANDMEMBER key [count].
func planSRandMember(a [][]byte) plan {
	if len(a) > 3 {
		return plan{err: msgSyntax}
	}
	if len(a) == 2 {
		return readRandom(a[1], true, 0, false, func(w *writer, pairs [][]byte, ok bool) {
			if !ok || len(pairs) == 0 {
				w.null()
				return
			}
			w.bulk(pairs[0])
		})
	}
	count, refusal := parseRandomCount(a[2])
	if refusal == "" {
		refusal = overRandomCount(count)
	}
	if refusal != "" {
		return plan{err: refusal}
	}
	return readRandom(a[1], true, count, true, func(w *writer, pairs [][]byte, _ bool) { answerHalf(w, pairs, 0, false) })
}

func planSMove(a [][]byte) plan {
	if refusal := checkElems(a[3:4], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.SetMoveCommand(a[1], a[2], a[3])
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// planAlgebra plans SINTER, SUNION, SDIFF (a set of the members) and
// SINTERCARD (card: their count, up to limit).
func planAlgebra(keys [][]byte, mode command.CollReadMode, limit int64, card bool) plan {
	if len(keys) > command.MaxCmdElems {
		return plan{err: fmt.Sprintf("ERR too many keys in one command: at most %d", command.MaxCmdElems)}
	}
	op := command.SetAlgebraCommand(keys, mode, limit)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) {
			if card {
				w.integer(decimal(res))
				return
			}
			members, err := command.DecodeElems(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			w.set(len(members))
			for _, m := range members {
				w.bulk(m)
			}
		})
	}}
}

// planSInterCard is SINTERCARD numkeys key [key ...] [LIMIT limit].
func planSInterCard(a [][]byte) plan {
	n, ok := parseInt64(a[1])
	switch {
	case !ok || n < 1:
		return plan{err: "ERR numkeys should be greater than 0"}
	case n > int64(len(a)-2):
		return plan{err: "ERR Number of keys can't be greater than number of args"}
	}
	keys := a[2 : 2+n]
	var limit int64
	for i := 2 + int(n); i < len(a); i += 2 {
		if !eq(string(a[i]), "limit") || i+1 >= len(a) {
			return plan{err: msgSyntax}
		}
		l, ok := parseInt64(a[i+1])
		if !ok || l < 0 {
			return plan{err: "ERR LIMIT can't be negative"}
		}
		limit = l
	}
	return planAlgebra(keys, command.ReadInterCard, limit, true)
}

func planSetStore(a [][]byte, mode command.SetStoreMode) plan {
	if len(a)-2 > command.MaxCmdElems {
		return plan{err: fmt.Sprintf("ERR too many keys in one command: at most %d", command.MaxCmdElems)}
	}
	op := command.SetStoreCommand(a[1], a[2:], mode)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerColl(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}
