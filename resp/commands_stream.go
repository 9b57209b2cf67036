package resp

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/storeapi"
)

// The stream commands, with Redis 7.0's replies: a stream is a
// collection whose entries are keyed by id (package command's stream.go).
// Writes are the state machine's stream commands; reads are its stream
// reads, answered here from this node's state after the pipeline's
// barrier, inside MULTI as reads in the log, and in a script from its
// sandbox. XREAD BLOCK waits on this node (blocking.go) for an XADD
// applied from any node.

const (
	msgStreamID         = "ERR Invalid stream ID specified as stream command argument"
	msgStreamZero       = "ERR The ID specified in XADD must be greater than 0-0"
	msgStreamTop        = "ERR The ID specified in XADD is equal or smaller than the target stream top item"
	msgStreamExhausted  = "ERR The stream has exhausted the last possible ID, unable to add more items"
	msgStreamMaxLen     = "ERR The MAXLEN argument must be >= 0."
	msgStreamLimit      = "ERR The LIMIT argument must be >= 0."
	msgStreamBoth       = "ERR syntax error, MAXLEN and MINID options at the same time are not compatible"
	msgStreamLimitNoTr  = "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy"
	msgStreamLimitNoApx = "ERR syntax error, LIMIT cannot be used without the special ~ option"
	msgStreamXTrimNone  = "ERR syntax error, XTRIM must be called with a trimming strategy"
	msgStreamStart      = "ERR invalid start ID for the interval"
	msgStreamEnd        = "ERR invalid end ID for the interval"
	msgStreamNoKey      = "ERR no such key"
	msgXSetIDMaxDel     = "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id"
	msgXSetIDCurMaxDel  = "ERR The ID specified in XSETID is smaller than current max_deleted_entry_id"
	msgXSetIDTop        = "ERR The ID specified in XSETID is smaller than the target stream top item"
	msgXSetIDAdded      = "ERR The entries_added specified in XSETID is smaller than the target stream length"
	msgXSetIDAddedNeg   = "ERR entries_added must be positive"
	msgXReadUnbalanced  = "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."
	msgXReadGroupOpt    = "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead."
	msgXReadNoAck       = "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead."
	msgXReadGT          = "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."
	msgXReadScript      = "ERR %s command is not allowed with BLOCK option from scripts" // the name as sent
	msgStreamTooLarge   = "ERR Elements are too large to be stored"
)

// streamTrimDefaultLimit is "~"'s LIMIT when none is given: 100 nodes'
// entries, as Redis's.
const streamTrimDefaultLimit = 100 * command.StreamNodeEntries

// xinfoFullCount is XINFO STREAM FULL's COUNT when none is given.
const xinfoFullCount = 10

// xinfoSubs is XINFO's subcommands, by lowercase name, with their arity
// as Redis's command table gives it (a file of another part of XINFO
// adds its own in its init: GROUPS, CONSUMERS).
var xinfoSubs = map[string]xinfoSub{
	"stream": {arity: -3, plan: planXInfoStream},
}

// xinfoSub is one subcommand of XINFO.
type xinfoSub struct {
	arity int
	plan  func(a [][]byte) plan
}

// xinfoHelp is XINFO HELP's answer, Redis 7.0's lines.
var xinfoHelp = []string{
	"XINFO <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
	"CONSUMERS <key> <groupname>",
	"    Show consumers of <groupname>.",
	"GROUPS <key>",
	"    Show the stream consumer groups.",
	"STREAM <key> [FULL [COUNT <count>]",
	"    Show information about the stream.",
	"HELP",
	"    Prints this help.",
}

func init() {
	wr := func(name string, op command.Type, arity int, fn func([][]byte) plan, flags ...string) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, flags: append([]string{"write"}, flags...), firstKey: 1, lastKey: 1, step: 1,
			plan: func(_ *conn, a [][]byte) plan { return fn(a) }}
	}
	xinfoPlan := func(a [][]byte) plan {
		if refusal := xinfoRefusal(a); refusal != "" {
			return plan{err: refusal}
		}
		if strings.EqualFold(string(a[1]), "help") {
			return plan{err: msgSyntax} // in MULTI; outside, read answers it
		}
		return xinfoSubs[strings.ToLower(string(a[1]))].plan(a)
	}
	xinfo := streamRd("xinfo", -2, 2, xinfoPlan)
	xinfo.sub = xinfoRefusal
	xinfo.read = func(c *conn, ctx context.Context, a [][]byte) {
		if strings.EqualFold(string(a[1]), "help") && len(a) == 2 {
			c.w.array(len(xinfoHelp))
			for _, l := range xinfoHelp {
				c.w.simple(l)
			}
			return
		}
		c.runRead(ctx, xinfoPlan(a))
	}
	xread := streamRd("xread", -4, 0, func(a [][]byte) plan { return planXRead(a).plan })
	xread.read = func(c *conn, ctx context.Context, a [][]byte) { c.runXRead(ctx, a[0], planXRead(a)) }
	xread.flags = append(xread.flags, "blocking", "movablekeys")
	register(
		wr("xadd", command.TypeStreamAdd, -5, planXAdd, "denyoom"),
		wr("xtrim", command.TypeStreamTrim, -4, planXTrim),
		wr("xdel", command.TypeStreamDel, -3, planXDel),
		wr("xsetid", command.TypeStreamSetID, -3, planXSetID, "denyoom"),
		streamRd("xlen", 2, 1, func(a [][]byte) plan {
			return streamRead(command.StreamRangeCommand(a[1], command.StreamID{}, command.StreamID{}, 0, false), func(w *writer, h command.StreamHeader, _ [][]byte, ok bool) {
				w.integer(int64(h.Count))
			})
		}),
		streamRd("xrange", -4, 1, func(a [][]byte) plan { return planXRange(a, false) }),
		streamRd("xrevrange", -4, 1, func(a [][]byte) plan { return planXRange(a, true) }),
		xread,
		xinfo,
	)
}

// streamRd is a read of a stream: mk plans its read and answer, run here,
// in the sandbox, or inside MULTI (txRead).
func streamRd(name string, arity, first int, mk func(a [][]byte) plan) *redisCommand {
	c := collRd(name, arity, first, mk)
	c.op, c.firstKey = command.TypeStreamRead, first
	if first == 0 {
		c.lastKey, c.step = 0, 0
	}
	return c
}

// streamRead is a plan of one stream read: answer is given the header
// and the read's pairs (ok false: no key).
func streamRead(op *command.Command, answer func(w *writer, h command.StreamHeader, pairs [][]byte, ok bool)) plan {
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				answer(w, command.StreamHeader{}, nil, false)
				return
			}
			h, pairs, err := command.StreamRead(res)
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			answer(w, h, pairs, true)
		})
	}}
}

// answerStream answers a stream command's result as answerColl does,
// and the stream's own refusals.
func answerStream(w *writer, r storeapi.OpResult, ok func(res *command.Result)) {
	if r.Err != nil {
		w.errorLine(errorReply(r.Err))
		return
	}
	switch r.Res.Code {
	case command.CodeOverflow:
		w.errorLine(msgStreamExhausted)
	case command.CodeOutOfRange:
		switch string(r.Res.Value) {
		case command.XSetIDBelowMaxDeleted:
			w.errorLine(msgXSetIDCurMaxDel)
		case command.XSetIDBelowTop:
			w.errorLine(msgXSetIDTop)
		case command.XSetIDAddedBelowLen:
			w.errorLine(msgXSetIDAdded)
		case command.XAddSeqExhausted:
			w.errorLine(msgStreamTooLarge)
		default:
			w.errorLine(msgStreamTop)
		}
	default:
		answerColl(w, r, ok)
	}
}

// string2ull reads an unsigned 64-bit decimal as Redis's string2ull
// does: a strict integer, not negative; else what strtoull reads of all
// of b (leading space, a sign, digits; a "-" negates modulo 2^64), not
// out of range.
func string2ull(b []byte) (uint64, bool) {
	if n, ok := command.ParseInt(b); ok {
		return uint64(n), n >= 0
	}
	s := strings.TrimLeft(string(b), " \t\n\v\f\r")
	neg := false
	if s != "" && (s[0] == '+' || s[0] == '-') {
		neg, s = s[0] == '-', s[1:]
	}
	if s == "" || strings.TrimLeft(s, "0123456789") != "" {
		return 0, false
	}
	u, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, false
	}
	if neg {
		u = -u
	}
	return u, true
}

// parseStreamID reads an id as Redis's streamGenericParseIDOrReply: "-"
// and "+" (unless strict), ms, ms-seq, and with star ms-* (seqGiven
// false); missing the sequence is missingSeq.
func parseStreamID(b []byte, strict bool, missingSeq uint64, star bool) (id command.StreamID, seqGiven, ok bool) {
	if len(b) > 127 {
		return id, false, false
	}
	if len(b) == 1 && (b[0] == '-' || b[0] == '+') {
		if strict {
			return id, false, false
		}
		if b[0] == '+' {
			return command.MaxStreamID, true, true
		}
		return id, true, true
	}
	ms, seq, dash := b, []byte(nil), false
	if i := strings.IndexByte(string(b), '-'); i >= 0 {
		ms, seq, dash = b[:i], b[i+1:], true
	}
	if id.Ms, ok = string2ull(ms); !ok {
		return id, false, false
	}
	switch {
	case !dash:
		id.Seq = missingSeq
	case star && string(seq) == "*":
		return id, false, true
	default:
		if id.Seq, ok = string2ull(seq); !ok {
			return id, false, false
		}
	}
	return id, true, true
}

// parseIntervalID is a range's bound (streamParseIntervalIDOrReply):
// "(" makes it exclusive, an id then strict.
func parseIntervalID(b []byte, missingSeq uint64) (id command.StreamID, ex, ok bool) {
	if len(b) > 1 && b[0] == '(' {
		id, _, ok = parseStreamID(b[1:], true, missingSeq, false)
		return id, true, ok
	}
	id, _, ok = parseStreamID(b, false, missingSeq, false)
	return id, false, ok
}

// trimArgs is XADD's and XTRIM's options, as Redis parses them
// (streamParseAddOrTrimArgsOrReply): at is where the id (XADD's) is.
type trimArgs struct {
	trim    command.StreamTrim
	noMk    bool
	at      int
	mode    command.XAddIDMode
	id      command.StreamID
	idGiven bool
}

func parseTrimArgs(a [][]byte, xadd bool) (t trimArgs, refusal string) {
	limitGiven := false
	i := 2
	for ; i < len(a); i++ {
		more := len(a) - 1 - i
		opt := strings.ToLower(string(a[i]))
		switch {
		case xadd && opt == "*":
			t.mode = command.XAddAuto
			goto done
		case (opt == "maxlen" || opt == "minid") && more > 0:
			if t.trim.Strategy != command.TrimNone {
				return t, msgStreamBoth
			}
			t.trim.Approx = false
			if next := string(a[i+1]); more >= 2 && (next == "~" || next == "=") {
				t.trim.Approx = next == "~"
				i++
			}
			if opt == "maxlen" {
				n, ok := parseInt64(a[i+1])
				switch {
				case !ok:
					return t, msgNotInteger
				case n < 0:
					return t, msgStreamMaxLen
				}
				t.trim.Strategy, t.trim.MaxLen = command.TrimMaxLen, uint64(n)
			} else {
				id, _, ok := parseStreamID(a[i+1], true, 0, false)
				if !ok {
					return t, msgStreamID
				}
				t.trim.Strategy, t.trim.MinID = command.TrimMinID, id
			}
			i++
		case opt == "limit" && more > 0:
			n, ok := parseInt64(a[i+1])
			switch {
			case !ok:
				return t, msgNotInteger
			case n < 0:
				return t, msgStreamLimit
			}
			t.trim.Limit, limitGiven = n, true
			i++
		case xadd && opt == "nomkstream":
			t.noMk = true
		case xadd:
			id, seqGiven, ok := parseStreamID(a[i], true, 0, true)
			if !ok {
				return t, msgStreamID
			}
			t.id, t.idGiven, t.mode = id, true, command.XAddExplicit
			if !seqGiven {
				t.mode = command.XAddMsAuto
			}
			goto done
		default:
			return t, msgSyntax
		}
	}
done:
	t.at = i
	switch {
	case t.trim.Limit != 0 && t.trim.Strategy == command.TrimNone:
		return t, msgStreamLimitNoTr
	case !xadd && t.trim.Strategy == command.TrimNone:
		return t, msgStreamXTrimNone
	case limitGiven && !t.trim.Approx:
		return t, msgStreamLimitNoApx
	case !limitGiven && t.trim.Approx:
		t.trim.Limit = streamTrimDefaultLimit
	}
	return t, ""
}

func planXAdd(a [][]byte) plan {
	t, refusal := parseTrimArgs(a, true)
	if refusal != "" {
		return plan{err: refusal}
	}
	fields := a[min(t.at+1, len(a)):]
	switch {
	case len(fields) < 2 || len(fields)%2 != 0:
		return plan{err: "ERR wrong number of arguments for 'xadd' command"}
	case t.mode == command.XAddExplicit && t.id.IsZero():
		return plan{err: msgStreamZero}
	}
	if refusal := checkElems(fields, 1); refusal != "" {
		return plan{err: refusal}
	}
	op := command.XAddCommand(a[1], t.mode, t.id, fields, t.trim, t.noMk)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) {
			id, ok := command.StreamIDOf(res.Value)
			if res.Code == command.CodeNotFound || !ok {
				w.null()
				return
			}
			w.bulk(id.Append(nil))
		})
	}}
}

func planXTrim(a [][]byte) plan {
	t, refusal := parseTrimArgs(a, false)
	if refusal == "" && t.at < len(a) {
		refusal = msgSyntax
	}
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.XTrimCommand(a[1], t.trim)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

// planXDel: as in Redis, the key is looked up before the ids are read,
// so an id that is not one answers 0 for an absent key and WRONGTYPE
// for another kind: such an XDEL is a read.
func planXDel(a [][]byte) plan {
	ids := make([]command.StreamID, 0, len(a)-2)
	for _, b := range a[2:] {
		id, _, ok := parseStreamID(b, true, 0, false)
		if !ok {
			return streamRead(command.StreamRangeCommand(a[1], command.StreamID{}, command.StreamID{}, 0, false), func(w *writer, _ command.StreamHeader, _ [][]byte, ok bool) {
				if !ok {
					w.integer(0)
					return
				}
				w.errorLine(msgStreamID)
			})
		}
		ids = append(ids, id)
	}
	if len(ids) > command.MaxCmdElems {
		return plan{err: checkElems(a[2:], 1)}
	}
	op := command.XDelCommand(a[1], ids)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) { w.integer(decimal(res)) })
	}}
}

func planXSetID(a [][]byte) plan {
	last, _, ok := parseStreamID(a[2], true, 0, false)
	if !ok {
		return plan{err: msgStreamID}
	}
	added, maxDel := int64(-1), command.StreamID{}
	for i := 3; i < len(a); i += 2 {
		opt := strings.ToLower(string(a[i]))
		switch {
		case opt == "entriesadded" && i+1 < len(a):
			n, ok := parseInt64(a[i+1])
			switch {
			case !ok:
				return plan{err: msgNotInteger}
			case n < 0:
				return plan{err: msgXSetIDAddedNeg}
			}
			added = n
		case opt == "maxdeletedid" && i+1 < len(a):
			id, _, ok := parseStreamID(a[i+1], true, 0, false)
			switch {
			case !ok:
				return plan{err: msgStreamID}
			case last.Less(id):
				return plan{err: msgXSetIDMaxDel}
			}
			maxDel = id
		default:
			return plan{err: msgSyntax}
		}
	}
	op := command.XSetIDCommand(a[1], last, added, maxDel)
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.errorLine(msgStreamNoKey)
				return
			}
			w.ok()
		})
	}}
}

// planXRange is XRANGE key start end [COUNT n] and XREVRANGE key end
// start [COUNT n].
func planXRange(a [][]byte, rev bool) plan {
	startArg, endArg := a[2], a[3]
	if rev {
		startArg, endArg = a[3], a[2]
	}
	start, ex, ok := parseIntervalID(startArg, 0)
	if !ok {
		return plan{err: msgStreamID}
	}
	if ex {
		if start, ok = start.Next(); !ok {
			return plan{err: msgStreamStart}
		}
	}
	end, ex, ok := parseIntervalID(endArg, math.MaxUint64)
	if !ok {
		return plan{err: msgStreamID}
	}
	if ex {
		if end, ok = end.Prev(); !ok {
			return plan{err: msgStreamEnd}
		}
	}
	count := int64(-1)
	for j := 4; j < len(a); j++ {
		if strings.ToLower(string(a[j])) != "count" || j+1 >= len(a) {
			return plan{err: msgSyntax}
		}
		n, ok := parseInt64(a[j+1])
		if !ok {
			return plan{err: msgNotInteger}
		}
		count = max(n, 0)
		j++
	}
	read := count
	if count == 0 {
		read = 0 // Redis answers a null array for an existing stream
	}
	op := command.StreamRangeCommand(a[1], start, end, read, rev)
	return streamRead(op, func(w *writer, _ command.StreamHeader, pairs [][]byte, ok bool) {
		switch {
		case !ok:
			w.array(0)
		case count == 0:
			w.nullArray()
		default:
			writeEntries(w, pairs)
		}
	})
}

// writeEntries answers entries (ids and fields alternating) as Redis
// does: an array of [id, [field, value ...]].
func writeEntries(w *writer, pairs [][]byte) {
	w.array(len(pairs) / 2)
	for i := 0; i+1 < len(pairs); i += 2 {
		writeEntry(w, pairs[i], pairs[i+1])
	}
}

func writeEntry(w *writer, idb, fields []byte) {
	id, _ := command.StreamIDOf(idb)
	w.array(2)
	w.bulk(id.Append(nil))
	fs, err := command.DecodeElems(fields)
	if err != nil {
		fs = nil
	}
	w.array(len(fs))
	for _, f := range fs {
		w.bulk(f)
	}
}

// xinfoRefusal refuses an XINFO subcommand unknown, or of the wrong
// arity, as Redis looks it up.
func xinfoRefusal(a [][]byte) string {
	sub := strings.ToLower(string(a[1]))
	if sub == "help" {
		if len(a) != 2 {
			return "ERR wrong number of arguments for 'xinfo|help' command"
		}
		return ""
	}
	s, ok := xinfoSubs[sub]
	switch {
	case !ok:
		return "ERR unknown subcommand '" + clip(a[1]) + "'. Try XINFO HELP."
	case (s.arity > 0 && len(a) != s.arity) || (s.arity < 0 && len(a) < -s.arity):
		return "ERR wrong number of arguments for 'xinfo|" + sub + "' command"
	}
	return ""
}

// planXInfoStream is XINFO STREAM key [FULL [COUNT n]].
func planXInfoStream(a [][]byte) plan {
	full, count := false, int64(xinfoFullCount)
	switch {
	case len(a) == 3:
	case len(a) >= 4 && strings.EqualFold(string(a[3]), "full") && (len(a) == 4 || len(a) == 6):
		full = true
		if len(a) == 6 {
			if !strings.EqualFold(string(a[4]), "count") {
				return plan{err: "ERR unknown subcommand or wrong number of arguments for '" + clip(a[1]) + "'. Try XINFO HELP."}
			}
			n, ok := parseInt64(a[5])
			if !ok {
				return plan{err: msgNotInteger}
			}
			count = max(n, 0)
		}
	default:
		return plan{err: "ERR unknown subcommand or wrong number of arguments for '" + clip(a[1]) + "'. Try XINFO HELP."}
	}
	if full {
		read := count
		if count == 0 {
			read = -1
		}
		op := command.StreamRangeCommand(a[2], command.StreamID{}, command.MaxStreamID, read, false)
		var groups storeapi.OpResult
		p := streamRead(op, func(w *writer, h command.StreamHeader, pairs [][]byte, ok bool) {
			if !ok {
				w.errorLine(msgStreamNoKey)
				return
			}
			w.mapHeader(9)
			writeStreamInfoHead(w, h)
			w.bulkString("entries")
			writeEntries(w, pairs)
			w.bulkString("groups")
			writeGroupsFull(w, groups) // commands_stream_group.go
		})
		answer := p.answer
		p.ops = append(p.ops, groupsFullCommand(a[2], count))
		p.answer = func(w *writer, r []storeapi.OpResult) {
			groups = r[1]
			answer(w, r[:1])
		}
		return p
	}
	first := command.StreamRangeCommand(a[2], command.StreamID{}, command.MaxStreamID, 1, false)
	last := command.StreamRangeCommand(a[2], command.StreamID{}, command.MaxStreamID, 1, true)
	return plan{ops: []*command.Command{first, last}, answer: func(w *writer, r []storeapi.OpResult) {
		answerStream(w, r[0], func(res *command.Result) {
			if res.Code == command.CodeNotFound {
				w.errorLine(msgStreamNoKey)
				return
			}
			h, firstPairs, err := command.StreamRead(res)
			var lastPairs [][]byte
			if err == nil && r[1].Err == nil {
				_, lastPairs, err = command.StreamRead(r[1].Res)
			}
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
			w.mapHeader(10)
			writeStreamInfoHead(w, h)
			w.bulkString("groups")
			w.integer(int64(h.Groups))
			for _, p := range []struct {
				name  string
				pairs [][]byte
			}{{"first-entry", firstPairs}, {"last-entry", lastPairs}} {
				w.bulkString(p.name)
				if len(p.pairs) < 2 {
					w.null()
					continue
				}
				writeEntry(w, p.pairs[0], p.pairs[1])
			}
		})
	}}
}

// writeStreamInfoHead answers XINFO STREAM's first seven fields.
// radix-tree-nodes is Redis's rax's inner nodes, which idemgate has not:
// it answers the nodes' count plus one (Redis's count for 0 and 1).
func writeStreamInfoHead(w *writer, h command.StreamHeader) {
	w.bulkString("length")
	w.integer(int64(h.Count))
	w.bulkString("radix-tree-keys")
	w.integer(int64(h.Nodes))
	w.bulkString("radix-tree-nodes")
	w.integer(int64(h.Nodes) + 1)
	for _, f := range []struct {
		name string
		id   command.StreamID
	}{{"last-generated-id", h.Last}, {"max-deleted-entry-id", h.MaxDeleted}} {
		w.bulkString(f.name)
		w.bulk(f.id.Append(nil))
	}
	w.bulkString("entries-added")
	w.integer(int64(h.Added))
	w.bulkString("recorded-first-entry-id")
	w.bulk(h.First.Append(nil))
}

// xreadPlan is XREAD parsed: its reads (one per key, the entries after
// each id; "$" the stream's last id, read first), the keys, and BLOCK.
type xreadPlan struct {
	plan
	keys    [][]byte
	dollar  []bool
	ids     []command.StreamID
	count   int64
	block   bool
	wait    int64
	forever bool
}

// planXRead is XREAD [COUNT n] [BLOCK ms] STREAMS key ... id ...; its
// plan answers at once (in MULTI and scripts, BLOCK too, as Redis's).
func planXRead(a [][]byte) xreadPlan {
	x := xreadPlan{count: 0}
	streams := 0
	for i := 1; i < len(a) && streams == 0; i++ {
		more := len(a) - 1 - i
		switch opt := strings.ToLower(string(a[i])); {
		case opt == "block" && more > 0:
			i++
			ms, ok := parseInt64(a[i])
			switch {
			case !ok:
				return xreadPlan{plan: plan{err: "ERR timeout is not an integer or out of range"}}
			case ms < 0:
				return xreadPlan{plan: plan{err: "ERR timeout is negative"}}
			}
			x.block, x.wait, x.forever = true, ms, ms == 0 || ms > maxWait
		case opt == "count" && more > 0:
			i++
			n, ok := parseInt64(a[i])
			if !ok {
				return xreadPlan{plan: plan{err: msgNotInteger}}
			}
			x.count = max(n, 0)
		case opt == "streams" && more > 0:
			streams = i + 1
			if (len(a)-streams)%2 != 0 {
				return xreadPlan{plan: plan{err: msgXReadUnbalanced}}
			}
		case opt == "group" && more >= 2:
			return xreadPlan{plan: plan{err: msgXReadGroupOpt}}
		case opt == "noack":
			return xreadPlan{plan: plan{err: msgXReadNoAck}}
		default:
			return xreadPlan{plan: plan{err: msgSyntax}}
		}
	}
	if streams == 0 {
		return xreadPlan{plan: plan{err: msgSyntax}}
	}
	n := (len(a) - streams) / 2
	x.keys = a[streams : streams+n]
	x.ids, x.dollar = make([]command.StreamID, n), make([]bool, n)
	for i, b := range a[streams+n:] {
		switch string(b) {
		case "$":
			x.dollar[i] = true
			continue
		case ">":
			return xreadPlan{plan: plan{err: msgXReadGT}}
		}
		id, _, ok := parseStreamID(b, true, 0, false)
		if !ok {
			return xreadPlan{plan: plan{err: msgStreamID}}
		}
		x.ids[i] = id
	}
	for _, k := range x.keys {
		if err := storeapi.CheckKVKey(k); err != nil {
			return xreadPlan{plan: plan{err: errorReply(err)}}
		}
	}
	x.plan = x.reads()
	return x
}

// reads is the plan of one pass: each key's entries after its id ("$"
// and the last id there is: the header alone); it answers the streams
// that have some, or a null array.
func (x *xreadPlan) reads() plan {
	ops := make([]*command.Command, len(x.keys))
	for i, k := range x.keys {
		from, ok := x.ids[i].Next()
		count := x.count
		if count == 0 {
			count = -1
		}
		if x.dollar[i] || !ok {
			from, count = command.MaxStreamID, 0
		}
		ops[i] = command.StreamRangeCommand(k, from, command.MaxStreamID, count, false)
	}
	return plan{ops: ops, answer: func(w *writer, r []storeapi.OpResult) { x.answer(w, r, true) }}
}

// answer writes what the reads found: the streams with entries, or,
// with null, a null array when none had any (it reports false then, and
// writes nothing without null).
func (x *xreadPlan) answer(w *writer, r []storeapi.OpResult, null bool) bool {
	type found struct {
		key   []byte
		pairs [][]byte
	}
	var got []found
	for i, res := range r {
		if res.Err != nil || (res.Res.Code != command.CodeOK && res.Res.Code != command.CodeNotFound) {
			answerStream(w, res, nil)
			return true
		}
		if res.Res.Code == command.CodeNotFound {
			continue
		}
		_, pairs, err := command.StreamRead(res.Res)
		if err != nil {
			w.errorLine(errorReply(err))
			return true
		}
		if len(pairs) > 0 {
			got = append(got, found{x.keys[i], pairs})
		}
	}
	if len(got) == 0 {
		if null {
			w.nullArray()
		}
		return false
	}
	if w.proto >= 3 {
		w.mapHeader(len(got))
	} else {
		w.array(len(got))
	}
	for _, g := range got {
		if w.proto < 3 {
			w.array(2)
		}
		w.bulk(g.key)
		writeEntries(w, g.pairs)
	}
	return true
}

// readLocal runs a plan's reads on this node's applied state, its keys
// in the connection's keyspace; refusal is the error reply when it could
// not.
func (c *conn) readLocal(p plan) (res []storeapi.OpResult, refusal string) {
	r, err := c.s.store.LocalTx(command.TxRequest{Commands: p.ops, ReplyBudget: maxReadReply})
	var results []*command.Result
	if err == nil {
		err = r.Err()
	}
	if err == nil {
		err = c.hold(len(r.Value))
	}
	if err == nil {
		if results, err = command.TxResults(r); err == nil && len(results) != len(p.ops) {
			err = command.ErrBadCommand
		}
	}
	if err != nil {
		return nil, errorReply(err)
	}
	res = make([]storeapi.OpResult, len(results))
	for i := range res {
		res[i].Res = results[i]
	}
	return res, ""
}

// runXRead runs XREAD outside MULTI: a read of each stream (after the
// pipeline's barrier); when none has entries after its id and BLOCK was
// given, the connection waits on this node (blocking.go) until one of
// its streams' last id passes the one it waits after, an XADD applied
// from any node, and reads again. In a script BLOCK does not wait.
func (c *conn) runXRead(ctx context.Context, name []byte, x xreadPlan) {
	if c.script != nil && x.block && x.err == "" {
		c.w.errorLine(fmt.Sprintf(msgXReadScript, name))
		return
	}
	if c.script != nil || !x.block || x.err != "" {
		c.runRead(ctx, x.plan)
		return
	}
	p := c.inKeyspace(x.plan)
	if p.err != "" {
		c.w.errorLine(p.err)
		return
	}
	res, refusal := c.readLocal(p)
	if refusal != "" {
		c.w.errorLine(refusal)
		return
	}
	if x.answer(&c.w, res, false) {
		return
	}
	// Nothing yet: "$" is each stream's last id now.
	stored := make([][]byte, len(x.keys))
	for i, k := range x.keys {
		stored[i] = c.key(k)
		if x.dollar[i] && res[i].Res.Code == command.CodeOK {
			h, _, _ := command.StreamRead(res[i].Res)
			x.ids[i] = h.Last
		}
		x.dollar[i] = false
	}
	c.xreadWait(x, stored)
}

// xreadWait waits, as blocking.go's waiters do, for a stream of stored
// (the keys as stored) to pass its id, then answers what it has; a null
// array at the timeout.
func (c *conn) xreadWait(x xreadPlan, stored [][]byte) {
	if c.flush() != nil { // the replies before it are not held back while it waits
		c.quit = true
		return
	}
	after := map[string]command.StreamID{}
	for i, k := range stored {
		if cur, ok := after[string(k)]; !ok || x.ids[i].Less(cur) {
			after[string(k)] = x.ids[i]
		}
	}
	ready := func(key string, e command.KVEntry) bool {
		h, ok := command.DecodeStreamHeader(e.Value)
		return ok && e.Kind == command.KindStream && after[key].Less(h.Last)
	}
	b := c.s.blocks
	w := b.addReady(stored, ready)
	gone := make(chan struct{})
	stop := httpx.WatchClose(c.nc, func() { close(gone) })
	defer stop()
	var timeout <-chan time.Time
	if !x.forever {
		t := time.NewTimer(time.Duration(x.wait) * time.Millisecond)
		defer t.Stop()
		timeout = t.C
	}
	for {
		select {
		case <-w.wake:
			p := c.inKeyspace(x.reads())
			res, refusal := c.readLocal(p)
			if refusal != "" {
				b.remove(w)
				c.w.errorLine(refusal)
				return
			}
			if !x.answer(&c.w, res, false) {
				b.back(w)
				continue
			}
			b.remove(w)
			return
		case <-timeout:
			b.remove(w)
			c.w.nullArray()
			return
		case <-gone:
			b.remove(w)
			c.quit = true
			return
		case <-c.s.stopping:
			b.remove(w)
			c.quit = true
			return
		}
	}
}
