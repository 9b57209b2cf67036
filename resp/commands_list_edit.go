package resp

import (
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The list commands that find an element or change one in place, with
// Redis 7.0's replies: LPOS (a read), LSET and LINSERT (state machine
// commands, command.ListSetCommand and command.ListInsertCommand).

const (
	msgRankZero    = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list"
	msgCountNeg    = "ERR COUNT can't be negative"
	msgMaxLenNeg   = "ERR MAXLEN can't be negative"
	msgNoSuchKey   = "ERR no such key"
	msgIndexOfList = "ERR index out of range"
)

func init() {
	register(
		listRead("lpos", -3, answerLPos, func(a [][]byte) string { _, refusal := lposArgs(a); return refusal }),
		listWrite("lset", command.TypeListSet, 4, 1, planLSet, "denyoom"),
		listWrite("linsert", command.TypeListInsert, 5, 1, planLInsert, "denyoom"),
	)
}

// lposOpts are LPOS's options: rank (negative: from the tail), count
// (-1: not given, 0: every match) and maxlen (0: the whole list).
type lposOpts struct{ rank, count, maxlen int64 }

// lposArgs reads LPOS key element [RANK rank] [COUNT count] [MAXLEN len]
// as Redis does: each option any number of times (the last counts), a
// refusal for the first bad one.
func lposArgs(a [][]byte) (o lposOpts, refusal string) {
	o = lposOpts{rank: 1, count: -1}
	for j := 3; j < len(a); j++ {
		opt, more := string(a[j]), j < len(a)-1
		switch {
		case eq(opt, "rank") && more:
			j++
			n, ok := parseInt64(a[j])
			if !ok {
				return o, msgNotInteger
			}
			if n == 0 {
				return o, msgRankZero
			}
			o.rank = n
		case eq(opt, "count") && more:
			j++
			n, ok := parseInt64(a[j])
			if !ok || n < 0 {
				return o, msgCountNeg // Redis says so of a count that is not a number too
			}
			o.count = n
		case eq(opt, "maxlen") && more:
			j++
			n, ok := parseInt64(a[j])
			if !ok || n < 0 {
				return o, msgMaxLenNeg
			}
			o.maxlen = n
		default:
			return o, msgSyntax
		}
	}
	return o, ""
}

// answerLPos answers the index of the rank-th match of the element, from
// the head (or the tail, for a negative rank), looking at no more than
// maxlen elements: a nil when there is none; with COUNT, an array of up
// to count of them (0: all). Its arithmetic is Redis's, overflow
// included: the lowest rank stays negative when negated, so it is every
// match's, and with COUNT no count ends the array.
func answerLPos(w *writer, a [][]byte, e command.KVEntry, ok bool) {
	o, _ := lposArgs(a) // refused before the key was read when bad
	if !ok {
		if o.count != -1 {
			w.array(0)
		} else {
			w.null()
		}
		return
	}
	elems, ok := listElems(w, e)
	if !ok {
		return
	}
	rank, fromTail := o.rank, false
	if rank < 0 {
		rank, fromTail = -rank, true
	}
	n := int64(len(elems))
	var matches int64
	var found []int64
	for index := int64(0); index < n && (o.maxlen == 0 || index < o.maxlen); index++ {
		i := index
		if fromTail {
			i = n - 1 - index
		}
		if string(elems[i]) != string(a[2]) {
			continue
		}
		if matches++; matches < rank {
			continue
		}
		found = append(found, i)
		if o.count == -1 || (o.count != 0 && matches-rank+1 >= o.count) {
			break
		}
	}
	switch {
	case o.count != -1:
		w.array(len(found))
		for _, i := range found {
			w.integer(i)
		}
	case len(found) == 0:
		w.null()
	default:
		w.integer(found[0])
	}
}

// planLSet is LSET key index element. Redis looks the key up before it
// reads the index: a bad index is answered after the key's own refusals
// (no such key, WRONGTYPE), from a read in the log.
func planLSet(_ *conn, a [][]byte) plan {
	i, ok := parseInt64(a[2])
	if !ok {
		return planListRefusal(a[1], msgNoSuchKey, msgNotInteger)
	}
	op := command.ListSetCommand(a[1], i, a[3])
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		if r[0].Err == nil && r[0].Res.Code == command.CodeOutOfRange {
			w.errorLine(msgIndexOfList)
			return
		}
		answerList(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.errorLine(msgNoSuchKey)
				return
			}
			w.ok()
		})
	}}
}

// planListRefusal answers absent when key does not exist, WRONGTYPE when
// it holds another kind than a list, and refusal when it holds a list: a
// read in the log, so it holds inside a transaction too.
func planListRefusal(key []byte, absent, refusal string) plan {
	return plan{ops: []*command.Command{command.KVReadCommand(key, false)}, answer: func(w *writer, r []storeapi.OpResult) {
		e, ok, err := readOf(r[0])
		switch {
		case err != nil:
			w.errorLine(errorReply(err))
		case !ok:
			w.errorLine(absent)
		case e.Kind != command.KindList:
			w.errorLine(msgWrongType)
		default:
			w.errorLine(refusal)
		}
	}}
}

// planLInsert is LINSERT key BEFORE|AFTER pivot element: the new length,
// 0 without the key, -1 without the pivot.
func planLInsert(_ *conn, a [][]byte) plan {
	var after bool
	switch where := string(a[2]); {
	case eq(where, "after"):
		after = true
	case eq(where, "before"):
	default:
		return plan{err: msgSyntax}
	}
	op := command.ListInsertCommand(a[1], a[3], a[4], after)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerList(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}
