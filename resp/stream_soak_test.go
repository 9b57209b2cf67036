package resp

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// TestStreamSoakReplicasAgree: the soak of TestCollSoakReplicasAgree
// (six clients on three nodes, the leader killed midway and restarted
// from its files) with streams and their consumer groups: appends and
// trims, groups made, reset and destroyed, entries delivered, claimed,
// acknowledged and deleted, alone, in MULTI and in scripts that act on
// what they read. Every replica must then hold the same state hash: a
// group's delivery times and counts, its pending entries and consumers
// are the same on every node.
func TestStreamSoakReplicasAgree(t *testing.T) {
	if err := collSoak(t, streamSoakCmds, 60*time.Second); err != nil {
		t.Fatal(err)
	}
}

// streamSoakCmds are the stream soak's commands: four streams, two
// groups, three consumers, so commands meet on them. Errors (a group
// already made, or not yet) are answers like any other.
var streamSoakCmds = []func(r *rand.Rand) []any{
	func(r *rand.Rand) []any { return []any{"XADD", soakKey(r, "x"), "*", "f", soakM(r)} },
	func(r *rand.Rand) []any { return []any{"XADD", soakKey(r, "x"), "*", "f", soakM(r), "g", r.IntN(100)} },
	func(r *rand.Rand) []any {
		return []any{"XADD", soakKey(r, "x"), "MAXLEN", "~", 30 + r.IntN(30), "*", "f", soakM(r)}
	},
	func(r *rand.Rand) []any { return []any{"XTRIM", soakKey(r, "x"), "MAXLEN", 40 + r.IntN(40)} },
	func(r *rand.Rand) []any {
		return []any{"XGROUP", "CREATE", soakKey(r, "x"), soakGroup(r), "0", "MKSTREAM"}
	},
	func(r *rand.Rand) []any {
		return []any{"XGROUP", "CREATE", soakKey(r, "x"), soakGroup(r), "$", "MKSTREAM"}
	},
	func(r *rand.Rand) []any { return []any{"XGROUP", "SETID", soakKey(r, "x"), soakGroup(r), "0"} },
	func(r *rand.Rand) []any {
		if r.IntN(8) != 0 {
			return []any{"XGROUP", "CREATECONSUMER", soakKey(r, "x"), soakGroup(r), soakConsumer(r)}
		}
		return []any{"XGROUP", "DESTROY", soakKey(r, "x"), soakGroup(r)}
	},
	func(r *rand.Rand) []any {
		return []any{"XGROUP", "DELCONSUMER", soakKey(r, "x"), soakGroup(r), soakConsumer(r)}
	},
	func(r *rand.Rand) []any {
		return []any{"XREADGROUP", "GROUP", soakGroup(r), soakConsumer(r), "COUNT", 1 + r.IntN(4), "STREAMS", soakKey(r, "x"), ">"}
	},
	func(r *rand.Rand) []any {
		return []any{"XREADGROUP", "GROUP", soakGroup(r), soakConsumer(r), "COUNT", 3, "NOACK", "STREAMS", soakKey(r, "x"), ">"}
	},
	func(r *rand.Rand) []any {
		return []any{"XREADGROUP", "GROUP", soakGroup(r), soakConsumer(r), "STREAMS", soakKey(r, "x"), "0"}
	},
	func(r *rand.Rand) []any {
		return []any{"XAUTOCLAIM", soakKey(r, "x"), soakGroup(r), soakConsumer(r), 0, "0-0", "COUNT", 1 + r.IntN(3)}
	},
	func(r *rand.Rand) []any {
		return []any{"XAUTOCLAIM", soakKey(r, "x"), soakGroup(r), soakConsumer(r), 0, "0-0", "COUNT", 2, "JUSTID"}
	},
	func(r *rand.Rand) []any { return []any{"DEL", soakKey(r, "x")} },
	// Scripts act on what they read: acknowledge, claim and delete the
	// entries a group's pending list or a range named.
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local p = redis.call('xpending', KEYS[1], ARGV[1], '-', '+', 3); for _, e in ipairs(p) do redis.call('xack', KEYS[1], ARGV[1], e[1]) end; return #p",
			1, soakKey(r, "x"), soakGroup(r)}
	},
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local p = redis.call('xpending', KEYS[1], ARGV[1], '-', '+', 2); for _, e in ipairs(p) do redis.call('xclaim', KEYS[1], ARGV[1], ARGV[2], 0, e[1]) end; return #p",
			1, soakKey(r, "x"), soakGroup(r), soakConsumer(r)}
	},
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local e = redis.call('xrange', KEYS[1], '-', '+', 'COUNT', 1); if #e > 0 then redis.call('xdel', KEYS[1], e[1][1]) end; return #e",
			1, soakKey(r, "x")}
	},
	func(r *rand.Rand) []any {
		return []any{"EVAL", "local e = redis.call('xreadgroup', 'GROUP', ARGV[1], ARGV[2], 'COUNT', 2, 'STREAMS', KEYS[1], '>'); if e then for _, x in ipairs(e[1][2]) do redis.call('xack', KEYS[1], ARGV[1], x[1]) end end; return 1",
			1, soakKey(r, "x"), soakGroup(r), soakConsumer(r)}
	},
}

func soakGroup(r *rand.Rand) string    { return "g" + strconv.Itoa(r.IntN(2)) }
func soakConsumer(r *rand.Rand) string { return "c" + strconv.Itoa(r.IntN(3)) }
