package resp

import (
	"fmt"
	"strings"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The sorted sets' algebra as reads, with Redis 7.0's replies: ZUNION,
// ZINTER and ZDIFF (the members in score order, WITHSCORES beside their
// scores) and ZINTERCARD (how many, up to LIMIT), of sorted sets or sets
// (a set's members score 1); one read of every source
// (command.ZCombineCommand), in MULTI and scripts too. Their stores
// (ZUNIONSTORE, ZINTERSTORE, ZDIFFSTORE) are in commands_zset.go.

const msgZLimitNegative = "ERR LIMIT can't be negative"

func init() {
	rd := func(name string, mode command.ZStoreMode, card bool) *redisCommand {
		c := collRd(name, -3, 0, func(a [][]byte) plan { return planZCombine(a, mode, card) })
		c.firstKey, c.step = 0, 0 // the keys follow numkeys
		c.flags = append(c.flags, "movablekeys")
		return c
	}
	register(
		rd("zunion", command.ZStoreUnion, false),
		rd("zinter", command.ZStoreInter, false),
		rd("zdiff", command.ZStoreDiff, false),
		rd("zintercard", command.ZStoreInter, true),
	)
}

// zcombineArgs is what parseZCombine reads.
type zcombineArgs struct {
	keys       [][]byte
	weights    []float64
	agg        byte
	withScores bool
	limit      int64
}

// parseZCombine reads numkeys at a[at], the keys and the options as
// Redis 7.0's zunionInterDiffGenericCommand does, in its order and with
// its refusals: WEIGHTS and AGGREGATE but for a difference or a count,
// WITHSCORES but for a store or a count, LIMIT only for a count.
func parseZCombine(a [][]byte, at int, mode command.ZStoreMode, store, card bool) (zcombineArgs, string) {
	z := zcombineArgs{agg: command.ZAggSum}
	n, ok := parseInt64(a[at])
	switch {
	case !ok:
		return z, msgNotInteger
	case n < 1:
		return z, fmt.Sprintf("ERR at least 1 input key is needed for '%s' command", lower(a[0]))
	case n > int64(len(a)-at-1):
		return z, msgSyntax
	}
	z.keys = a[at+1 : at+1+int(n)]
	for _, k := range z.keys[1:] { // the pipeline checks the first, the op's key
		if err := storeapi.CheckKVKey(k); err != nil {
			return z, errorReply(err)
		}
	}
	z.weights = make([]float64, n)
	for i := range z.weights {
		z.weights[i] = 1
	}
	algebra := mode != command.ZStoreDiff && !card
	for j := at + 1 + int(n); j < len(a); j++ {
		left := len(a) - j - 1
		switch opt := strings.ToLower(string(a[j])); {
		case algebra && opt == "weights" && left >= int(n):
			for i := range z.weights {
				f, ok := parseScore(a[j+1+i])
				if !ok {
					return z, "ERR weight value is not a float"
				}
				z.weights[i] = f
			}
			j += int(n)
		case algebra && opt == "aggregate" && left >= 1:
			switch strings.ToLower(string(a[j+1])) {
			case "sum":
				z.agg = command.ZAggSum
			case "min":
				z.agg = command.ZAggMin
			case "max":
				z.agg = command.ZAggMax
			default:
				return z, msgSyntax
			}
			j++
		case !store && !card && opt == "withscores":
			z.withScores = true
		case card && opt == "limit" && left >= 1:
			l, ok := parseInt64(a[j+1])
			if !ok || l < 0 {
				return z, msgZLimitNegative
			}
			z.limit = l
			j++
		default:
			return z, msgSyntax
		}
	}
	return z, ""
}

// planZCombine is ZUNION, ZINTER, ZDIFF numkeys key … [options]
// [WITHSCORES], and ZINTERCARD numkeys key … [LIMIT limit].
func planZCombine(a [][]byte, mode command.ZStoreMode, card bool) plan {
	z, refusal := parseZCombine(a, 1, mode, false, card)
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZCombineCommand(z.keys, mode, z.weights, z.agg, card, z.limit)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			if card {
				w.integer(decimal(res))
				return
			}
			pairs, err := command.DecodeElems(res.Value)
			if err != nil || len(pairs)%2 != 0 || (len(pairs) > 0 && !scorePairs(pairs)) {
				w.errorLine(errorReply(command.ErrBadCommand))
				return
			}
			answerZPairs(w, pairs, z.withScores, true)
		})
	}}
}
