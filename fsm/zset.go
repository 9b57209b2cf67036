package fsm

import (
	"bytes"
	"encoding/binary"
	"math"
	"slices"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The sorted set's commands (package command's zset.go): a member's
// score is its tag 0 element's value and its tag 1 entry's key, and
// every write keeps the two together.

// zmember is one member's state while a ZADD computes.
type zmember struct {
	cur, now         float64
	existed, present bool
}

// zadd is ZADD and ZINCRBY: each pair in turn, as Redis takes them (a
// member named twice sees its first change). A ZADD that would take the
// set past its bounds changes nothing (CodeTooLong), nor does one whose
// increment makes NaN (CodeNotFinite).
func (a *applier) zadd(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.zaddIn(boltKV{a, tx}, c, rev)
}

func (a *applier) zaddIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	elems, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	f := byte(c.Mode)
	old, h, exists, code := a.collOf(kv, c.Key, command.KindZSet)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	if !exists {
		h = newColl(rev)
	}
	state := map[string]*zmember{}
	var order [][]byte
	nh, added, changed := h, 0, 0
	var incrOut []byte
	for i := 0; i+1 < len(elems); i += 2 {
		score := math.Float64frombits(binary.BigEndian.Uint64(elems[i]))
		m := elems[i+1]
		st := state[string(m)]
		if st == nil {
			st = &zmember{}
			if exists {
				if v, ok := kv.elem(c.Key, h, m); ok {
					st.cur, _ = command.ScoreFromBytes(v)
					st.existed, st.present = true, true
				}
			}
			st.now = st.cur
			state[string(m)] = st
			order = append(order, m)
		}
		if !st.present {
			if f&command.ZAddXX != 0 {
				continue
			}
			st.present, st.now = true, score
			nh = nh.Grow(command.KindZSet, m, make([]byte, 8))
			added++
			incrOut = command.ScoreBytes(score)
			continue
		}
		if f&command.ZAddNX != 0 {
			continue
		}
		n := score
		if f&command.ZAddIncr != 0 {
			n = st.now + score
			if math.IsNaN(n) {
				return &command.Result{Code: command.CodeNotFinite}
			}
		}
		if (f&command.ZAddGT != 0 && n <= st.now) || (f&command.ZAddLT != 0 && n >= st.now) {
			continue
		}
		incrOut = command.ScoreBytes(n)
		if n != st.now {
			st.now = n
			changed++
		}
	}
	var out []byte
	switch {
	case f&command.ZAddIncr != 0:
		out = incrOut
		if out == nil {
			out = []byte{}
		}
	case f&command.ZAddCH != 0:
		out = strconv.AppendInt(nil, int64(added+changed), 10)
	default:
		out = strconv.AppendInt(nil, int64(added), 10)
	}
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	wrote := false
	for _, m := range order {
		st := state[string(m)]
		if !st.present || (st.existed && st.now == st.cur && math.Signbit(st.now) == math.Signbit(st.cur)) {
			continue
		}
		if st.existed {
			if err := kv.delScore(c.Key, h, st.cur, m); err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
		if kv.putElem(c.Key, nh, m, command.ScoreBytes(st.now)) != nil || kv.putScore(c.Key, nh, st.now, m) != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		wrote = true
	}
	if !wrote {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: out}
	}
	r := a.storeColl(kv, c.Key, command.KindZSet, nh, old, exists, rev, out)
	return r
}

// zrange is ReadZRange's answer: the members and scores of the range, a
// list's encoding, or (Count) how many in decimal.
func zrange(kv kvStore, key []byte, h command.CollHeader, s command.ZRangeSpec) ([]byte, error) {
	var out [][]byte
	n := int64(0)
	skip, limit := s.Offset, s.Limit
	if s.Count {
		skip, limit = 0, -1
	}
	if skip < 0 {
		return command.EncodeList(nil), nil
	}
	take := func(score uint64, m []byte) bool {
		if skip > 0 {
			skip--
			return true
		}
		if limit >= 0 && n >= limit {
			return false
		}
		n++
		if !s.Count {
			out = append(out, clone(m), binary.BigEndian.AppendUint64(nil, score))
		}
		return true
	}
	// walk takes the entries from from on that out places in the range,
	// until one past its end.
	walk := func(from []byte, out func(k uint64, m []byte) (below, above bool)) error {
		return kv.scores(key, h, from, s.Rev, func(k uint64, m []byte) bool {
			below, above := out(k, m)
			switch {
			case !s.Rev && above, s.Rev && below:
				return false
			case below || above:
				return true
			}
			return take(k, m)
		})
	}
	var err error
	switch s.By {
	case command.ZByRank:
		cnt := int64(min(h.Count, math.MaxInt64))
		start, stop := s.Start, s.Stop
		if start < 0 {
			start += cnt
		}
		if stop < 0 {
			stop += cnt
		}
		start = max(start, 0)
		if start > stop || start >= cnt {
			break
		}
		stop = min(stop, cnt-1)
		skip, limit = start, stop-start+1
		err = kv.scores(key, h, nil, s.Rev, take)
	case command.ZByScore:
		lo, hi := s.Min, s.Max
		var from []byte
		switch {
		case !s.Rev:
			from = binary.BigEndian.AppendUint64(nil, command.ScoreKey(lo))
		case command.ScoreKey(hi) != math.MaxUint64:
			from = binary.BigEndian.AppendUint64(nil, command.ScoreKey(hi)+1)
		}
		err = walk(from, func(k uint64, _ []byte) (bool, bool) {
			f := command.ScoreOf(k)
			return f < lo || (s.MinEx && f == lo), f > hi || (s.MaxEx && f == hi)
		})
	case command.ZByLex:
		var first []byte
		_ = kv.scores(key, h, nil, s.Rev, func(k uint64, _ []byte) bool {
			first = binary.BigEndian.AppendUint64(nil, k)
			return false
		})
		if first == nil {
			break
		}
		from := first
		switch {
		case !s.Rev && s.LexMinInf == 0:
			from = append(from, s.LexMin...)
		case s.Rev && s.LexMaxInf == 0:
			from = append(from, s.LexMax...)
		case s.Rev:
			from = nil
		}
		err = walk(from, func(_ uint64, m []byte) (bool, bool) { return lexBelow(m, s), lexAbove(m, s) })
	}
	if s.Count {
		return strconv.AppendInt(nil, n, 10), err
	}
	return command.EncodeList(out), err
}

func lexBelow(m []byte, s command.ZRangeSpec) bool {
	switch s.LexMinInf {
	case -1:
		return false
	case 1:
		return true
	}
	c := bytes.Compare(m, s.LexMin)
	return c < 0 || (c == 0 && s.MinEx)
}

func lexAbove(m []byte, s command.ZRangeSpec) bool {
	switch s.LexMaxInf {
	case 1:
		return false
	case -1:
		return true
	}
	c := bytes.Compare(m, s.LexMax)
	return c > 0 || (c == 0 && s.MaxEx)
}

// zrank is ReadZRank's answer: the member's rank and score, 8 bytes
// each, or nothing when it is absent; a walk of the score order from the
// lowest (rev: the highest).
func zrank(kv kvStore, key []byte, h command.CollHeader, member []byte, rev bool) ([]byte, error) {
	v, ok := kv.elem(key, h, member)
	if !ok || len(v) != 8 {
		return []byte{}, nil
	}
	want := append(clone(v), member...)
	rank := uint64(0)
	found := false
	err := kv.scores(key, h, nil, rev, func(k uint64, m []byte) bool {
		if binary.BigEndian.Uint64(want) == k && bytes.Equal(m, member) {
			found = true
			return false
		}
		rank++
		return true
	})
	if !found {
		return []byte{}, err
	}
	return append(binary.BigEndian.AppendUint64(nil, rank), v...), err
}

// The applier's rows of this file's commands (commands.go joins them).
var zsetApplies = applies{
	command.TypeZAdd:      {remembered: true, apply: (*applier).zadd, kv: (*applier).zaddIn},
	command.TypeZRemRange: {remembered: true, apply: (*applier).zremRange, kv: (*applier).zremRangeIn},
	command.TypeZStore:    {remembered: true, apply: (*applier).zstore, kv: (*applier).zstoreIn},
}

// zremRange is ZREMRANGEBY*, ZPOPMIN and ZPOPMAX: the range's members
// are removed, both their entries; the result carries how many (with
// FlagCollCount: them and their score keys, a list's encoding).
func (a *applier) zremRange(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.zremRangeIn(boltKV{a, tx}, c, rev)
}

func (a *applier) zremRangeIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	s, err := command.DecodeZRangeSpec(c.Body)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	if c.Flags&command.FlagZKeyed == 0 {
		return a.zremRangeOf(kv, c.Key, s, c.Flags&command.FlagCollCount != 0, rev)
	}
	// ZMPOP, BZPOPMIN: the first key that exists (a sorted set is never
	// empty), its key before the members popped.
	more, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	for _, key := range append([][]byte{c.Key}, more...) {
		_, _, exists, code := a.collOf(kv, key, command.KindZSet)
		switch {
		case code != command.CodeOK:
			return &command.Result{Code: code}
		case !exists:
			continue
		}
		r := a.zremRangeOf(kv, key, s, true, rev)
		if r.Code == command.CodeOK {
			r.Value = append(appendBytes(nil, key), r.Value...)
		}
		return r
	}
	return &command.Result{Code: command.CodeNotFound}
}

// zremRangeOf removes the range s of key's sorted set; pop: the result
// carries the members and score keys removed, else how many.
func (a *applier) zremRangeOf(kv kvStore, key []byte, s command.ZRangeSpec, pop bool, rev uint64) *command.Result {
	empty := []byte("0")
	if pop {
		empty = command.EncodeList(nil)
	}
	old, h, exists, code := a.collOf(kv, key, command.KindZSet)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeOK, Value: empty}
	}
	v, err := zrange(kv, key, h, s)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	pairs, err := command.DecodeElems(v)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if len(pairs) == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: empty}
	}
	nh := h
	for i := 0; i+1 < len(pairs); i += 2 {
		score := command.ScoreOf(binary.BigEndian.Uint64(pairs[i+1]))
		if kv.delScore(key, h, score, pairs[i]) != nil || kv.delElem(key, h, pairs[i]) != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		nh.Count--
		nh.Bytes -= uint64(len(pairs[i]) + 8)
	}
	out := strconv.AppendInt(nil, int64(len(pairs)/2), 10)
	if pop {
		out = v
	}
	return a.storeColl(kv, key, command.KindZSet, nh, old, true, rev, out)
}

// zstore is ZRANGESTORE, ZUNIONSTORE and ZINTERSTORE: the sources are
// read whole first, then the result replaces c.Key, whatever it held
// (an empty result deletes it). The result carries how many members, in
// decimal.
func (a *applier) zstore(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.zstoreIn(boltKV{a, tx}, c, rev)
}

func (a *applier) zstoreIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	srcs, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	var members [][]byte
	var scores []float64
	code := command.CodeOK
	if command.ZStoreMode(c.Mode) == command.ZStoreRange {
		members, scores, code, err = a.zrangeOf(kv, srcs[0], c.Body)
	} else {
		weights := make([]float64, len(srcs))
		for i := range weights {
			weights[i] = math.Float64frombits(binary.BigEndian.Uint64(c.Body[1+8*i:]))
		}
		members, scores, code, err = a.zcombine(kv, srcs, command.ZStoreMode(c.Mode), c.Body[0], weights)
	}
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case code != command.CodeOK:
		return &command.Result{Code: code}
	}
	nh := newColl(rev)
	for _, m := range members {
		nh = nh.Grow(command.KindZSet, m, make([]byte, 8))
	}
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	if err := a.dropKey(kv, c.Key); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	for i, m := range members {
		if kv.putElem(c.Key, nh, m, command.ScoreBytes(scores[i])) != nil || kv.putScore(c.Key, nh, scores[i], m) != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	r := a.storeColl(kv, c.Key, command.KindZSet, nh, command.KVEntry{}, false, rev, strconv.AppendInt(nil, int64(len(members)), 10))
	if r.Code == command.CodeCreated {
		r.Code = command.CodeOK
	}
	return r
}

// zrangeOf is src's range (a ZRangeSpec), members and scores.
func (a *applier) zrangeOf(kv kvStore, src, spec []byte) ([][]byte, []float64, command.Code, error) {
	s, err := command.DecodeZRangeSpec(spec)
	if err != nil {
		return nil, nil, command.CodeBadCommand, nil
	}
	_, h, ok, code := a.collOf(kv, src, command.KindZSet)
	if code != command.CodeOK || !ok {
		return nil, nil, code, nil
	}
	s.Count = false
	v, err := zrange(kv, src, h, s)
	if err != nil {
		return nil, nil, command.CodeOK, err
	}
	pairs, err := command.DecodeElems(v)
	var members [][]byte
	var scores []float64
	for i := 0; i+1 < len(pairs); i += 2 {
		members, scores = append(members, pairs[i]), append(scores, command.ScoreOf(binary.BigEndian.Uint64(pairs[i+1])))
	}
	return members, scores, command.CodeOK, err
}

// zcombine is the union, intersection or difference of srcs (sorted
// sets, or sets whose members score 1; absent: empty), weighted and
// aggregated by agg (a difference: the first's members and scores that
// no other holds), in member order.
func (a *applier) zcombine(kv kvStore, srcs [][]byte, mode command.ZStoreMode, agg byte, weights []float64) ([][]byte, []float64, command.Code, error) {
	type source struct {
		key  []byte
		kind command.Kind
		h    command.CollHeader
		ok   bool
	}
	sources := make([]source, len(srcs))
	for i, k := range srcs {
		e, ok, err := a.liveKV(kv, k)
		switch {
		case err != nil:
			return nil, nil, command.CodeStorage, nil
		case ok && e.Kind != command.KindZSet && e.Kind != command.KindSet:
			return nil, nil, command.CodeWrongType, nil
		}
		h, _ := command.DecodeCollHeader(e.Value)
		sources[i] = source{k, e.Kind, h, ok}
	}
	if mode == command.ZStoreDiff {
		return zdiff(kv, sources[0].key, sources[0].kind, sources[0].h, sources[0].ok, func(m []byte) bool {
			for _, s := range sources[1:] {
				if _, there := kv.elem(s.key, s.h, m); s.ok && there {
					return true
				}
			}
			return false
		})
	}
	acc := map[string]float64{}
	seen := map[string]int{}
	for i, s := range sources {
		if !s.ok {
			continue
		}
		w := weights[i]
		err := kv.elems(s.key, s.h, 0, func(_ uint64, m, v []byte) bool {
			score := 1.0
			if s.kind == command.KindZSet {
				score, _ = command.ScoreFromBytes(v)
			}
			score *= w
			if math.IsNaN(score) {
				score = 0
			}
			cur, there := acc[string(m)]
			switch {
			case !there:
				cur = score
			case agg == command.ZAggSum:
				cur += score
			case agg == command.ZAggMin:
				cur = min(cur, score)
			default:
				cur = max(cur, score)
			}
			if math.IsNaN(cur) {
				cur = 0
			}
			acc[string(m)] = cur
			seen[string(m)]++
			return true
		})
		if err != nil {
			return nil, nil, command.CodeOK, err
		}
	}
	members := make([][]byte, 0, len(acc))
	for m := range acc {
		if mode == command.ZStoreInter && seen[m] != len(sources) {
			continue
		}
		members = append(members, []byte(m))
	}
	slices.SortFunc(members, bytes.Compare)
	scores := make([]float64, len(members))
	for i, m := range members {
		scores[i] = acc[string(m)]
	}
	return members, scores, command.CodeOK, nil
}

// zdiff is the members of a source (a sorted set or a set, absent when
// !ok) that elsewhere does not find, with their scores, in member order.
func zdiff(kv kvStore, key []byte, kind command.Kind, h command.CollHeader, ok bool, elsewhere func(m []byte) bool) ([][]byte, []float64, command.Code, error) {
	if !ok {
		return nil, nil, command.CodeOK, nil
	}
	var members [][]byte
	var scores []float64
	err := kv.elems(key, h, 0, func(_ uint64, m, v []byte) bool {
		if elsewhere(m) {
			return true
		}
		score := 1.0
		if kind == command.KindZSet {
			score, _ = command.ScoreFromBytes(v)
		}
		members, scores = append(members, clone(m)), append(scores, score)
		return true
	})
	if err != nil {
		return nil, nil, command.CodeOK, err
	}
	order := make([]int, len(members))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(x, y int) int { return bytes.Compare(members[x], members[y]) })
	ms, ss := make([][]byte, len(order)), make([]float64, len(order))
	for i, j := range order {
		ms[i], ss[i] = members[j], scores[j]
	}
	return ms, ss, command.CodeOK, nil
}

// zcombineRead is ReadZCombine's answer: ZUNION, ZINTER, ZDIFF (the
// members and score keys in Redis's order: score, then member) and
// ZINTERCARD (how many, up to the limit).
func (a *applier) zcombineRead(kv kvStore, c *command.Command) *command.Result {
	more, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	keys := append([][]byte{c.Key}, more...)
	mode, agg, weights, limit, err := command.ZCombineOf(c, len(keys))
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	members, scores, code, err := a.zcombine(kv, keys, mode, agg, weights)
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case code != command.CodeOK:
		return &command.Result{Code: code}
	}
	if limit >= 0 {
		n := int64(len(members))
		if limit > 0 {
			n = min(n, limit)
		}
		return &command.Result{Code: command.CodeOK, Value: strconv.AppendInt(nil, n, 10)}
	}
	pairs := make([][]byte, 0, 2*len(members))
	for i, m := range members {
		pairs = append(pairs, append(command.ScoreBytes(scores[i]), m...))
	}
	slices.SortFunc(pairs, bytes.Compare) // score, then member: Redis's order
	out := make([][]byte, 0, 2*len(pairs))
	for _, p := range pairs {
		out = append(out, p[8:], p[:8])
	}
	return &command.Result{Code: command.CodeOK, Value: command.EncodeList(out)}
}
