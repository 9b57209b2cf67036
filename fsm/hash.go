package fsm

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The commands of hashes, and those sets share with them (a set is a
// collection whose elements have no value): put, delete, increment and
// the reads. Each reads the header, then only the elements it names, so
// its pages are the header's and those elements'.

// collPut is HSET, HMSET, HSETNX (FlagCollNX) and SADD (FlagCollSet):
// c.Value's elements, a later one of a field winning. The result carries
// how many fields were new, in decimal. A put that would take the
// collection past its bounds changes nothing (CodeTooLong); one that
// changes nothing (SADD of members there) writes nothing.
func (a *applier) collPut(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.collPutIn(boltKV{a, tx}, c, rev)
}

func (a *applier) collPutIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	kind := command.CollKind(c.Flags)
	elems, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, h, exists, code := a.collOf(kv, c.Key, kind)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	if !exists {
		h = newColl(rev)
	}
	step := 2
	if kind == command.KindSet {
		step = 1
	}
	final := make(map[string][]byte, len(elems)/step)
	var order [][]byte
	for i := 0; i < len(elems); i += step {
		var v []byte
		if step == 2 {
			v = elems[i+1]
		}
		if _, dup := final[string(elems[i])]; !dup {
			order = append(order, elems[i])
		}
		final[string(elems[i])] = v
	}
	nh, added := h, 0
	var write [][]byte // fields to write
	for _, f := range order {
		v := final[string(f)]
		cur, ok := []byte(nil), false
		if exists {
			cur, ok = kv.elem(c.Key, h, f)
		}
		switch {
		case !ok:
			nh = nh.Grow(kind, f, v)
			added++
		case kind == command.KindSet, c.Flags&command.FlagCollNX != 0:
			continue // there already
		default:
			nh.Bytes = nh.Bytes - uint64(len(cur)) + uint64(len(v))
			if len(v) > 64 {
				nh.Flags |= command.CollBig // Redis converts on a long value too
			}
		}
		write = append(write, f)
	}
	n := strconv.AppendInt(nil, int64(added), 10)
	if len(write) == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: n}
	}
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	for _, f := range write {
		if err := kv.putElem(c.Key, nh, f, final[string(f)]); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	return a.storeColl(kv, c.Key, kind, nh, old, exists, rev, n)
}

// collDel is HDEL and SREM (FlagCollSet): it removes the fields of
// c.Value that are there; the result carries how many, in decimal. The
// collection emptied is deleted.
func (a *applier) collDel(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.collDelIn(boltKV{a, tx}, c, rev)
}

func (a *applier) collDelIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	kind := command.CollKind(c.Flags)
	fields, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	old, h, exists, code := a.collOf(kv, c.Key, kind)
	if code != command.CodeOK || !exists {
		return &command.Result{Code: code, Value: []byte("0")}
	}
	nh, removed := h, 0
	for _, f := range fields {
		cur, ok := kv.elem(c.Key, h, f)
		if !ok {
			continue // absent, or named twice
		}
		nh.Count--
		nh.Bytes -= uint64(len(f) + len(cur))
		if kind == command.KindZSet {
			score, _ := command.ScoreFromBytes(cur)
			if err := kv.delScore(c.Key, h, score, f); err != nil {
				return &command.Result{Code: command.CodeStorage}
			}
		}
		if err := kv.delElem(c.Key, h, f); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		removed++
	}
	n := strconv.AppendInt(nil, int64(removed), 10)
	if removed == 0 {
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: n}
	}
	return a.storeColl(kv, c.Key, kind, nh, old, true, rev, n)
}

// hashIncr is HINCRBY, and HINCRBYFLOAT (FlagCollFloat): it adds c.Body
// to field c.Value's value (absent: 0) as INCRBY and INCRBYFLOAT add to
// a string's, and stores the sum as they do. The result carries it.
func (a *applier) hashIncr(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.hashIncrIn(boltKV{a, tx}, c, rev)
}

func (a *applier) hashIncrIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, h, exists, code := a.collOf(kv, c.Key, command.KindHash)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	if !exists {
		h = newColl(rev)
	}
	var cur []byte
	var ok bool
	if exists {
		cur, ok = kv.elem(c.Key, h, c.Value)
	}
	var sum []byte
	if c.Flags&command.FlagCollFloat == 0 {
		delta, _ := command.ParseInt(c.Body) // checked by Validate
		var n int64
		if ok {
			if n, ok = command.ParseInt(cur); !ok {
				return &command.Result{Code: command.CodeNotInteger}
			}
		}
		if (delta > 0 && n > math.MaxInt64-delta) || (delta < 0 && n < math.MinInt64-delta) {
			return &command.Result{Code: command.CodeOverflow}
		}
		sum = strconv.AppendInt(nil, n+delta, 10)
	} else {
		x := command.NewLongDouble()
		if ok {
			var err error
			if x, err = command.ParseLongDouble(cur); err != nil {
				return &command.Result{Code: command.CodeNotFloat}
			}
		}
		incr, err := command.ParseLongDouble(c.Body)
		if err != nil {
			return &command.Result{Code: command.CodeNotFloat}
		}
		s, fin := command.AddLongDouble(x, incr)
		if !fin {
			return &command.Result{Code: command.CodeNotFinite}
		}
		sum = command.FormatLongDouble(s)
	}
	nh := h
	if ok {
		nh.Bytes = nh.Bytes - uint64(len(cur)) + uint64(len(sum))
	} else {
		nh = nh.Grow(command.KindHash, c.Value, sum)
	}
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	if err := kv.putElem(c.Key, nh, c.Value, sum); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return a.storeColl(kv, c.Key, command.KindHash, nh, old, exists, rev, sum)
}

// collRead answers a read of a hash or a set (command.CollReadMode). It
// changes nothing (but the lazy removal of an expired key).
func (a *applier) collRead(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.collReadIn(boltKV{a, tx}, c, rev)
}

func (a *applier) collReadIn(kv kvStore, c *command.Command, _ uint64) *command.Result {
	mode := command.CollReadMode(c.Mode)
	if mode >= command.ReadInter && mode <= command.ReadInterCard {
		return a.setAlgebra(kv, c)
	}
	if mode == command.ReadZCombine {
		return a.zcombineRead(kv, c)
	}
	kind := command.CollKind(c.Flags)
	e, h, exists, code := a.collOf(kv, c.Key, kind)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound}
	}
	r := &command.Result{Code: command.CodeOK, Version: e.Version, ExpiresAt: e.ExpiresAt, Fence: h.Count}
	var err error
	switch mode {
	case command.ReadFields:
		fields, derr := command.DecodeList(c.Body)
		if derr != nil {
			return &command.Result{Code: command.CodeBadCommand}
		}
		vals, found := make([][]byte, len(fields)), make([]bool, len(fields))
		for i, f := range fields {
			v, ok := kv.elem(c.Key, h, f)
			vals[i], found[i] = v, ok
		}
		r.Value = command.EncodeFound(vals, found) // copies
	case command.ReadAll:
		pairs := make([][]byte, 0, 2*h.Count)
		err = kv.elems(c.Key, h, 0, func(_ uint64, f, v []byte) bool {
			pairs = append(pairs, clone(f), clone(v))
			return true
		})
		r.Value = command.WholeColl(h, pairs)
	case command.ReadRandom:
		var pairs [][]byte
		pairs, err = randomElems(kv, c.Key, h, c)
		r.Value = command.EncodeList(pairs)
	case command.ReadScan:
		r.Value, err = scanElems(kv, c.Key, h, c)
	case command.ReadZRange:
		s, derr := command.DecodeZRangeSpec(c.Body)
		if derr != nil {
			return &command.Result{Code: command.CodeBadCommand}
		}
		r.Value, err = zrange(kv, c.Key, h, s)
	case command.ReadZRank:
		r.Value, err = zrank(kv, c.Key, h, c.Body, c.Flags&command.FlagCollCount != 0)
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	return r
}

// scanElems is HSCAN's and SSCAN's step: about count elements from the
// cursor (an order) on, never splitting elements of one order, and the
// next cursor (0: done). A collection of Redis's small encoding answers
// whole, with cursor 0, as Redis's does.
func scanElems(kv kvStore, key []byte, h command.CollHeader, c *command.Command) ([]byte, error) {
	cursor, count := binary.BigEndian.Uint64(c.Body), int64(binary.BigEndian.Uint64(c.Body[8:]))
	if h.Flags&command.CollBig == 0 {
		cursor, count = 0, math.MaxInt64
	}
	count = max(count, 1)
	var pairs [][]byte
	next, last, n := uint64(0), uint64(0), int64(0)
	err := kv.elems(key, h, cursor, func(order uint64, f, v []byte) bool {
		if n >= count && order != last {
			next = order
			return false
		}
		pairs = append(pairs, clone(f), clone(v))
		last = order
		n++
		return true
	})
	return append(binary.BigEndian.AppendUint64(nil, next), command.EncodeList(pairs)...), err
}

// The applier's rows of this file's commands (commands.go joins them).
var hashApplies = applies{
	command.TypeCollPut:  {remembered: true, apply: (*applier).collPut, kv: (*applier).collPutIn},
	command.TypeCollDel:  {remembered: true, apply: (*applier).collDel, kv: (*applier).collDelIn},
	command.TypeHashIncr: {remembered: true, apply: (*applier).hashIncr, kv: (*applier).hashIncrIn},
	command.TypeCollRead: {apply: (*applier).collRead, kv: (*applier).collReadIn},
}
