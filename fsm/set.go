package fsm

import (
	"bytes"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// The random choices (SPOP, SRANDMEMBER, HRANDFIELD, ZRANDMEMBER) and
// the set commands. A random choice is drawn from the seed its command
// carries (the proposer draws it; the log entry holds it), so every
// replica, and a script's sandbox before them, chooses the same; and
// every element is as likely as every other, as Redis's are.
//
// A collection of at most drawWhole elements, or one that a command
// draws a drawSpan-th of or more (the walk then costs at most drawSpan
// steps a draw), is read whole and chosen from by index. Otherwise it is
// not walked (a pop of one would cost the collection's size):
// its orders (XXH3 of the fields, near uniform) are cut into 2^k equal
// intervals, k such that one holds drawSpan to 2·drawSpan elements on
// average; a draw takes an interval and a slot j below drawCap, both
// uniform, and is the interval's j-th element, or none (drawn again)
// when it holds j or fewer. Each element then has the chance
// 1/(2^k·drawCap) a round, the same for all, at the cost of a seek and
// fewer than drawCap steps; a round chooses with a chance of 1/8 to 1/4.
// Only an interval holding more than drawCap elements (eight times the
// average; for distinct fields of a million-element collection a chance
// near 1e-15) would leave its elements past the drawCap-th unchosen.

const (
	drawWhole = 128
	drawSpan  = 8
	drawCap   = 8 * drawSpan
	// drawRounds bounds a draw's rounds (each chooses with a chance of
	// 1/8 at least: 1000 all fail with a chance near 1e-58); past it a
	// draw walks to an element by index.
	drawRounds = 1000
)

// rngOf is the random source of a command's seed.
func rngOf(seed uint64) *rand.Rand {
	if mutantUnseededDraw {
		seed = rand.Uint64()
	}
	return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
}

// drawer draws elements of one collection, each as likely as any other.
type drawer struct {
	kv    kvStore
	key   []byte
	h     command.CollHeader
	rng   *rand.Rand
	whole bool     // read whole: all holds the elements
	all   [][]byte // fields and values alternating
	shift uint     // else: an order's interval is order >> shift
}

// newDrawer is a drawer of the collection h for draws draws.
func newDrawer(kv kvStore, key []byte, h command.CollHeader, rng *rand.Rand, draws uint64) (*drawer, error) {
	d := &drawer{kv: kv, key: key, h: h, rng: rng}
	if wholeDraw(h, draws) {
		var err error
		d.whole = true
		d.all, err = allElems(kv, key, h)
		return d, err
	}
	// 2^k ≤ Count/drawSpan < 2^(k+1); Count > drawWhole makes k ≥ 4.
	d.shift = uint(64 - (bits.Len64(h.Count/drawSpan) - 1))
	return d, nil
}

// draw is one element, field and value (copies); false when the
// collection has none.
func (d *drawer) draw() (f, v []byte, ok bool, err error) {
	if d.whole {
		if len(d.all) == 0 {
			return nil, nil, false, nil
		}
		i := 2 * d.rng.IntN(len(d.all)/2)
		return d.all[i], d.all[i+1], true, nil
	}
	for range drawRounds {
		interval := d.rng.Uint64() >> d.shift
		slot, at := d.rng.IntN(drawCap), 0
		err = d.kv.elems(d.key, d.h, interval<<d.shift, func(order uint64, field, value []byte) bool {
			switch {
			case order>>d.shift != interval:
				return false
			case at == slot:
				f, v, ok = clone(field), clone(value), true
				return false
			}
			at++
			return true
		})
		if err != nil || ok {
			return f, v, ok, err
		}
	}
	return d.nth(d.rng.Uint64N(d.h.Count))
}

// wholeDraw reports whether draws draws from h read it whole.
func wholeDraw(h command.CollHeader, draws uint64) bool {
	return h.Count <= drawWhole || draws >= h.Count/drawSpan
}

// nth is the element at index i in the collection's order, or the last.
func (d *drawer) nth(i uint64) (f, v []byte, ok bool, err error) {
	err = d.kv.elems(d.key, d.h, 0, func(_ uint64, field, value []byte) bool {
		f, v, ok = clone(field), clone(value), true
		i--
		return i+1 != 0
	})
	return f, v, ok, err
}

// allElems is every element, fields and values alternating.
func allElems(kv kvStore, key []byte, h command.CollHeader) ([][]byte, error) {
	pairs := make([][]byte, 0, 2*min(h.Count, 1<<16))
	err := kv.elems(key, h, 0, func(_ uint64, f, v []byte) bool {
		pairs = append(pairs, clone(f), clone(v))
		return true
	})
	return pairs, err
}

// distinctElems chooses n distinct elements (n < h.Count), fields and
// values alternating, each set of n as likely as any other: by a partial
// shuffle of all when the draws would read it whole, else by draws, one
// drawn again when it was chosen already (rarely: n is less than a
// drawSpan-th of the collection).
func distinctElems(kv kvStore, key []byte, h command.CollHeader, rng *rand.Rand, n uint64) ([][]byte, error) {
	if wholeDraw(h, n) {
		all, err := allElems(kv, key, h)
		if err != nil {
			return nil, err
		}
		m := len(all) / 2
		n = min(n, uint64(m))
		for i := 0; i < int(n); i++ { // a partial Fisher-Yates over the pairs
			j := i + rng.IntN(m-i)
			all[2*i], all[2*j] = all[2*j], all[2*i]
			all[2*i+1], all[2*j+1] = all[2*j+1], all[2*i+1]
		}
		return all[:2*n], nil
	}
	d, err := newDrawer(kv, key, h, rng, n)
	if err != nil {
		return nil, err
	}
	chosen := make(map[string]bool, n)
	out := make([][]byte, 0, 2*n)
	for range 2*n + drawRounds { // each draw is new with a chance of 7/8 at least
		if uint64(len(chosen)) == n {
			break
		}
		f, v, ok, err := d.draw()
		if err != nil || !ok {
			return out, err
		}
		if !chosen[string(f)] {
			chosen[string(f)] = true
			out = append(out, f, v)
		}
	}
	return out, nil
}

// randomElems is ReadRandom's answer: one element, count distinct ones
// (all when count is at least the collection's size), or -count drawn
// with repeats.
func randomElems(kv kvStore, key []byte, h command.CollHeader, c *command.Command) ([][]byte, error) {
	rng := rngOf(binary.BigEndian.Uint64(c.Body))
	count := int64(binary.BigEndian.Uint64(c.Body[8:]))
	switch {
	case c.Flags&command.FlagCollCount == 0:
		count = -1
	case count == 0:
		return nil, nil
	case count > 0 && uint64(count) >= h.Count:
		return allElems(kv, key, h)
	case count > 0:
		return distinctElems(kv, key, h, rng, uint64(count))
	}
	d, err := newDrawer(kv, key, h, rng, uint64(-count))
	if err != nil {
		return nil, err
	}
	out := make([][]byte, 0, 2*min(-count, 1<<16))
	for i := int64(0); i < -count; i++ {
		f, v, ok, err := d.draw()
		if err != nil || !ok {
			return out, err
		}
		out = append(out, f, v)
	}
	return out, nil
}

// setPop is SPOP: it removes members drawn from c.Body's seed, one or
// (FlagCollCount) up to the count, and answers them, a list's encoding;
// CodeNotFound without the key.
func (a *applier) setPop(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.setPopIn(boltKV{a, tx}, c, rev)
}

func (a *applier) setPopIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	old, h, exists, code := a.collOf(kv, c.Key, command.KindSet)
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !exists:
		return &command.Result{Code: command.CodeNotFound}
	}
	rng := rngOf(binary.BigEndian.Uint64(c.Body))
	count := binary.BigEndian.Uint64(c.Body[8:])
	if c.Flags&command.FlagCollCount == 0 {
		count = 1
	}
	var pairs [][]byte
	var err error
	switch {
	case count == 0:
		return &command.Result{Code: command.CodeOK, Version: old.Version, ExpiresAt: old.ExpiresAt, Value: command.EncodeList(nil)}
	case count >= h.Count:
		pairs, err = allElems(kv, c.Key, h)
	default:
		pairs, err = distinctElems(kv, c.Key, h, rng, count)
	}
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	members := make([][]byte, 0, len(pairs)/2)
	nh := h
	for i := 0; i < len(pairs); i += 2 {
		if err := kv.delElem(c.Key, h, pairs[i]); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		nh.Count--
		nh.Bytes -= uint64(len(pairs[i]) + len(pairs[i+1]))
		members = append(members, pairs[i])
	}
	r := a.storeColl(kv, c.Key, command.KindSet, nh, old, true, rev, command.EncodeList(members))
	return r
}

// setOf is one operand of the set algebra: absent, or a set.
type setOf struct {
	key []byte
	h   command.CollHeader
	ok  bool
}

// operands reads keys as sets: CodeWrongType when one holds another
// kind (Redis checks every key before it computes).
func (a *applier) operands(kv kvStore, keys [][]byte) ([]setOf, command.Code) {
	sets := make([]setOf, len(keys))
	for i, k := range keys {
		_, h, ok, code := a.collOf(kv, k, command.KindSet)
		if code != command.CodeOK {
			return nil, code
		}
		sets[i] = setOf{k, h, ok}
	}
	return sets, command.CodeOK
}

// algebra computes the members of the intersection, union or difference
// of sets, up to limit of them (0: all), each once.
func algebra(kv kvStore, mode command.CollReadMode, sets []setOf, limit uint64) ([][]byte, error) {
	var out [][]byte
	full := func() bool { return limit != 0 && uint64(len(out)) >= limit }
	switch mode {
	case command.ReadInter, command.ReadInterCard:
		for _, s := range sets {
			if !s.ok {
				return nil, nil
			}
		}
		order := slices.Clone(sets)
		slices.SortStableFunc(order, func(x, y setOf) int { return int(min(x.h.Count, 1<<40)) - int(min(y.h.Count, 1<<40)) })
		err := kv.elems(order[0].key, order[0].h, 0, func(_ uint64, f, _ []byte) bool {
			for _, s := range order[1:] {
				if _, ok := kv.elem(s.key, s.h, f); !ok {
					return true
				}
			}
			out = append(out, clone(f))
			return !full()
		})
		return out, err
	case command.ReadUnion:
		seen := map[string]bool{}
		for _, s := range sets {
			if !s.ok {
				continue
			}
			err := kv.elems(s.key, s.h, 0, func(_ uint64, f, _ []byte) bool {
				if !seen[string(f)] {
					seen[string(f)] = true
					out = append(out, clone(f))
				}
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if !sets[0].ok { // ReadDiff
		return nil, nil
	}
	err := kv.elems(sets[0].key, sets[0].h, 0, func(_ uint64, f, _ []byte) bool {
		for _, s := range sets[1:] {
			if !s.ok {
				continue
			}
			if _, ok := kv.elem(s.key, s.h, f); ok {
				return true
			}
		}
		out = append(out, clone(f))
		return true
	})
	return out, err
}

// setAlgebra is SINTER, SUNION, SDIFF and SINTERCARD: a read of c.Key
// and the further keys in c.Value.
func (a *applier) setAlgebra(kv kvStore, c *command.Command) *command.Result {
	more, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	sets, code := a.operands(kv, append([][]byte{c.Key}, more...))
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	mode := command.CollReadMode(c.Mode)
	var limit uint64
	if mode == command.ReadInterCard {
		limit = binary.BigEndian.Uint64(c.Body)
	}
	members, err := algebra(kv, mode, sets, limit)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if mode == command.ReadInterCard {
		return &command.Result{Code: command.CodeOK, Value: strconv.AppendInt(nil, int64(len(members)), 10)}
	}
	return &command.Result{Code: command.CodeOK, Value: command.EncodeList(members)}
}

// setStore is SINTERSTORE, SUNIONSTORE and SDIFFSTORE: the members of
// the algebra of the sets in c.Value replace key c.Key, whatever it held
// (an empty result deletes it). The result carries how many, in decimal.
func (a *applier) setStore(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.setStoreIn(boltKV{a, tx}, c, rev)
}

func (a *applier) setStoreIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	srcs, err := command.DecodeList(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	sets, code := a.operands(kv, srcs)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	mode := [...]command.CollReadMode{command.ReadInter, command.ReadUnion, command.ReadDiff}[c.Mode]
	members, err := algebra(kv, mode, sets, 0)
	if err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	nh := newColl(rev)
	for _, m := range members {
		nh = nh.Grow(command.KindSet, m, nil)
	}
	if nh.Over() {
		return &command.Result{Code: command.CodeTooLong}
	}
	if err := a.dropKey(kv, c.Key); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	n := strconv.AppendInt(nil, int64(len(members)), 10)
	for _, m := range members {
		if err := kv.putElem(c.Key, nh, m, nil); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
	}
	r := a.storeColl(kv, c.Key, command.KindSet, nh, command.KVEntry{}, false, rev, n)
	if r.Code == command.CodeCreated {
		r.Code = command.CodeOK
	}
	return r
}

// setMove is SMOVE: member c.Body from set c.Key to set c.Value's key.
// The result carries "1" when it moved (or, for one key, is there), "0"
// when the source has no such member.
func (a *applier) setMove(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	return a.setMoveIn(boltKV{a, tx}, c, rev)
}

func (a *applier) setMoveIn(kv kvStore, c *command.Command, rev uint64) *command.Result {
	keys, err := command.DecodeList(c.Value)
	if err != nil || len(keys) != 1 {
		return &command.Result{Code: command.CodeBadCommand}
	}
	dst, member := keys[0], c.Body
	zero := &command.Result{Code: command.CodeOK, Value: []byte("0")}
	sold, sh, sok, code := a.collOf(kv, c.Key, command.KindSet)
	// Redis: a source absent answers 0 whatever the destination is;
	// either one of another kind is WRONGTYPE.
	switch {
	case code != command.CodeOK:
		return &command.Result{Code: code}
	case !sok:
		return zero
	}
	dold, dh, dok, code := a.collOf(kv, dst, command.KindSet)
	if code != command.CodeOK {
		return &command.Result{Code: code}
	}
	v, there := kv.elem(c.Key, sh, member)
	switch {
	case bytes.Equal(c.Key, dst) && there:
		return &command.Result{Code: command.CodeOK, Value: []byte("1")}
	case !there || bytes.Equal(c.Key, dst):
		return zero
	}
	vlen := len(v)
	var inDst bool
	if dok {
		_, inDst = kv.elem(dst, dh, member)
	} else {
		dh = newColl(rev)
	}
	ndh := dh
	if !inDst {
		if ndh = dh.Grow(command.KindSet, member, nil); ndh.Over() {
			return &command.Result{Code: command.CodeTooLong}
		}
	}
	nsh := sh
	nsh.Count--
	nsh.Bytes -= uint64(len(member) + vlen)
	if err := kv.delElem(c.Key, sh, member); err != nil {
		return &command.Result{Code: command.CodeStorage}
	}
	if r := a.storeColl(kv, c.Key, command.KindSet, nsh, sold, true, rev, nil); r.Code == command.CodeStorage {
		return r
	}
	if !inDst {
		if err := kv.putElem(dst, ndh, member, nil); err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if r := a.storeColl(kv, dst, command.KindSet, ndh, dold, dok, rev, nil); r.Code == command.CodeStorage {
			return r
		}
	}
	return &command.Result{Code: command.CodeOK, Value: []byte("1")}
}

// The applier's rows of this file's commands (commands.go joins them).
var setApplies = applies{
	command.TypeSetPop:   {remembered: true, apply: (*applier).setPop, kv: (*applier).setPopIn},
	command.TypeSetMove:  {remembered: true, apply: (*applier).setMove, kv: (*applier).setMoveIn},
	command.TypeSetStore: {remembered: true, apply: (*applier).setStore, kv: (*applier).setStoreIn},
}
