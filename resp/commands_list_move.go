package resp

import (
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The list commands that take elements from one list to another, or from
// the first of several lists, with Redis 7.0's replies: LMOVE and
// RPOPLPUSH (one state machine command, command.ListMoveCommand, so an
// element is moved whole or not at all: the reliable queue's step), LMPOP,
// and their blocking forms BLMOVE, BRPOPLPUSH and BLMPOP, which wait as
// BLPOP does (blocking.go) on their source keys. Inside MULTI the blocking
// forms answer at once as Redis's do there (BLMOVE a nil, BLMPOP a null
// array); scripts may not call BLMOVE and BRPOPLPUSH, as in Redis 7.0
// (NOSCRIPT), and may call BLMPOP, which answers at once there too.

const (
	msgNumKeys      = "ERR numkeys should be greater than 0"
	msgCountNotZero = "ERR count should be greater than 0"
)

func init() {
	wr := listWrite
	// LMPOP's keys follow its numkeys: movable, none at fixed places.
	mpop := func(name string, arity int, fn func(*conn, [][]byte) plan, flags ...string) *redisCommand {
		return &redisCommand{name: name, op: command.TypeListPop, arity: arity, flags: flags, plan: fn}
	}
	register(
		wr("lmove", command.TypeListMove, 5, 2, planLMove, "denyoom"),
		wr("rpoplpush", command.TypeListMove, 3, 2, planRPopLPush, "denyoom"),
		notInScripts(wr("blmove", command.TypeListMove, 6, 2, planBLMove, "denyoom", "noscript", "blocking")),
		notInScripts(wr("brpoplpush", command.TypeListMove, 4, 2, planBRPopLPush, "denyoom", "noscript", "blocking")),
		mpop("lmpop", -4, planLMPop, "movablekeys"),
		// Redis 7.0 lets a script call BLMPOP (no NOSCRIPT flag, unlike
		// the other blocking forms): there it does not wait.
		mpop("blmpop", -5, planBLMPop, "blocking", "movablekeys"),
	)
}

// listSide reads LEFT or RIGHT, as Redis does (any case): right is the
// tail; false for anything else (a syntax error).
func listSide(b []byte) (right, ok bool) {
	switch s := string(b); {
	case eq(s, "right"):
		return true, true
	case eq(s, "left"):
		return false, true
	}
	return false, false
}

// moveSides reads a move's two sides, the source's and the destination's.
func moveSides(from, to []byte) (right, toRight bool, refusal string) {
	right, ok1 := listSide(from)
	toRight, ok2 := listSide(to)
	if !ok1 || !ok2 {
		return false, false, msgSyntax
	}
	return right, toRight, ""
}

// planListMove is a move of one element from src to dst: answered with the
// element, or a nil when src holds none (also BLMOVE's answer inside
// MULTI, where it does not wait).
func planListMove(src, dst []byte, right, toRight bool) plan {
	if err := storeapi.CheckKVKey(dst); err != nil { // the pipeline checks the source, the op's key
		return plan{err: errorReply(err)}
	}
	op := command.ListMoveCommand(src, dst, right, toRight)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.null()
				return
			}
			w.bulk(res.Value)
		})
	}}
}

// planLMove is LMOVE source destination LEFT|RIGHT LEFT|RIGHT.
func planLMove(_ *conn, a [][]byte) plan {
	right, toRight, refusal := moveSides(a[3], a[4])
	if refusal != "" {
		return plan{err: refusal}
	}
	return planListMove(a[1], a[2], right, toRight)
}

// planRPopLPush is RPOPLPUSH source destination: LMOVE ... RIGHT LEFT.
func planRPopLPush(_ *conn, a [][]byte) plan { return planListMove(a[1], a[2], true, false) }

// planBLMove is BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout:
// the sides are read before the timeout, as Redis reads them.
func planBLMove(_ *conn, a [][]byte) plan {
	right, toRight, refusal := moveSides(a[3], a[4])
	if refusal != "" {
		return plan{err: refusal}
	}
	return blockingMove(a[1], a[2], right, toRight, a[5])
}

// planBRPopLPush is BRPOPLPUSH source destination timeout.
func planBRPopLPush(_ *conn, a [][]byte) plan { return blockingMove(a[1], a[2], true, false, a[3]) }

// blockingMove is a move that waits, when src holds no list, for a push
// onto it (blocking.go), up to the timeout; a null array when none came.
func blockingMove(src, dst []byte, right, toRight bool, timeout []byte) plan {
	wait, forever, refusal := parseTimeout(timeout)
	if refusal != "" {
		return plan{err: refusal}
	}
	p := planListMove(src, dst, right, toRight)
	if p.err == "" {
		p.block = &blockSpec{keys: [][]byte{src}, wait: wait, forever: forever}
	}
	return p
}

// mpopArgs reads LMPOP's arguments from a[at] on (BLMPOP's from a[2]):
// numkeys key [key ...] LEFT|RIGHT [COUNT count], in Redis's order and
// with its refusals. count is 1 without COUNT.
func mpopArgs(a [][]byte, at int) (keys [][]byte, right bool, count int64, refusal string) {
	return mpopArgsOf(a, at, listSide)
}

// mpopArgsOf is mpopArgs whose side side reads (ZMPOP's MIN or MAX).
func mpopArgsOf(a [][]byte, at int, side func([]byte) (bool, bool)) (keys [][]byte, right bool, count int64, refusal string) {
	n, ok := parseInt64(a[at])
	if !ok || n < 1 {
		return nil, false, 0, msgNumKeys
	}
	if n >= int64(len(a)-at-1) { // no side after the keys (Redis: where_idx >= argc)
		return nil, false, 0, msgSyntax
	}
	keys, where := a[at+1:at+1+int(n)], at+1+int(n)
	right, ok = side(a[where])
	if !ok {
		return nil, false, 0, msgSyntax
	}
	count = -1
	for j := where + 1; j < len(a); j++ {
		if count != -1 || !eq(string(a[j]), "count") || j == len(a)-1 {
			return nil, false, 0, msgSyntax
		}
		j++
		if count, ok = parseInt64(a[j]); !ok || count < 1 {
			return nil, false, 0, msgCountNotZero
		}
	}
	if count == -1 {
		count = 1
	}
	for _, k := range keys[1:] { // the pipeline checks the first, the op's key
		if err := storeapi.CheckKVKey(k); err != nil {
			return nil, false, 0, errorReply(err)
		}
	}
	return keys, right, count, ""
}

// planLMPop is LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT count]: up
// to count elements from the first key that holds a list, answered
// [key, [element ...]], or a null array when none does (also BLMPOP's
// answer inside MULTI).
func planLMPop(_ *conn, a [][]byte) plan {
	keys, right, count, refusal := mpopArgs(a, 1)
	if refusal != "" {
		return plan{err: refusal}
	}
	return plan{ops: []*command.Command{command.ListPopCommand(keys, right, count)}, answer: answerMPop}
}

// planBLMPop is BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT
// count]: the timeout is read after the rest, as Redis reads it.
func planBLMPop(_ *conn, a [][]byte) plan {
	keys, right, count, refusal := mpopArgs(a, 2)
	if refusal != "" {
		return plan{err: refusal}
	}
	wait, forever, refusal := parseTimeout(a[1])
	if refusal != "" {
		return plan{err: refusal}
	}
	p := plan{ops: []*command.Command{command.ListPopCommand(keys, right, count)}, answer: answerMPop}
	p.block = &blockSpec{keys: keys, wait: wait, forever: forever}
	return p
}

// answerMPop: [key, [element ...]] in pop order, or a null array.
func answerMPop(w *writer, r []storeapi.OpResult) { answerKeyPop(w, r[0], true) }
