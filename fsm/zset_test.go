package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// zaddN adds members m0..m(n-1) with score i*step to key, in ZADDs of
// at most 10000.
func zaddN(h *harness, key string, n int, step float64) {
	h.t.Helper()
	for lo := 0; lo < n; lo += 10000 {
		var scores []float64
		var members [][]byte
		for i := lo; i < min(n, lo+10000); i++ {
			scores, members = append(scores, float64(i)*step), append(members, fmt.Appendf(nil, "m%d", i))
		}
		if r := h.apply(*command.ZAddCommand([]byte(key), scores, members, 0)); r.Code != command.CodeOK && r.Code != command.CodeCreated {
			h.t.Fatalf("ZADD: code %d", r.Code)
		}
	}
}

// zscoreTags counts the sorted set's entries of each tag: they must be
// as many.
func zscoreTags(t *testing.T, h *harness) (tag0, tag1 int) {
	t.Helper()
	if err := h.f.view(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketElems).ForEach(func(k, _ []byte) error {
			if len(k) > 8 && k[8] == command.TagScore {
				tag1++
			} else {
				tag0++
			}
			return nil
		})
	}); err != nil {
		t.Fatal(err)
	}
	return tag0, tag1
}

// TestZSetScoreChangeWritesFewPages: a change of one member's score in a
// sorted set of 100000 rewrites about as many pages as in one of 10:
// its two entries and the header, not the set.
func TestZSetScoreChangeWritesFewPages(t *testing.T) {
	h := newHarness(t)
	pages := func(key string) int64 {
		s := h.f.db.Stats()
		before := s.TxStats.GetWrite()
		r := h.apply(*command.ZAddCommand([]byte(key), []float64{-12345.5}, [][]byte{[]byte("m5")}, command.ZAddXX|command.ZAddCH))
		if r.Code != command.CodeOK || string(r.Value) != "1" {
			t.Fatalf("ZADD XX CH: %d %q", r.Code, r.Value)
		}
		s = h.f.db.Stats()
		return s.TxStats.GetWrite() - before
	}
	zaddN(h, "small", 10, 1)
	zaddN(h, "big", 100000, 1)
	small, big := pages("small"), pages("big")
	if big > small+12 || big > 32 {
		t.Fatalf("one score of a 100000-member sorted set wrote %d pages, of a 10-member one %d", big, small)
	}
	t.Logf("pages written by one ZADD XX: 10 members %d, 100000 members %d", small, big)
	r := h.apply(*command.ZRangeCommand([]byte("big"), command.ZRangeSpec{By: command.ZByRank, Start: 0, Stop: 1, Limit: -1}))
	pairs, _ := command.DecodeElems(r.Value)
	if len(pairs) != 4 || string(pairs[0]) != "m5" || command.ScoreOf(binary.BigEndian.Uint64(pairs[1])) != -12345.5 || string(pairs[2]) != "m0" {
		t.Fatalf("the lowest after the change: %q", pairs)
	}
	if t0, t1 := zscoreTags(t, h); t0 != t1 || t0 != 100010 {
		t.Fatalf("entries: tag 0 %d, tag 1 %d, want 100010 each", t0, t1)
	}
}

// TestZSetSnapshotKeepsBothIndexes: a snapshot restored holds both
// indexes (the same data hash), read and written as before; an expiry
// then removes both.
func TestZSetSnapshotKeepsBothIndexes(t *testing.T) {
	a, b := newHarness(t), newHarness(t)
	zaddN(a, "z", 3000, -0.5)
	a.apply(*command.KVExpireCommand([]byte("z"), time.Hour, 0))
	if err := b.f.Restore(io.NopCloser(bytes.NewReader(snapshotBytes(t, a.f)))); err != nil {
		t.Fatal(err)
	}
	ha, _ := a.f.DataHash()
	hb, _ := b.f.DataHash()
	if ha != hb {
		t.Fatal("the restored state's data hash differs")
	}
	b.index, b.clock = a.index, a.clock
	spec := command.ZRangeSpec{By: command.ZByScore, Min: -10, Max: -9, Limit: -1}
	r := b.apply(*command.ZRangeCommand([]byte("z"), spec))
	pairs, _ := command.DecodeElems(r.Value)
	if r.Code != command.CodeOK || len(pairs) != 6 || string(pairs[0]) != "m20" || string(pairs[4]) != "m18" {
		t.Fatalf("ZRANGEBYSCORE after restore: %d %q", r.Code, pairs)
	}
	if r := b.apply(*command.ZRemRangeCommand([]byte("z"), command.ZRangeSpec{By: command.ZByRank, Stop: 9, Limit: -1}, true)); r.Code != command.CodeOK {
		t.Fatalf("ZPOPMIN after restore: %d", r.Code)
	}
	if t0, t1 := zscoreTags(t, b); t0 != 2990 || t1 != 2990 {
		t.Fatalf("after ZPOPMIN 10: tag 0 %d, tag 1 %d", t0, t1)
	}
	b.advance(2 * time.Hour)
	due, _ := b.f.Due(b.now(), 10)
	b.apply(*command.ExpireCommand(due))
	b.reclaim()
	if n := b.elemCount(); n != 0 {
		t.Fatalf("after the sorted set's expiry: %d elements", n)
	}
}

// TestZSetSandboxAnswersAsTheStore: the sorted set's commands answer the
// same in a script's sandbox (whose score order is its members' scores
// sorted) as in the state machine, random choices included.
func TestZSetSandboxAnswersAsTheStore(t *testing.T) {
	h := newHarness(t)
	zaddN(h, "z", 300, 0.25)
	h.apply(*command.ZAddCommand([]byte("z"), []float64{0, 0, 0, math.Inf(1), math.Inf(-1)}, [][]byte{[]byte("a"), []byte("b"), []byte(""), []byte("hi"), []byte("lo")}, 0))
	zr := func(s command.ZRangeSpec) *command.Command { return command.ZRangeCommand([]byte("z"), s) }
	cmds := []*command.Command{
		zr(command.ZRangeSpec{By: command.ZByRank, Start: 3, Stop: 20, Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByRank, Rev: true, Start: -5, Stop: -1, Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByScore, Min: 1, Max: 3, MinEx: true, Offset: 1, Limit: 4}),
		zr(command.ZRangeSpec{By: command.ZByScore, Rev: true, Min: math.Inf(-1), Max: 2, MaxEx: true, Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByScore, Rev: true, Min: 70, Max: math.Inf(1), Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByScore, Count: true, Min: 0, Max: 10, Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByLex, LexMinInf: -1, LexMax: []byte("b"), Limit: -1}),
		zr(command.ZRangeSpec{By: command.ZByLex, Rev: true, LexMin: []byte("a"), MinEx: true, LexMaxInf: 1, Limit: -1}),
		command.ZRankCommand([]byte("z"), []byte("m100"), false),
		command.ZRankCommand([]byte("z"), []byte("m100"), true),
		command.ZRankCommand([]byte("z"), []byte("absent"), false),
		zrandCommand([]byte("z"), 9, -7, true),
		zrandCommand([]byte("z"), 10, 20, true),
		command.ZAddCommand([]byte("z"), []float64{5, 1e9}, [][]byte{[]byte("m1"), []byte("new")}, command.ZAddCH|command.ZAddGT),
		command.ZAddCommand([]byte("z"), []float64{2.5}, [][]byte{[]byte("m1")}, command.ZAddIncr),
		command.ZRemCommand([]byte("z"), [][]byte{[]byte("m2"), []byte("hi")}),
		command.ZRemRangeCommand([]byte("z"), command.ZRangeSpec{By: command.ZByRank, Start: 0, Stop: 2, Limit: -1}, true),
		command.ZRemRangeCommand([]byte("z"), command.ZRangeSpec{By: command.ZByRank, Rev: true, Start: 0, Stop: 0, Limit: -1}, true),
		command.ZRemRangeCommand([]byte("z"), command.ZRangeSpec{By: command.ZByScore, Min: 10, Max: 20, Limit: -1}, false),
		zr(command.ZRangeSpec{By: command.ZByRank, Start: 0, Stop: -1, Limit: -1}),
	}
	sb := NewSandbox(h.clock, wholeBase(h), nil)
	var inBox []*command.Result
	for _, c := range cmds {
		r, err := sb.Apply(c)
		if err != nil {
			t.Fatalf("sandbox %s: %v", c.Type, err)
		}
		inBox = append(inBox, r)
	}
	for i, c := range cmds {
		want, got := h.apply(*c), inBox[i]
		if got.Code != want.Code || !bytes.Equal(got.Value, want.Value) {
			t.Fatalf("%d %s: sandbox %d %q, store %d %q", i, c.Type, got.Code, clip(got.Value), want.Code, clip(want.Value))
		}
	}
	if t0, t1 := zscoreTags(t, h); t0 != t1 {
		t.Fatalf("entries: tag 0 %d, tag 1 %d", t0, t1)
	}
}

// zrandCommand reads members at random (ZRANDMEMBER), as resp builds it.
func zrandCommand(key []byte, seed uint64, count int64, hasCount bool) *command.Command {
	c := command.CollReadCommand(key, false, command.ReadRandom, nil, int64(seed), count, hasCount)
	c.Flags |= command.FlagCollZSet
	return c
}
