package resp

import (
	"encoding/binary"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The sorted set's pops from the first of several keys, with Redis 7.0's
// replies: ZMPOP, and the blocking forms BZPOPMIN, BZPOPMAX and BZMPOP,
// which wait as BLPOP does (blocking.go) for a sorted set on one of their
// keys, written from any node. Each is one state machine command
// (command.ZPopCommand): a member is popped once, by one client. Inside
// MULTI the blocking forms answer at once, a null array when no key holds
// a sorted set; scripts may not call BZPOPMIN and BZPOPMAX (NOSCRIPT, as
// in Redis 7.0) and may call BZMPOP, which does not wait there.

func init() {
	mpop := func(name string, arity int, fn func(*conn, [][]byte) plan, flags ...string) *redisCommand {
		return &redisCommand{name: name, op: command.TypeZRemRange, arity: arity, flags: flags, plan: fn}
	}
	bpop := func(name string, max bool) *redisCommand {
		return notInScripts(&redisCommand{name: name, op: command.TypeZRemRange, arity: -3,
			flags: []string{"write", "noscript", "blocking", "fast"}, firstKey: 1, lastKey: -2, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return planBZPop(a, max) }})
	}
	register(
		mpop("zmpop", -4, planZMPop, "write", "movablekeys"),
		mpop("bzmpop", -5, planBZMPop, "write", "blocking", "movablekeys"),
		bpop("bzpopmin", false),
		bpop("bzpopmax", true),
	)
}

// zsetSide reads MIN or MAX, as ZMPOP takes them (any case): max is
// the highest scores first.
func zsetSide(b []byte) (max, ok bool) {
	switch s := string(b); {
	case eq(s, "max"):
		return true, true
	case eq(s, "min"):
		return false, true
	}
	return false, false
}

// planZMPop is ZMPOP numkeys key [key ...] MIN|MAX [COUNT count].
func planZMPop(_ *conn, a [][]byte) plan {
	keys, max, count, refusal := mpopArgsOf(a, 1, zsetSide)
	if refusal != "" {
		return plan{err: refusal}
	}
	return plan{ops: []*command.Command{command.ZPopCommand(keys, max, count)}, answer: answerZMPop}
}

// planBZMPop is BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT
// count]: the timeout is read after the rest, as Redis reads it.
func planBZMPop(_ *conn, a [][]byte) plan {
	keys, max, count, refusal := mpopArgsOf(a, 2, zsetSide)
	if refusal != "" {
		return plan{err: refusal}
	}
	wait, forever, refusal := parseTimeout(a[1])
	if refusal != "" {
		return plan{err: refusal}
	}
	p := plan{ops: []*command.Command{command.ZPopCommand(keys, max, count)}, answer: answerZMPop}
	p.block = &blockSpec{keys: keys, wait: wait, forever: forever, kind: command.KindZSet}
	return p
}

// planBZPop is BZPOPMIN and BZPOPMAX key [key ...] timeout: the timeout
// is read first, as Redis reads it.
func planBZPop(a [][]byte, max bool) plan {
	block, refusal := blockArgs(a)
	if refusal != "" {
		return plan{err: refusal}
	}
	block.kind = command.KindZSet
	op := command.ZPopCommand(block.keys, max, 1)
	return plan{ops: []*command.Command{op}, block: block, answer: func(w *writer, r []storeapi.OpResult) {
		answerZKeyPop(w, r[0], false)
	}}
}

// answerZMPop: [key, [[member, score] ...]] in pop order, or a null array.
func answerZMPop(w *writer, r []storeapi.OpResult) { answerZKeyPop(w, r[0], true) }

// answerZKeyPop answers a pop from the first of several keys that holds a
// sorted set: nested (ZMPOP's) [key, [[member, score] ...]], else
// BZPOPMIN's [key, member, score]; a null array when none did.
func answerZKeyPop(w *writer, r storeapi.OpResult, nested bool) {
	answerZ(w, r, func(res *command.Result) {
		if res.Code == command.CodeNotFound {
			w.nullArray()
			return
		}
		key, pairs, err := command.ListPopped(res)
		if err != nil || !scorePairs(pairs) {
			w.errorLine(errorReply(command.ErrBadCommand))
			return
		}
		_, key, _ = command.KeyspaceOf(key) // the client's key, not as stored
		if !nested {
			w.array(3)
			w.bulk(key)
			w.bulk(pairs[0])
			w.double(command.ScoreOf(binary.BigEndian.Uint64(pairs[1])))
			return
		}
		w.array(2)
		w.bulk(key)
		w.array(len(pairs) / 2)
		for i := 0; i < len(pairs); i += 2 {
			w.array(2)
			w.bulk(pairs[i])
			w.double(command.ScoreOf(binary.BigEndian.Uint64(pairs[i+1])))
		}
	})
}

// scorePairs: pairs is members and score keys alternating, not none.
func scorePairs(pairs [][]byte) bool {
	if len(pairs) == 0 || len(pairs)%2 != 0 {
		return false
	}
	for i := 1; i < len(pairs); i += 2 {
		if len(pairs[i]) != 8 {
			return false
		}
	}
	return true
}
