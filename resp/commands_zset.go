package resp

import (
	"encoding/binary"
	"math"
	"strconv"
	"strings"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The sorted set commands, with Redis 7.0's replies: a sorted set is a
// collection as a hash is (commands_hash.go) whose members each have a
// score, kept in the member's element and in the score order
// (command/zset.go), so a range is a seek.

const (
	msgZNaN        = "ERR resulting score is not a number (NaN)"
	msgZRangeFloat = "ERR min or max is not a float"
	msgZRangeLex   = "ERR min or max not valid string range item"
	msgZXXNX       = "ERR XX and NX options at the same time are not compatible"
	msgZGTLTNX     = "ERR GT, LT, and/or NX options at the same time are not compatible"
	msgZIncrPairs  = "ERR INCR option supports a single increment-element pair"
	msgZLimitRank  = "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
	msgZLexScores  = "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
)

func init() {
	wr := func(name string, op command.Type, arity int, fn func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, flags: []string{"write"}, firstKey: 1, lastKey: 1, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	rng := func(name string, by command.ZBy, rev, legacy bool) *redisCommand {
		return collRd(name, -4, 1, func(a [][]byte) plan { return planZRange(a, by, rev, legacy) })
	}
	register(
		wr("zadd", command.TypeZAdd, -4, planZAdd),
		wr("zincrby", command.TypeZAdd, 4, planZIncrBy),
		wr("zrem", command.TypeCollDel, -3, planZRem),
		collRd("zscore", 3, 1, func(a [][]byte) plan {
			return readScores(a[1], a[2:3], func(w *writer, s []float64, found []bool) { doubleOrNull(w, s[0], found[0]) })
		}),
		collRd("zmscore", -3, 1, func(a [][]byte) plan {
			return readScores(a[1], a[2:], func(w *writer, s []float64, found []bool) {
				w.array(len(s))
				for i := range s {
					doubleOrNull(w, s[i], found[i])
				}
			})
		}),
		collRd("zcard", 2, 1, func(a [][]byte) plan {
			return readScores(a[1], nil, nil)
		}),
		collRd("zcount", 4, 1, func(a [][]byte) plan { return planZCount(a, command.ZByScore) }),
		collRd("zlexcount", 4, 1, func(a [][]byte) plan { return planZCount(a, command.ZByLex) }),
		rng("zrange", command.ZByRank, false, false),
		rng("zrevrange", command.ZByRank, true, true),
		rng("zrangebyscore", command.ZByScore, false, true),
		rng("zrevrangebyscore", command.ZByScore, true, true),
		rng("zrangebylex", command.ZByLex, false, true),
		rng("zrevrangebylex", command.ZByLex, true, true),
		collRd("zrank", 3, 1, func(a [][]byte) plan { return planZRank(a, false) }),
		collRd("zrevrank", 3, 1, func(a [][]byte) plan { return planZRank(a, true) }),
	)
}

// parseScore is a score as ZADD and ZINCRBY take one: what strtod
// reads of all the bytes, not out of range, not NaN.
func parseScore(b []byte) (float64, bool) {
	if len(b) == 0 || len(b) > 5000 {
		return 0, false
	}
	f, ranged, ok := command.Strtod(string(b))
	if !ok || (ranged && (math.IsInf(f, 0) || f == 0)) {
		return 0, false
	}
	return f, true
}

// parseRangeScore is a bound of a range by score (zslParseRange): "("
// makes it exclusive; strtod of the rest, whose overflow is an infinity
// and whose empty text is 0.
func parseRangeScore(b []byte) (f float64, ex, ok bool) {
	if len(b) > 0 && b[0] == '(' {
		b, ex = b[1:], true
	}
	if len(b) == 0 {
		return 0, ex, true
	}
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	if s == "" || len(s) > 5000 {
		return 0, ex, false
	}
	f, _, ok = command.Strtod(s)
	return f, ex, ok
}

// parseLexBound is a bound of a range by member: "-", "+", or "(" or "["
// and the member.
func parseLexBound(b []byte) (m []byte, ex bool, inf int8, ok bool) {
	switch {
	case len(b) == 1 && b[0] == '-':
		return nil, false, -1, true
	case len(b) == 1 && b[0] == '+':
		return nil, false, 1, true
	case len(b) > 0 && (b[0] == '(' || b[0] == '['):
		return b[1:], b[0] == '(', 0, len(b)-1 <= command.MaxFieldLen
	}
	return nil, false, 0, false
}

func doubleOrNull(w *writer, f float64, ok bool) {
	if ok {
		w.double(f)
		return
	}
	w.null()
}

// answerZ answers a sorted set command's result as answerColl does, and
// a NaN sum as Redis words it.
func answerZ(w *writer, r storeapi.OpResult, ok func(res *command.Result)) {
	if r.Err == nil && r.Res.Code == command.CodeNotFinite {
		w.errorLine(msgZNaN)
		return
	}
	answerColl(w, r, ok)
}

func planZAdd(a [][]byte) plan {
	var f byte
	i := 2
	for ; i < len(a); i++ {
		switch strings.ToLower(string(a[i])) {
		case "nx":
			f |= command.ZAddNX
		case "xx":
			f |= command.ZAddXX
		case "ch":
			f |= command.ZAddCH
		case "incr":
			f |= command.ZAddIncr
		case "gt":
			f |= command.ZAddGT
		case "lt":
			f |= command.ZAddLT
		default:
			goto done
		}
	}
done:
	n := len(a) - i
	switch {
	case n%2 != 0 || n == 0:
		return plan{err: msgSyntax}
	case f&command.ZAddNX != 0 && f&command.ZAddXX != 0:
		return plan{err: msgZXXNX}
	case f&command.ZAddNX != 0 && f&(command.ZAddGT|command.ZAddLT) != 0, f&command.ZAddGT != 0 && f&command.ZAddLT != 0:
		return plan{err: msgZGTLTNX}
	case f&command.ZAddIncr != 0 && n > 2:
		return plan{err: msgZIncrPairs}
	}
	return planZAddPairs(a[1], a[i:], f)
}

func planZIncrBy(a [][]byte) plan {
	return planZAddPairs(a[1], [][]byte{a[2], a[3]}, command.ZAddIncr)
}

func planZAddPairs(key []byte, pairs [][]byte, f byte) plan {
	scores := make([]float64, 0, len(pairs)/2)
	members := make([][]byte, 0, len(pairs)/2)
	for j := 0; j < len(pairs); j += 2 {
		s, ok := parseScore(pairs[j])
		if !ok {
			return plan{err: msgNotFloat}
		}
		scores, members = append(scores, s), append(members, pairs[j+1])
	}
	if refusal := checkElems(pairs, 2); refusal != "" { // the pairs' count (a score is not past a field's bound)
		return plan{err: refusal}
	}
	if refusal := checkElems(members, 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZAddCommand(key, scores, members, f)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			if f&command.ZAddIncr == 0 {
				w.integer(decimal(res))
				return
			}
			s, ok := command.ScoreFromBytes(res.Value)
			doubleOrNull(w, s, ok)
		})
	}}
}

func planZRem(a [][]byte) plan {
	if refusal := checkElems(a[2:], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZRemCommand(a[1], a[2:])
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// readScores plans ZSCORE and ZMSCORE (answer nil: ZCARD).
func readScores(key []byte, members [][]byte, answer func(w *writer, s []float64, found []bool)) plan {
	if refusal := checkElems(members, 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZScoresCommand(key, members)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			if answer == nil {
				w.integer(int64(res.Fence))
				return
			}
			scores, found := make([]float64, len(members)), make([]bool, len(members))
			if res.Code != command.CodeNotFound {
				vals, fs, err := command.DecodeFound(res.Value)
				if err != nil || len(vals) != len(members) {
					w.errorLine(errorReply(command.ErrBadCommand))
					return
				}
				for i := range vals {
					scores[i], found[i] = command.ScoreFromBytes(vals[i])
					found[i] = found[i] && fs[i]
				}
			}
			answer(w, scores, found)
		})
	}}
}

// parseZBounds reads a range's bounds lo and hi into s.
func parseZBounds(s *command.ZRangeSpec, lo, hi []byte) string {
	switch s.By {
	case command.ZByScore:
		var ok1, ok2 bool
		s.Min, s.MinEx, ok1 = parseRangeScore(lo)
		s.Max, s.MaxEx, ok2 = parseRangeScore(hi)
		if !ok1 || !ok2 || math.IsNaN(s.Min) || math.IsNaN(s.Max) {
			return msgZRangeFloat
		}
	case command.ZByLex:
		var ok1, ok2 bool
		s.LexMin, s.MinEx, s.LexMinInf, ok1 = parseLexBound(lo)
		s.LexMax, s.MaxEx, s.LexMaxInf, ok2 = parseLexBound(hi)
		if !ok1 || !ok2 {
			return msgZRangeLex
		}
	default:
		var ok1, ok2 bool
		s.Start, ok1 = parseInt64(lo)
		s.Stop, ok2 = parseInt64(hi)
		if !ok1 || !ok2 {
			return msgNotInteger
		}
	}
	return ""
}

func planZCount(a [][]byte, by command.ZBy) plan {
	s := command.ZRangeSpec{By: by, Count: true, Limit: -1}
	if refusal := parseZBounds(&s, a[2], a[3]); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZRangeCommand(a[1], s)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.integer(0)
				return
			}
			w.integer(decimal(res))
		})
	}}
}

// planZRange is ZRANGE and its older forms (legacy: by and rev are the
// command's, not options), as Redis 7.0's zrangeGenericCommand parses
// them.
func planZRange(a [][]byte, by command.ZBy, rev, legacy bool) plan {
	return planZRangeOf(a, by, rev, legacy, nil)
}

// planZRangeOf is planZRange, or with dst ZRANGESTORE (a without the
// destination).
func planZRangeOf(a [][]byte, by command.ZBy, rev, legacy bool, dst []byte) plan {
	s := command.ZRangeSpec{By: by, Rev: rev, Limit: -1}
	withScores, byGiven, revGiven := false, legacy, legacy
	for j := 4; j < len(a); j++ {
		opt := strings.ToLower(string(a[j]))
		switch {
		case opt == "withscores" && dst == nil:
			withScores = true
		case opt == "limit" && len(a)-j-1 >= 2:
			var ok1, ok2 bool
			s.Offset, ok1 = parseInt64(a[j+1])
			if ok1 {
				s.Limit, ok2 = parseInt64(a[j+2])
			}
			if !ok1 || !ok2 {
				return plan{err: msgNotInteger}
			}
			j += 2
		case opt == "rev" && !revGiven:
			s.Rev, revGiven = true, true
		case opt == "bylex" && !byGiven:
			s.By, byGiven = command.ZByLex, true
		case opt == "byscore" && !byGiven:
			s.By, byGiven = command.ZByScore, true
		default:
			return plan{err: msgSyntax}
		}
	}
	switch {
	case s.Limit != -1 && s.By == command.ZByRank:
		return plan{err: msgZLimitRank}
	case withScores && s.By == command.ZByLex:
		return plan{err: msgZLexScores}
	}
	lo, hi := a[2], a[3]
	if s.Rev && s.By != command.ZByRank {
		lo, hi = hi, lo
	}
	if refusal := parseZBounds(&s, lo, hi); refusal != "" {
		return plan{err: refusal}
	}
	if dst != nil {
		op := command.ZRangeStoreCommand(dst, a[1], s)
		return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
			answerZ(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
		}}
	}
	op := command.ZRangeCommand(a[1], s)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			var pairs [][]byte
			if res.Code != command.CodeNotFound {
				var err error
				if pairs, err = command.DecodeElems(res.Value); err != nil || len(pairs)%2 != 0 {
					w.errorLine(errorReply(command.ErrBadCommand))
					return
				}
			}
			answerZPairs(w, pairs, withScores, true)
		})
	}}
}

// answerZPairs answers members and their score keys, alternating: the
// members, or with scores each beside its score (RESP3: a pair each).
func answerZPairs(w *writer, pairs [][]byte, withScores, nested bool) {
	n := len(pairs) / 2
	nested = nested && w.proto >= 3
	switch {
	case !withScores:
		w.array(n)
	case nested:
		w.array(n)
	default:
		w.array(2 * n)
	}
	for i := 0; i < len(pairs); i += 2 {
		if !withScores {
			w.bulk(pairs[i])
			continue
		}
		if nested {
			w.array(2)
		}
		w.bulk(pairs[i])
		w.double(command.ScoreOf(binary.BigEndian.Uint64(pairs[i+1])))
	}
}

func planZRank(a [][]byte, rev bool) plan {
	if refusal := checkElems(a[2:3], 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZRankCommand(a[1], a[2], rev)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound || len(res.Value) != 16 {
				w.null()
				return
			}
			w.integer(int64(binary.BigEndian.Uint64(res.Value)))
		})
	}}
}

func init() {
	wr := func(name string, fn func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: command.TypeZRemRange, arity: -2, flags: []string{"write"}, firstKey: 1, lastKey: 1, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	remRange := func(name string, by command.ZBy) *redisCommand {
		c := wr(name, func(a [][]byte) plan { return planZRemRange(a, by) })
		c.arity = 4
		return c
	}
	register(
		wr("zpopmin", func(a [][]byte) plan { return planZPop(a, false) }),
		wr("zpopmax", func(a [][]byte) plan { return planZPop(a, true) }),
		remRange("zremrangebyrank", command.ZByRank),
		remRange("zremrangebyscore", command.ZByScore),
		remRange("zremrangebylex", command.ZByLex),
		collRd("zrandmember", -2, 1, planZRandMember),
		collRd("zscan", -3, 1, func(a [][]byte) plan {
			return planScanOf(a, false, func(v []byte) []byte {
				f, _ := command.ScoreFromBytes(v)
				return []byte(formatScore(f))
			})
		}),
	)
}

// formatScore is a score as Redis 7.0 prints one: "%.17g", inf, -inf.
func formatScore(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	}
	return strconv.FormatFloat(f, 'g', 17, 64)
}

// planZPop is ZPOPMIN and ZPOPMAX key [count].
func planZPop(a [][]byte, max bool) plan {
	count, refusal := parsePopCount(a, 1)
	if refusal != "" {
		return plan{err: refusal}
	}
	s := command.ZRangeSpec{By: command.ZByRank, Rev: max, Start: 0, Stop: count - 1, Limit: -1}
	if count == 0 {
		s.Start, s.Stop = 1, 0
	}
	op := command.ZRemRangeCommand(a[1], s, true)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) {
			pairs, err := command.DecodeElems(res.Value)
			if err != nil || len(pairs)%2 != 0 {
				w.errorLine(errorReply(command.ErrBadCommand))
				return
			}
			answerZPairs(w, pairs, true, len(a) == 3)
		})
	}}
}

// planZRemRange is ZREMRANGEBYRANK, ZREMRANGEBYSCORE, ZREMRANGEBYLEX.
func planZRemRange(a [][]byte, by command.ZBy) plan {
	s := command.ZRangeSpec{By: by, Limit: -1}
	if refusal := parseZBounds(&s, a[2], a[3]); refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZRemRangeCommand(a[1], s, false)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// planZRandMember is ZRANDMEMBER key [count [WITHSCORES]].
func planZRandMember(a [][]byte) plan {
	if len(a) == 2 {
		p := readRandom(a[1], false, 0, false, func(w *writer, pairs [][]byte, ok bool) {
			if !ok || len(pairs) == 0 {
				w.null()
				return
			}
			w.bulk(pairs[0])
		})
		p.ops[0].Flags |= command.FlagCollZSet
		return p
	}
	count, refusal := parseRandomCount(a[2])
	if refusal != "" {
		return plan{err: refusal}
	}
	withScores := false
	switch {
	case len(a) > 4 || (len(a) == 4 && !eq(string(a[3]), "withscores")):
		return plan{err: msgSyntax}
	case len(a) == 4:
		withScores = true
		if count < -math.MaxInt64/2 || count > math.MaxInt64/2 {
			return plan{err: msgOutOfRange}
		}
	}
	if refusal := overRandomCount(count); refusal != "" {
		return plan{err: refusal}
	}
	p := readRandom(a[1], false, count, true, func(w *writer, pairs [][]byte, _ bool) {
		answerZPairs(w, pairs, withScores, true)
	})
	p.ops[0].Flags |= command.FlagCollZSet
	return p
}

func init() {
	wr := func(name string, arity int, fn func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: command.TypeZStore, arity: arity, flags: []string{"write"}, firstKey: 1, lastKey: 2, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	combine := func(name string, mode command.ZStoreMode) *redisCommand {
		c := wr(name, -4, func(a [][]byte) plan { return planZCombineStore(a, mode) })
		c.lastKey = 1 // the sources follow numkeys
		return c
	}
	register(
		wr("zrangestore", -5, func(a [][]byte) plan { return planZRangeOf(a[1:], command.ZByRank, false, false, a[1]) }),
		combine("zunionstore", command.ZStoreUnion),
		combine("zinterstore", command.ZStoreInter),
		combine("zdiffstore", command.ZStoreDiff),
	)
}

// planZCombineStore is ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE dst
// numkeys key … [WEIGHTS w …] [AGGREGATE SUM|MIN|MAX] (ZDIFFSTORE:
// neither).
func planZCombineStore(a [][]byte, mode command.ZStoreMode) plan {
	z, refusal := parseZCombine(a, 2, mode, true, false)
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.ZCombineStoreCommand(a[1], z.keys, mode, z.weights, z.agg)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerZ(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}
