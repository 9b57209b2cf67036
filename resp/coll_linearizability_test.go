package resp

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/redis/go-redis/v9"
)

// collOp is an operation on one member of a hash (a field) or of a sorted
// set, or a read of them all.
type collOp int

const (
	collPut  collOp = iota // HSET key m n / ZADD key n m: 1 if m is new
	collIncr               // HINCRBY key m n / ZINCRBY key n m: the new value
	collDel                // HDEL key m / ZREM key m: 1 if m was there
	collGet                // HGET key m / ZSCORE key m: the value, or nil
	collAll                // HGETALL key / ZRANGE key 0 -1 WITHSCORES
)

var collOpNames = [...]string{"put", "incr", "del", "get", "all"}

// collIn is what a client asked. Ordered: collAll's answer is in score
// order, then by member (a sorted set's ZRANGE); else by member (HGETALL,
// whose order the client sorted away).
type collIn struct {
	Op      collOp
	Key     string
	Member  string
	N       int64
	Ordered bool
}

// collOut is what it saw. Unknown: no answer, so it may or may not have
// happened (with any result).
type collOut struct {
	Unknown bool
	Nil     bool
	N       int64
	All     string // collAll: "m=n " for each member
}

// collModel is a hash or a sorted set with integer values, whole per key
// (so a read of all its members is checked too), partitioned by key. A
// state is its members' encoding in member order (comparable, so
// porcupine's memo works): "a=3 b=-1 ".
var collModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(collIn).Key
			byKey[k] = append(byKey[k], op)
		}
		keys := make([]string, 0, len(byKey))
		for k := range byKey {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() interface{} { return "" },
	Step: func(st, in, out interface{}) (bool, interface{}) {
		m, i, o := collDecode(st.(string)), in.(collIn), out.(collOut)
		v, had := m[i.Member]
		ok := true
		switch i.Op {
		case collPut:
			ok = o.N == b2i(!had)
			m[i.Member] = i.N
		case collIncr:
			ok = o.N == v+i.N
			m[i.Member] = v + i.N
		case collDel:
			ok = o.N == b2i(had)
			delete(m, i.Member)
		case collGet:
			ok = o.Nil == !had && (!had || o.N == v)
		case collAll:
			ok = o.All == collAllOf(m, i.Ordered)
		}
		return o.Unknown || ok, collEncode(m)
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(collIn), out.(collOut)
		s := fmt.Sprintf("%s(%s %s %d) -> ", collOpNames[i.Op], i.Key, i.Member, i.N)
		switch {
		case o.Unknown:
			return s + "?"
		case o.Nil:
			return s + "nil"
		case i.Op == collAll:
			return s + o.All
		}
		return s + strconv.FormatInt(o.N, 10)
	},
	DescribeState: func(st interface{}) string { return st.(string) },
}

func collDecode(s string) map[string]int64 {
	m := map[string]int64{}
	for _, f := range strings.Fields(s) {
		k, v, _ := strings.Cut(f, "=")
		m[k], _ = strconv.ParseInt(v, 10, 64)
	}
	return m
}

func collEncode(m map[string]int64) string { return collAllOf(m, false) }

// collAllOf is m as collAll answers it: in member order, or in (value,
// member) order.
func collAllOf(m map[string]int64, ordered bool) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if ordered && m[keys[a]] != m[keys[b]] {
			return m[keys[a]] < m[keys[b]]
		}
		return keys[a] < keys[b]
	})
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%d ", k, m[k])
	}
	return b.String()
}

// collDo sends in as a hash's or a sorted set's command through cmds, runs
// it (run: alone, or EXEC of its transaction) and reads the answer.
func collDo(ctx context.Context, cmds redis.Cmdable, run func(redis.Cmder) error, zset bool, in collIn) (collOut, error) {
	var o collOut
	n := strconv.FormatInt(in.N, 10)
	switch in.Op {
	case collPut:
		if zset {
			cmd := cmds.ZAdd(ctx, in.Key, redis.Z{Score: float64(in.N), Member: in.Member})
			err := run(cmd)
			o.N = cmd.Val()
			return o, err
		}
		cmd := cmds.HSet(ctx, in.Key, in.Member, n)
		err := run(cmd)
		o.N = cmd.Val()
		return o, err
	case collIncr:
		if zset {
			cmd := cmds.ZIncrBy(ctx, in.Key, float64(in.N), in.Member)
			err := run(cmd)
			o.N = int64(cmd.Val())
			return o, err
		}
		cmd := cmds.HIncrBy(ctx, in.Key, in.Member, in.N)
		err := run(cmd)
		o.N = cmd.Val()
		return o, err
	case collDel:
		var cmd *redis.IntCmd
		if zset {
			cmd = cmds.ZRem(ctx, in.Key, in.Member)
		} else {
			cmd = cmds.HDel(ctx, in.Key, in.Member)
		}
		err := run(cmd)
		o.N = cmd.Val()
		return o, err
	case collGet:
		var err error
		if zset {
			cmd := cmds.ZScore(ctx, in.Key, in.Member)
			err = run(cmd)
			o.N = int64(cmd.Val())
		} else {
			cmd := cmds.HGet(ctx, in.Key, in.Member)
			err = run(cmd)
			if err == nil {
				o.N, err = strconv.ParseInt(cmd.Val(), 10, 64)
			}
		}
		if errors.Is(err, redis.Nil) {
			return collOut{Nil: true}, nil
		}
		return o, err
	}
	m := map[string]int64{}
	if zset {
		cmd := cmds.ZRangeWithScores(ctx, in.Key, 0, -1)
		err := run(cmd)
		var b strings.Builder
		for _, z := range cmd.Val() {
			fmt.Fprintf(&b, "%s=%d ", z.Member, int64(z.Score))
		}
		o.All = b.String()
		return o, err
	}
	cmd := cmds.HGetAll(ctx, in.Key)
	err := run(cmd)
	for f, v := range cmd.Val() {
		m[f], _ = strconv.ParseInt(v, 10, 64)
	}
	o.All = collAllOf(m, false)
	return o, err
}

// TestCollLinearizableAcrossLeaderKill: nine go-redis clients, three per
// node, run HSET, HINCRBY, HDEL, HGET and HGETALL on three hashes (and
// ZADD, ZINCRBY, ZREM, ZSCORE and ZRANGE WITHSCORES on three sorted sets),
// each alone or as the one command of a MULTI/EXEC, while the leader (its
// listener and its store) is killed midway; the history, as the clients
// saw it, must be linearizable (collModel, a whole hash or sorted set per
// key). A write whose reply never came may or may not have happened; a
// read that failed did nothing and is left out.
func TestCollLinearizableAcrossLeaderKill(t *testing.T) {
	for _, zset := range []bool{false, true} {
		name := map[bool]string{false: "hash", true: "zset"}[zset]
		t.Run(name, func(t *testing.T) {
			ops := collKillHistory(t, zset)
			res, info := porcupine.CheckOperationsVerbose(collModel, ops, 60*time.Second)
			if res != porcupine.Ok {
				path := t.TempDir() + "/history.html"
				porcupine.VisualizePath(collModel, info, path)
				t.Fatalf("%s history over the Redis protocol is %v (visualization: %s)", name, res, path)
			}
		})
	}
}

// collKillHistory is killHistory's history of a hash's (or a sorted
// set's) operations on three keys of three members each.
func collKillHistory(t *testing.T, zset bool) []porcupine.Operation {
	return killHistory(t, 2, collOut{Unknown: true}, func(ctx context.Context, _, _ int, rng *rand.Rand, cmds redis.Cmdable, run func(redis.Cmder) error) (any, any, bool, error) {
		in := collIn{Op: collOp(rng.IntN(5)), Key: fmt.Sprint("lin:", rng.IntN(3)),
			Member: fmt.Sprint("m", rng.IntN(3)), N: int64(rng.IntN(9) - 4), Ordered: zset}
		out, err := collDo(ctx, cmds, run, zset, in)
		return in, out, in.Op == collGet || in.Op == collAll, err
	})
}

// TestCollModelRejects: the model is able to say no: a lost write, a
// stale read, a wrong order, a double create.
func TestCollModelRejects(t *testing.T) {
	op := func(c int, call, ret int64, in collIn, out collOut) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: in, Output: out}
	}
	put := collIn{Op: collPut, Key: "k", Member: "a", N: 2, Ordered: true}
	for _, tt := range []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"put then get", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(1, 2, 3, collIn{Op: collGet, Key: "k", Member: "a"}, collOut{N: 2})}, porcupine.Ok},
		{"stale get", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(1, 2, 3, collIn{Op: collGet, Key: "k", Member: "a"}, collOut{Nil: true})}, porcupine.Illegal},
		{"double create", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(1, 2, 3, put, collOut{N: 1})}, porcupine.Illegal},
		{"unknown put may have happened", []porcupine.Operation{op(0, 0, math.MaxInt64, put, collOut{Unknown: true}), op(1, 2, 3, collIn{Op: collIncr, Key: "k", Member: "a", N: 1}, collOut{N: 3})}, porcupine.Ok},
		{"unknown put may not have happened", []porcupine.Operation{op(0, 0, math.MaxInt64, put, collOut{Unknown: true}), op(1, 2, 3, collIn{Op: collIncr, Key: "k", Member: "a", N: 1}, collOut{N: 1})}, porcupine.Ok},
		{"lost incr", []porcupine.Operation{op(0, 0, 1, collIn{Op: collIncr, Key: "k", Member: "a", N: 1}, collOut{N: 1}), op(1, 2, 3, collIn{Op: collIncr, Key: "k", Member: "a", N: 1}, collOut{N: 1})}, porcupine.Illegal},
		{"score order", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(0, 2, 3, collIn{Op: collPut, Key: "k", Member: "b", N: 1}, collOut{N: 1}), op(1, 4, 5, collIn{Op: collAll, Key: "k", Ordered: true}, collOut{All: "b=1 a=2 "})}, porcupine.Ok},
		{"wrong order", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(0, 2, 3, collIn{Op: collPut, Key: "k", Member: "b", N: 1}, collOut{N: 1}), op(1, 4, 5, collIn{Op: collAll, Key: "k", Ordered: true}, collOut{All: "a=2 b=1 "})}, porcupine.Illegal},
		{"deleted member read", []porcupine.Operation{op(0, 0, 1, put, collOut{N: 1}), op(0, 2, 3, collIn{Op: collDel, Key: "k", Member: "a"}, collOut{N: 1}), op(1, 4, 5, collIn{Op: collAll, Key: "k"}, collOut{All: "a=2 "})}, porcupine.Illegal},
	} {
		if got := porcupine.CheckOperations(collModel, tt.ops); got != (tt.want == porcupine.Ok) {
			t.Errorf("%s: linearizable %v, want %v", tt.name, got, tt.want)
		}
	}
}
