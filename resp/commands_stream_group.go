package resp

import (
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// A stream's consumer groups, with Redis 7.0's replies: XGROUP, XREADGROUP,
// XACK, XPENDING, XCLAIM, XAUTOCLAIM, XINFO GROUPS and CONSUMERS, and the
// groups of XINFO STREAM FULL. Each is one state machine command
// (command.StreamGroupCommand, StreamGroupReadCommand), so a delivery, an
// acknowledgement or a claim is whole on every replica; XREADGROUP is a
// write (it moves the group's last delivered id and its PEL). Redis checks
// the key and the group before some arguments: such an argument that does
// not parse travels with the command (GroupBadID), and its refusal is
// answered when the key's and the group's checks have passed. XREADGROUP
// BLOCK waits on this node (blocking.go) for its streams to change, an
// XADD applied from any node, then proposes again.

const (
	msgXGroupNoKey      = "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."
	msgXGroupBusy       = "BUSYGROUP Consumer Group name already exists"
	msgXGroupEntries    = "ERR value for ENTRIESREAD must be positive or -1"
	msgXReadGroupNoGrp  = "ERR Missing GROUP option for XREADGROUP"
	msgXReadGroupDollar = "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set."
	msgXGroupUnblocked  = "UNBLOCKED the stream key no longer exists"
	msgXGroupGone       = "NOGROUP the consumer group this client was blocked on no longer exists"
	msgXAutoClaimCount  = "ERR COUNT must be > 0"
	msgXAutoClaimMemory = "ERR Insufficient memory, failed allocating transient memory, COUNT too high."
)

// xgroupSubs is XGROUP's subcommands with their arity, as Redis 7.0's
// command table gives them.
var xgroupSubs = map[string]int{"create": -5, "setid": -5, "destroy": 4, "createconsumer": 5, "delconsumer": 5, "help": 2}

var xgroupHelp = []string{
	"XGROUP <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CREATE <key> <groupname> <id|$> [option]",
	"    Create a new consumer group. Options are:",
	"    * MKSTREAM",
	"      Create the empty stream if it does not exist.",
	"    * ENTRIESREAD entries_read",
	"      Set the group's entries_read counter (internal use).",
	"CREATECONSUMER <key> <groupname> <consumer>",
	"    Create a new consumer in the specified group.",
	"DELCONSUMER <key> <groupname> <consumer>",
	"    Remove the specified consumer.",
	"DESTROY <key> <groupname>",
	"    Remove the specified group.",
	"SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
	"    Set the current group ID and entries_read counter.",
	"HELP",
	"    Prints this help.",
}

// autoClaimMaxCount is XAUTOCLAIM's largest COUNT (LONG_MAX / 16, as
// Redis's); maxAutoClaimAlloc is the largest whose deleted-ids buffer
// (16 bytes each) Redis's allocator gives on a 64-bit machine (2^47
// bytes of address space): past it Redis answers it is out of memory,
// and so does idemgate, which allocates no such buffer.
const (
	autoClaimMaxCount = math.MaxInt64 / 16
	maxAutoClaimAlloc = 1 << 43
	xreadBlockedCount = 1000 // XREAD_BLOCKED_DEFAULT_COUNT
)

func init() {
	wr := func(name string, arity int, fn func(*conn, [][]byte) plan, flags ...string) *redisCommand {
		return &redisCommand{name: name, op: command.TypeStreamGroup, arity: arity, flags: append([]string{"write"}, flags...),
			firstKey: 1, lastKey: 1, step: 1, plan: fn}
	}
	plain := func(fn func([][]byte) plan) func(*conn, [][]byte) plan {
		return func(_ *conn, a [][]byte) plan { return fn(a) }
	}
	xgroup := wr("xgroup", -2, plain(planXGroup))
	xgroup.firstKey, xgroup.lastKey, xgroup.step = 2, 2, 1
	xgroup.sub = xgroupRefusal
	xreadgroup := wr("xreadgroup", -7, planXReadGroup, "blocking", "movablekeys")
	xreadgroup.firstKey, xreadgroup.lastKey, xreadgroup.step = 0, 0, 0
	pending := streamRd("xpending", -3, 1, planXPending)
	pending.op = command.TypeStreamGroupRead
	register(xgroup, xreadgroup,
		wr("xack", -4, plain(planXAck)),
		wr("xclaim", -6, plain(planXClaim)),
		wr("xautoclaim", -6, plain(planXAutoClaim)),
		pending,
	)
	xinfoSubs["groups"] = xinfoSub{arity: 3, plan: planXInfoGroups}
	xinfoSubs["consumers"] = xinfoSub{arity: 4, plan: planXInfoConsumers}
}

// xgroupRefusal refuses an XGROUP subcommand unknown, or of the wrong
// arity, as Redis looks it up.
func xgroupRefusal(a [][]byte) string {
	sub := strings.ToLower(string(a[1]))
	arity, ok := xgroupSubs[sub]
	switch {
	case !ok:
		return "ERR unknown subcommand '" + clip(a[1]) + "'. Try XGROUP HELP."
	case (arity > 0 && len(a) != arity) || (arity < 0 && len(a) < -arity):
		return "ERR wrong number of arguments for 'xgroup|" + sub + "' command"
	}
	return ""
}

func xgroupSyntax(a [][]byte) string {
	return "ERR unknown subcommand or wrong number of arguments for '" + clip(a[1]) + "'. Try XGROUP HELP."
}

// groupRefusal answers a refusal of the state machine's (CodeWrongState:
// command.GroupNoKey ...) with Redis's words: noKey and noGroup given
// the key's index, badID Redis's refusal of the argument that did not
// parse.
func groupRefusal(w *writer, res *command.Result, noKey, noGroup func(i int) string, badID string) {
	i, why := 0, byte(0)
	if len(res.Value) == 9 {
		i, why = int(command.NumOf(res.Value[:8])), res.Value[8]
	}
	switch why {
	case command.GroupNoKey:
		w.errorLine(noKey(i))
	case command.GroupNoGroup:
		w.errorLine(noGroup(i))
	case command.GroupBadIDs:
		w.errorLine(badID)
	default:
		w.errorLine(errorReply(res.Err()))
	}
}

// answerGroup answers a group command's result: ok writes a success;
// refusals as groupRefusal says.
func answerGroup(w *writer, r storeapi.OpResult, ok func(res *command.Result), noKey, noGroup func(i int) string, badID string) {
	if r.Err != nil {
		w.errorLine(errorReply(r.Err))
		return
	}
	switch r.Res.Code {
	case command.CodeWrongState:
		groupRefusal(w, r.Res, noKey, noGroup, badID)
	case command.CodeExists:
		w.errorLine(msgXGroupBusy)
	default:
		answerColl(w, r, ok)
	}
}

// noGroupOf is Redis's "No such key or consumer group" refusal of key
// and group (suffix: XREADGROUP's).
func noGroupOf(key, group []byte, suffix string) func(int) string {
	return func(int) string {
		return fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s'%s", key, group, suffix)
	}
}

// checkGroupNames refuses names past the bound (Redis has none).
func checkGroupNames(names ...[]byte) string {
	for _, n := range names {
		if len(n) > command.MaxGroupName {
			return "ERR " + command.ErrGroupNameTooLong.Error()
		}
	}
	return ""
}

// planXGroup is XGROUP's subcommands (t_stream.c's xgroupCommand):
// CREATE's and SETID's options first, then the key and the group, then
// the subcommand's arity, then the id.
func planXGroup(a [][]byte) plan {
	sub := strings.ToLower(string(a[1]))
	if sub == "help" {
		return plan{answer: func(w *writer, _ []storeapi.OpResult) {
			w.array(len(xgroupHelp))
			for _, l := range xgroupHelp {
				w.simple(l)
			}
		}}
	}
	var args command.GroupArgs
	args.Group = a[3]
	for i := 5; i < len(a); {
		switch opt := strings.ToLower(string(a[i])); {
		case sub == "create" && opt == "mkstream":
			args.Flags |= command.GroupMkStream
			i++
		case (sub == "create" || sub == "setid") && opt == "entriesread" && i+1 < len(a):
			n, ok := parseInt64(a[i+1])
			switch {
			case !ok:
				return plan{err: msgNotInteger}
			case n < 0 && n != command.InvalidEntriesRead:
				return plan{err: msgXGroupEntries}
			}
			args.EntriesRead = n
			args.Flags |= command.GroupEntriesRead
			i += 2
		default:
			return plan{err: xgroupSyntax(a)}
		}
	}
	var op command.GroupOp
	badID := ""
	switch sub {
	case "create", "setid":
		op = command.GroupCreate
		if sub == "setid" {
			op = command.GroupSetID
			if len(a) != 5 && len(a) != 7 {
				badID = xgroupSyntax(a)
			}
		} else if len(a) > 8 {
			badID = xgroupSyntax(a)
		}
		if badID == "" {
			switch id, _, ok := parseStreamID(a[4], sub == "create", 0, false); {
			case string(a[4]) == "$":
				args.Flags |= command.GroupLastID
			case !ok:
				badID = msgStreamID
			default:
				args.ID = id
			}
		}
	case "destroy":
		op = command.GroupDestroy
	case "createconsumer", "delconsumer":
		op = command.GroupCreateConsumer
		if sub == "delconsumer" {
			op = command.GroupDelConsumer
		}
		args.Consumer = a[4]
	}
	if badID != "" {
		args.Flags |= command.GroupBadID
	}
	if refusal := checkGroupNames(args.Group, args.Consumer); refusal != "" {
		return plan{err: refusal}
	}
	noKey := func(int) string { return msgXGroupNoKey }
	noGroup := func(int) string {
		return fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", a[3], a[2])
	}
	op1 := command.StreamGroupCommand(a[2], nil, op, args)
	return plan{ops: []*command.Command{op1}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			if op == command.GroupCreate || op == command.GroupSetID {
				w.ok()
				return
			}
			w.integer(decimal(res))
		}, noKey, noGroup, badID)
	}}
}

// planXAck is XACK key group id [id ...]: an absent key or group is 0
// acknowledged, before the ids are parsed.
func planXAck(a [][]byte) plan {
	args := command.GroupArgs{Group: a[2]}
	if refusal := checkGroupNames(args.Group); refusal != "" {
		return plan{err: refusal}
	}
	args.IDs = make([]command.StreamID, 0, len(a)-3)
	for _, b := range a[3:] {
		id, _, ok := parseStreamID(b, true, 0, false)
		if !ok {
			args.Flags, args.IDs = args.Flags|command.GroupBadID, []command.StreamID{{}}
			break
		}
		args.IDs = append(args.IDs, id)
	}
	op := command.StreamGroupCommand(a[1], nil, command.GroupAck, args)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) { w.integer(decimal(res)) }, nil, nil, msgStreamID)
	}}
}

// planXClaim is XCLAIM key group consumer min-idle-time id [id ...]
// [IDLE ms] [TIME ms] [RETRYCOUNT n] [FORCE] [JUSTID] [LASTID id]: the key
// and group first, then min-idle-time, then the options after the ids.
func planXClaim(a [][]byte) plan {
	args := command.GroupArgs{Group: a[2], Consumer: a[3], Retry: -1}
	if refusal := checkGroupNames(args.Group, args.Consumer); refusal != "" {
		return plan{err: refusal}
	}
	badID := ""
	bad := func(msg string) {
		if badID == "" {
			badID = msg
		}
	}
	if n, ok := parseInt64(a[4]); ok {
		args.MinIdle = max(n, 0)
	} else {
		bad("ERR Invalid min-idle-time argument for XCLAIM")
	}
	j := 5
	for ; j < len(a); j++ {
		id, _, ok := parseStreamID(a[j], true, 0, false)
		if !ok {
			break
		}
		args.IDs = append(args.IDs, id)
	}
	for ; j < len(a) && badID == ""; j++ {
		more := len(a) - 1 - j
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "force":
			args.Flags |= command.GroupForce
		case opt == "justid":
			args.Flags |= command.GroupJustID
		case (opt == "idle" || opt == "time" || opt == "retrycount") && more > 0:
			j++
			n, ok := parseInt64(a[j])
			if !ok {
				bad(fmt.Sprintf("ERR Invalid %s option argument for XCLAIM", strings.ToUpper(opt)))
				break
			}
			switch opt {
			case "idle":
				args.Time, args.Flags = n, (args.Flags|command.GroupIdle)&^command.GroupTime
			case "time":
				args.Time, args.Flags = n, (args.Flags|command.GroupTime)&^command.GroupIdle
			default:
				args.Retry = n
			}
		case opt == "lastid" && more > 0:
			j++
			id, _, ok := parseStreamID(a[j], true, 0, false)
			if !ok {
				bad(msgStreamID)
				break
			}
			args.ID = id
			args.Flags |= command.GroupSetLast
		default:
			bad(fmt.Sprintf("ERR Unrecognized XCLAIM option '%s'", a[j]))
		}
	}
	if args.Flags&command.GroupIdle != 0 && args.Time < 0 {
		args.Time = -1 // an idle time in the future: the delivery is now
	}
	if badID != "" {
		args.Flags |= command.GroupBadID
	}
	justID := args.Flags&command.GroupJustID != 0
	op := command.StreamGroupCommand(a[1], nil, command.GroupClaim, args)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			es, err := command.DecodeGroupEntries(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			writeGroupEntries(w, es, justID)
		}, noGroupOf(a[1], a[2], ""), noGroupOf(a[1], a[2], ""), badID)
	}}
}

// writeGroupEntries answers entries as [id, [field, value ...]] (one
// deleted: [id, null array]), or their ids alone.
func writeGroupEntries(w *writer, es []command.GroupEntry, justID bool) {
	w.array(len(es))
	for _, e := range es {
		if justID {
			w.bulk(e.ID.Append(nil))
			continue
		}
		w.array(2)
		w.bulk(e.ID.Append(nil))
		if e.Fields == nil {
			w.nullArray()
			continue
		}
		w.array(len(e.Fields))
		for _, f := range e.Fields {
			w.bulk(f)
		}
	}
}

// planXAutoClaim is XAUTOCLAIM key group consumer min-idle-time start
// [COUNT count] [JUSTID]: its arguments are parsed before the key is
// looked at.
func planXAutoClaim(a [][]byte) plan {
	args := command.GroupArgs{Group: a[2], Consumer: a[3], Count: 100}
	n, ok := parseInt64(a[4])
	if !ok {
		return plan{err: "ERR Invalid min-idle-time argument for XAUTOCLAIM"}
	}
	args.MinIdle = max(n, 0)
	start, ex, ok := parseIntervalID(a[5], 0)
	if !ok {
		return plan{err: msgStreamID}
	}
	if ex {
		if start, ok = start.Next(); !ok {
			return plan{err: msgStreamStart}
		}
	}
	args.ID = start
	for j := 6; j < len(a); j++ {
		switch opt := strings.ToLower(string(a[j])); {
		case opt == "count" && j+1 < len(a):
			c, ok := parseInt64(a[j+1])
			if !ok || c < 1 || c > autoClaimMaxCount {
				return plan{err: msgXAutoClaimCount}
			}
			args.Count = c
			j++
		case opt == "justid":
			args.Flags |= command.GroupJustID
		default:
			return plan{err: msgSyntax}
		}
	}
	if refusal := checkGroupNames(args.Group, args.Consumer); refusal != "" {
		return plan{err: refusal}
	}
	tooMany := args.Count > maxAutoClaimAlloc
	if tooMany {
		args.Count = 1 // the key's and the group's checks first; then Redis's refusal
	}
	justID := args.Flags&command.GroupJustID != 0
	op := command.StreamGroupCommand(a[1], nil, command.GroupAutoClaim, args)
	if tooMany {
		op = command.StreamGroupReadCommand(a[1], command.GroupInfoConsumers, args)
	}
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			if tooMany {
				w.errorLine(msgXAutoClaimMemory)
				return
			}
			parts, err := command.DecodeElems(res.Value)
			var es []command.GroupEntry
			if err == nil && len(parts) == 3 {
				es, err = command.DecodeGroupEntries(parts[1])
			}
			if err != nil || len(parts) != 3 {
				w.errorLine(errorReply(command.ErrBadCommand))
				return
			}
			next, _ := command.StreamIDOf(parts[0])
			w.array(3)
			w.bulk(next.Append(nil))
			writeGroupEntries(w, es, justID)
			w.array(len(parts[2]) / 16)
			for i := 0; i+16 <= len(parts[2]); i += 16 {
				id, _ := command.StreamIDOf(parts[2][i : i+16])
				w.bulk(id.Append(nil))
			}
		}, noGroupOf(a[1], a[2], ""), noGroupOf(a[1], a[2], ""), "")
	}}
}

// planXPending is XPENDING key group [[IDLE min-idle-time] start end
// count [consumer]]: its arguments are parsed before the key is looked
// at.
func planXPending(a [][]byte) plan {
	if len(a) != 3 && (len(a) < 6 || len(a) > 9) {
		return plan{err: msgSyntax}
	}
	args := command.GroupArgs{Group: a[2]}
	op := command.GroupPendingSummary
	if len(a) >= 6 {
		op = command.GroupPendingRange
		at := 3
		if strings.EqualFold(string(a[3]), "idle") {
			n, ok := parseInt64(a[4])
			if !ok {
				return plan{err: msgNotInteger}
			}
			if len(a) < 8 {
				return plan{err: msgSyntax}
			}
			args.MinIdle, at = n, 5
		}
		count, ok := parseInt64(a[at+2])
		if !ok {
			return plan{err: msgNotInteger}
		}
		args.Count = max(count, 0)
		start, ex, ok := parseIntervalID(a[at], 0)
		if !ok {
			return plan{err: msgStreamID}
		}
		if ex {
			if start, ok = start.Next(); !ok {
				return plan{err: msgStreamStart}
			}
		}
		end, ex, ok := parseIntervalID(a[at+1], math.MaxUint64)
		if !ok {
			return plan{err: msgStreamID}
		}
		if ex {
			if end, ok = end.Prev(); !ok {
				return plan{err: msgStreamEnd}
			}
		}
		args.ID, args.End = start, end
		if at+3 < len(a) {
			args.Consumer = a[at+3]
		}
		if args.MinIdle < 0 {
			args.MinIdle = 0 // Redis's: any idle time at or above a negative one
		}
	}
	if refusal := checkGroupNames(args.Group, args.Consumer); refusal != "" {
		return plan{err: refusal}
	}
	rd := command.StreamGroupReadCommand(a[1], op, args)
	nog := noGroupOf(a[1], a[2], "")
	return plan{ops: []*command.Command{rd}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			parts, err := command.DecodeElems(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			if op == command.GroupPendingSummary {
				writePendingSummary(w, parts)
				return
			}
			w.array(len(parts) / 4)
			for i := 0; i+3 < len(parts); i += 4 {
				id, _ := command.StreamIDOf(parts[i])
				w.array(4)
				w.bulk(id.Append(nil))
				w.bulk(parts[i+1])
				w.integer(command.NumOf(parts[i+2]))
				w.integer(command.NumOf(parts[i+3]))
			}
		}, nog, nog, "")
	}}
}

func writePendingSummary(w *writer, parts [][]byte) {
	if len(parts) != 4 {
		w.errorLine(errorReply(command.ErrBadCommand))
		return
	}
	w.array(4)
	w.integer(command.NumOf(parts[0]))
	if len(parts[1]) == 0 {
		w.null()
		w.null()
		w.nullArray()
		return
	}
	for _, b := range parts[1:3] {
		id, _ := command.StreamIDOf(b)
		w.bulk(id.Append(nil))
	}
	holders, _ := command.DecodeElems(parts[3])
	w.array(len(holders) / 2)
	for i := 0; i+1 < len(holders); i += 2 {
		w.array(2)
		w.bulk(holders[i])
		w.bulkString(fmt.Sprint(command.NumOf(holders[i+1])))
	}
}

// planXInfoGroups is XINFO GROUPS key.
func planXInfoGroups(a [][]byte) plan {
	rd := command.StreamGroupReadCommand(a[2], command.GroupInfoGroups, command.GroupArgs{})
	return plan{ops: []*command.Command{rd}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			groups, err := command.DecodeElems(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			w.array(len(groups))
			for _, g := range groups {
				f, err := command.DecodeElems(g)
				if err != nil || len(f) != 6 {
					w.errorLine(errorReply(command.ErrBadCommand))
					continue
				}
				w.mapHeader(6)
				w.bulkString("name")
				w.bulk(f[0])
				w.bulkString("consumers")
				w.integer(command.NumOf(f[1]))
				w.bulkString("pending")
				w.integer(command.NumOf(f[2]))
				w.bulkString("last-delivered-id")
				id, _ := command.StreamIDOf(f[3])
				w.bulk(id.Append(nil))
				w.bulkString("entries-read")
				numOrNull(w, f[4])
				w.bulkString("lag")
				numOrNull(w, f[5])
			}
		}, func(int) string { return msgStreamNoKey }, nil, "")
	}}
}

func numOrNull(w *writer, b []byte) {
	if len(b) == 0 {
		w.null()
		return
	}
	w.integer(command.NumOf(b))
}

// planXInfoConsumers is XINFO CONSUMERS key group.
func planXInfoConsumers(a [][]byte) plan {
	if refusal := checkGroupNames(a[3]); refusal != "" {
		return plan{err: refusal}
	}
	rd := command.StreamGroupReadCommand(a[2], command.GroupInfoConsumers, command.GroupArgs{Group: a[3]})
	return plan{ops: []*command.Command{rd}, answer: func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			cs, err := command.DecodeElems(res.Value)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			w.array(len(cs))
			for _, c := range cs {
				f, err := command.DecodeElems(c)
				if err != nil || len(f) != 3 {
					w.errorLine(errorReply(command.ErrBadCommand))
					continue
				}
				w.mapHeader(3)
				w.bulkString("name")
				w.bulk(f[0])
				w.bulkString("pending")
				w.integer(command.NumOf(f[1]))
				w.bulkString("idle")
				w.integer(command.NumOf(f[2]))
			}
		}, func(int) string { return msgStreamNoKey }, func(int) string {
			return fmt.Sprintf("NOGROUP No such consumer group '%s' for key name '%s'", a[3], a[2])
		}, "")
	}}
}

// groupsFullCommand is the read of XINFO STREAM FULL's groups, up to
// count pending entries each (0: all).
func groupsFullCommand(key []byte, count int64) *command.Command {
	return command.StreamGroupReadCommand(key, command.GroupInfoFull, command.GroupArgs{Count: count})
}

// writeGroupsFull answers XINFO STREAM FULL's "groups" from its read.
func writeGroupsFull(w *writer, r storeapi.OpResult) {
	if r.Err != nil || r.Res.Code != command.CodeOK {
		w.array(0)
		return
	}
	groups, err := command.DecodeElems(r.Res.Value)
	if err != nil {
		w.array(0)
		return
	}
	w.array(len(groups))
	for _, g := range groups {
		f, _ := command.DecodeElems(g)
		if len(f) != 7 {
			w.null()
			continue
		}
		w.mapHeader(7)
		w.bulkString("name")
		w.bulk(f[0])
		w.bulkString("last-delivered-id")
		id, _ := command.StreamIDOf(f[1])
		w.bulk(id.Append(nil))
		w.bulkString("entries-read")
		numOrNull(w, f[2])
		w.bulkString("lag")
		numOrNull(w, f[3])
		w.bulkString("pel-count")
		w.integer(command.NumOf(f[4]))
		w.bulkString("pending")
		pel, _ := command.DecodeElems(f[5])
		w.array(len(pel))
		for _, p := range pel {
			pf, _ := command.DecodeElems(p)
			if len(pf) != 4 {
				w.null()
				continue
			}
			id, _ := command.StreamIDOf(pf[0])
			w.array(4)
			w.bulk(id.Append(nil))
			w.bulk(pf[1])
			w.integer(command.NumOf(pf[2]))
			w.integer(command.NumOf(pf[3]))
		}
		w.bulkString("consumers")
		cs, _ := command.DecodeElems(f[6])
		w.array(len(cs))
		for _, c := range cs {
			cf, _ := command.DecodeElems(c)
			if len(cf) != 4 {
				w.null()
				continue
			}
			w.mapHeader(4)
			w.bulkString("name")
			w.bulk(cf[0])
			w.bulkString("seen-time")
			w.integer(command.NumOf(cf[1]))
			w.bulkString("pel-count")
			w.integer(command.NumOf(cf[2]))
			w.bulkString("pending")
			cp, _ := command.DecodeElems(cf[3])
			w.array(len(cp))
			for _, p := range cp {
				pf, _ := command.DecodeElems(p)
				if len(pf) != 3 {
					w.null()
					continue
				}
				id, _ := command.StreamIDOf(pf[0])
				w.array(3)
				w.bulk(id.Append(nil))
				w.integer(command.NumOf(pf[1]))
				w.integer(command.NumOf(pf[2]))
			}
		}
	}
}

// planXReadGroup is XREADGROUP GROUP group consumer [COUNT count] [BLOCK
// ms] [NOACK] STREAMS key [key ...] id [id ...] (t_stream.c's
// xreadCommand): the options, then per key its stream's and group's
// checks and its id ("$" refused, ">" the new entries, else the
// consumer's own pending history after it).
func planXReadGroup(c *conn, a [][]byte) plan {
	var args command.GroupArgs
	var group, consumer []byte
	block, wait, forever := false, int64(0), false
	streams := 0
	for i := 1; i < len(a) && streams == 0; i++ {
		more := len(a) - 1 - i
		switch opt := strings.ToLower(string(a[i])); {
		case opt == "block" && more > 0:
			if c != nil && c.script != nil {
				return plan{err: fmt.Sprintf(msgXReadScript, a[0])}
			}
			i++
			ms, ok := parseInt64(a[i])
			switch {
			case !ok:
				return plan{err: "ERR timeout is not an integer or out of range"}
			case ms < 0:
				return plan{err: "ERR timeout is negative"}
			}
			block, wait, forever = true, ms, ms == 0 || ms > maxWait
		case opt == "count" && more > 0:
			i++
			n, ok := parseInt64(a[i])
			if !ok {
				return plan{err: msgNotInteger}
			}
			args.Count = max(n, 0)
		case opt == "streams" && more > 0:
			streams = i + 1
			if (len(a)-streams)%2 != 0 {
				return plan{err: msgXReadUnbalanced}
			}
		case opt == "group" && more >= 2:
			group, consumer = a[i+1], a[i+2]
			i += 2
		case opt == "noack":
			args.Flags |= command.GroupNoAck
		default:
			return plan{err: msgSyntax}
		}
	}
	switch {
	case streams == 0:
		return plan{err: msgSyntax}
	case group == nil:
		return plan{err: msgXReadGroupNoGrp}
	}
	if refusal := checkGroupNames(group, consumer); refusal != "" {
		return plan{err: refusal}
	}
	args.Group, args.Consumer = group, consumer
	n := (len(a) - streams) / 2
	keys := a[streams : streams+n]
	args.IDs = make([]command.StreamID, n)
	badID := ""
	for i, b := range a[streams+n:] {
		switch string(b) {
		case "$":
			badID = msgXReadGroupDollar
		case ">":
			args.IDs[i] = command.MaxStreamID
			continue
		default:
			id, _, ok := parseStreamID(b, true, 0, false)
			if ok {
				args.IDs[i] = id
				continue
			}
			badID = msgStreamID
		}
		args.Flags |= command.GroupBadID
		args.BadAt = int64(i)
		break
	}
	for _, k := range keys[1:] { // the pipeline checks the first, the op's key
		if err := storeapi.CheckKVKey(k); err != nil {
			return plan{err: errorReply(err)}
		}
	}
	noGroup := func(i int) string {
		return fmt.Sprintf("NOGROUP No such key '%s' or consumer group '%s' in XREADGROUP with GROUP option", keys[i], group)
	}
	op := command.StreamGroupCommand(keys[0], keys[1:], command.GroupRead, args)
	answer := func(w *writer, r []storeapi.OpResult) {
		answerGroup(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.nullArray()
				return
			}
			writeReadGroup(w, keys, res)
		}, noGroup, noGroup, badID)
	}
	p := plan{ops: []*command.Command{op}, answer: answer}
	if block && badID == "" {
		p.block = &blockSpec{keys: keys, wait: wait, forever: forever, group: &groupWait{keys: keys, answer: answer}}
	}
	return p
}

// writeReadGroup answers XREADGROUP's served keys: RESP2 an array of
// [key, entries], RESP3 a map.
func writeReadGroup(w *writer, keys [][]byte, res *command.Result) {
	parts, err := command.DecodeElems(res.Value)
	if err != nil || len(parts)%2 != 0 {
		w.errorLine(errorReply(command.ErrBadCommand))
		return
	}
	if w.proto >= 3 {
		w.mapHeader(len(parts) / 2)
	} else {
		w.array(len(parts) / 2)
	}
	for i := 0; i+1 < len(parts); i += 2 {
		k := int(command.NumOf(parts[i]))
		es, err := command.DecodeGroupEntries(parts[i+1])
		if err != nil || k < 0 || k >= len(keys) {
			w.errorLine(errorReply(command.ErrBadCommand))
			return
		}
		if w.proto < 3 {
			w.array(2)
		}
		w.bulk(keys[k])
		writeGroupEntries(w, es, false)
	}
}

// groupWait is a blocked XREADGROUP's state (blocking.go): the version
// each of its streams had at its last try; it wakes when one changed (an
// XADD, a delete, a group destroyed), and tries again with Redis's
// count for a blocked reader.
type groupWait struct {
	keys   [][]byte // as given; the waiter's are as stored, in this order
	answer func(w *writer, r []storeapi.OpResult)
	mu     sync.Mutex
	seen   map[string]uint64
}

// saw records the versions a try found (its result's Value: 8 bytes a
// stream) of the stored keys.
func (g *groupWait) saw(stored [][]byte, res *command.Result) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.seen == nil {
		g.seen = map[string]uint64{}
	}
	for i, k := range stored {
		if len(res.Value) >= 8*(i+1) {
			g.seen[string(k)] = uint64(command.NumOf(res.Value[8*i : 8*i+8]))
		}
	}
}

// ready: key's entry e (zero: the key is gone) is not as the last try
// saw it.
func (g *groupWait) ready(key string, e command.KVEntry) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	v, ok := g.seen[key]
	return !ok || e.Version != v
}

// retry is the try after a wait: the same read, with Redis's count for
// a blocked reader when none was given.
func (g *groupWait) retry(ops []*command.Command) []*command.Command {
	args, err := command.DecodeGroupArgs(ops[0].Body)
	if err != nil || args.Count != 0 {
		return ops
	}
	args.Count = xreadBlockedCount
	op := *ops[0]
	op.Body = args.Encode()
	return []*command.Command{&op}
}

// woken answers a try after a wait: a stream gone, or its group, is
// Redis's unblocking error; so is a stream overwritten by a value of
// another kind (SET, RENAME, MULTI with DEL and SADD): the first try
// found only streams, so a key of another kind now was one while the
// reader waited, and Redis unblocks such a reader as if the key were
// deleted, not with WRONGTYPE.
func (g *groupWait) woken(w *writer, r []storeapi.OpResult) {
	if r[0].Err == nil && r[0].Res.Code == command.CodeWrongType {
		w.errorLine(msgXGroupUnblocked)
		return
	}
	if r[0].Err == nil && r[0].Res.Code == command.CodeWrongState && len(r[0].Res.Value) == 9 {
		switch r[0].Res.Value[8] {
		case command.GroupNoKey:
			w.errorLine(msgXGroupUnblocked)
			return
		case command.GroupNoGroup:
			w.errorLine(msgXGroupGone)
			return
		}
	}
	g.answer(w, r)
}
