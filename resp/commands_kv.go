package resp

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The KV keyspace's commands: the keys /v1/kv serves.

func init() {
	rd := func(name string, arity, last int, fn func(*conn, context.Context, [][]byte), tx func([][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: command.TypeKVRead, arity: arity, flags: []string{"fast"}, firstKey: 1, lastKey: last, step: 1,
			read: fn, txRead: tx}
	}
	wr := func(name string, op command.Type, arity, last int, fn func(*conn, [][]byte) plan) *redisCommand {
		return &redisCommand{name: name, op: op, arity: arity, firstKey: 1, lastKey: last, step: 1, plan: fn}
	}
	register(
		rd("get", 2, 1, cmdGet, txGet),
		rd("mget", -2, -1, cmdMGet, txMGet),
		rd("exists", -2, -1, cmdExists, txExists),
		rd("ttl", 2, 1, func(c *conn, ctx context.Context, a [][]byte) { c.ttl(ctx, a[1], time.Second) },
			func(a [][]byte) plan { return txTTL(a, time.Second) }),
		rd("pttl", 2, 1, func(c *conn, ctx context.Context, a [][]byte) { c.ttl(ctx, a[1], time.Millisecond) },
			func(a [][]byte) plan { return txTTL(a, time.Millisecond) }),
		rd("getrange", 4, 1, cmdGetRange, txGetRange),
		rd("strlen", 2, 1, cmdStrlen, txStrlen),
		wr("set", command.TypeKVSet, -3, 1, planSet),
		wr("setnx", command.TypeKVSet, 3, 1, planSetNX),
		wr("getdel", command.TypeKVGetDel, 2, 1, planGetDel),
		wr("del", command.TypeKVDelete, -2, -1, planDel),
		wr("unlink", command.TypeKVDelete, -2, -1, planDel),
		wr("incr", command.TypeKVIncr, 2, 1, func(c *conn, a [][]byte) plan { return planIncr(a[1], 1) }),
		wr("decr", command.TypeKVIncr, 2, 1, func(c *conn, a [][]byte) plan { return planIncr(a[1], -1) }),
		wr("incrby", command.TypeKVIncr, 3, 1, func(c *conn, a [][]byte) plan { return planIncrBy(a, 1) }),
		wr("decrby", command.TypeKVIncr, 3, 1, func(c *conn, a [][]byte) plan { return planIncrBy(a, -1) }),
		wr("expire", command.TypeKVExpire, -3, 1, func(c *conn, a [][]byte) plan { return planExpire(c, a, time.Second) }),
		wr("pexpire", command.TypeKVExpire, -3, 1, func(c *conn, a [][]byte) plan { return planExpire(c, a, time.Millisecond) }),
		wr("persist", command.TypeKVExpire, 2, 1, planPersist),
		wr("delex", command.TypeKVDelete, -2, 1, planDelex),
		rd("digest", 2, 1, cmdDigest, txDigest),
		wr("expireat", command.TypeKVExpire, -3, 1, func(c *conn, a [][]byte) plan { return planExpireAt(c, a, time.Second) }),
		wr("pexpireat", command.TypeKVExpire, -3, 1, func(c *conn, a [][]byte) plan { return planExpireAt(c, a, time.Millisecond) }),
	)
}

// local reads a key of the connection's keyspace from this node's
// applied state: the pipeline ran the barrier that makes it linearizable
// (or the connection is READONLY).
func (c *conn) local(ctx context.Context, key []byte) (command.KVEntry, bool, error) {
	if err := storeapi.CheckKVKey(key); err != nil {
		return command.KVEntry{}, false, err
	}
	if c.script != nil {
		return c.script.sb.KV(c.key(key))
	}
	return c.localStored(ctx, c.key(key))
}

// localStored is local of a key as stored (command.KeyspaceKey).
// The value read is held until the batch's replies are written: it is
// charged to the connection (budget.go), and a read the budget cannot
// hold fails with errBudget (the connection is then closed), so MGET of
// one 4 MiB key named a thousand times holds no 4 GiB.
func (c *conn) localStored(ctx context.Context, key []byte) (command.KVEntry, bool, error) {
	e, err := c.s.store.KV(ctx, key, true)
	if errors.Is(err, command.ErrNotFound) {
		return e, false, nil
	}
	if err == nil {
		if err = c.hold(len(e.Value)); err != nil {
			return command.KVEntry{}, false, err
		}
	}
	return e, err == nil, err
}

// Each read answers from a key's entry, whether read here (after the
// pipeline's barrier) or inside a transaction, where it is a read in the
// log (command.KVReadCommand) and readOf gives the entry.

// readOf is the entry a transaction's read found.
func readOf(r storeapi.OpResult) (command.KVEntry, bool, error) {
	switch {
	case r.Err != nil:
		return command.KVEntry{}, false, r.Err
	case r.Res.Code == command.CodeNotFound:
		return command.KVEntry{}, false, nil
	case r.Res.Code != command.CodeOK:
		return command.KVEntry{}, false, r.Res.Err()
	}
	return command.KVEntry{Version: r.Res.Version, ExpiresAt: r.Res.ExpiresAt, Kind: command.Kind(r.Res.Fence), Value: r.Res.Value}, true, nil
}

// txReads is a plan of one read in the log per key, answered by answer
// with the entries found.
func txReads(keys [][]byte, value bool, answer func(w *writer, es []command.KVEntry, oks []bool)) plan {
	ops := make([]*command.Command, len(keys))
	for i, k := range keys {
		ops[i] = command.KVReadCommand(k, value)
	}
	return plan{ops: ops, answer: func(w *writer, r []storeapi.OpResult) {
		es, oks := make([]command.KVEntry, len(r)), make([]bool, len(r))
		for i := range r {
			var err error
			if es[i], oks[i], err = readOf(r[i]); err != nil {
				w.errorLine(errorReply(err))
				return
			}
		}
		answer(w, es, oks)
	}}
}

func cmdGet(c *conn, ctx context.Context, a [][]byte) {
	e, ok, err := c.local(ctx, a[1])
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	answerGet(&c.w, e, ok)
}

func txGet(a [][]byte) plan {
	return txReads(a[1:2], true, func(w *writer, es []command.KVEntry, oks []bool) { answerGet(w, es[0], oks[0]) })
}

func answerGet(w *writer, e command.KVEntry, ok bool) {
	switch {
	case !ok:
		w.null()
	case e.Kind != command.KindString:
		w.errorLine(msgWrongType)
	default:
		w.bulk(e.Value)
	}
}

// cmdGetRange is GETRANGE key start end: the bytes from start to end,
// both included, counted from the end when negative, as Redis clamps them.
func cmdGetRange(c *conn, ctx context.Context, a [][]byte) {
	start, end, ok := rangeArgs(a)
	if !ok {
		c.w.errorLine(msgNotInteger)
		return
	}
	e, _, err := c.local(ctx, a[1])
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	answerGetRange(&c.w, e, start, end)
}

func txGetRange(a [][]byte) plan {
	start, end, ok := rangeArgs(a)
	if !ok {
		return plan{err: msgNotInteger}
	}
	return txReads(a[1:2], true, func(w *writer, es []command.KVEntry, _ []bool) { answerGetRange(w, es[0], start, end) })
}

func rangeArgs(a [][]byte) (start, end int64, ok bool) {
	start, ok1 := parseInt64(a[2])
	end, ok2 := parseInt64(a[3])
	return start, end, ok1 && ok2
}

func answerGetRange(w *writer, e command.KVEntry, start, end int64) {
	if e.Kind != command.KindString {
		w.errorLine(msgWrongType)
		return
	}
	v := e.Value
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		w.bulk(nil)
		return
	}
	if start < 0 {
		start = max(n+start, 0)
	}
	if end < 0 {
		end = max(n+end, 0)
	}
	end = min(end, n-1)
	if start > end || n == 0 {
		w.bulk(nil)
		return
	}
	w.bulk(v[start : end+1])
}

// cmdStrlen is STRLEN: the value's length, 0 without the key.
func cmdStrlen(c *conn, ctx context.Context, a [][]byte) {
	e, _, err := c.local(ctx, a[1])
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	answerStrlen(&c.w, e)
}

func txStrlen(a [][]byte) plan {
	return txReads(a[1:2], true, func(w *writer, es []command.KVEntry, _ []bool) { answerStrlen(w, es[0]) })
}

func answerStrlen(w *writer, e command.KVEntry) {
	if e.Kind != command.KindString {
		w.errorLine(msgWrongType)
		return
	}
	w.integer(int64(len(e.Value)))
}

func cmdMGet(c *conn, ctx context.Context, a [][]byte) {
	es := make([]command.KVEntry, len(a)-1)
	oks := make([]bool, len(a)-1)
	for i, k := range a[1:] {
		var err error
		if es[i], oks[i], err = c.local(ctx, k); err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
	}
	answerMGet(&c.w, es, oks)
}

func txMGet(a [][]byte) plan { return txReads(a[1:], true, answerMGet) }

func answerMGet(w *writer, es []command.KVEntry, oks []bool) {
	w.array(len(es))
	for i, e := range es {
		answerGet(w, e, oks[i] && e.Kind == command.KindString) // MGET answers nil for another kind
	}
}

func cmdExists(c *conn, ctx context.Context, a [][]byte) {
	n := 0
	for _, k := range a[1:] {
		_, ok, err := c.local(ctx, k)
		if err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
		n += boolInt(ok)
	}
	c.w.integer(int64(n))
}

func txExists(a [][]byte) plan {
	return txReads(a[1:], false, func(w *writer, _ []command.KVEntry, oks []bool) {
		n := 0
		for _, ok := range oks {
			n += boolInt(ok)
		}
		w.integer(int64(n))
	})
}

// ttl answers TTL (unit second) or PTTL.
func (c *conn) ttl(ctx context.Context, key []byte, unit time.Duration) {
	e, ok, err := c.local(ctx, key)
	if err != nil {
		c.w.errorLine(errorReply(err))
		return
	}
	answerTTL(&c.w, e, ok, unit, c.now())
}

func txTTL(a [][]byte, unit time.Duration) plan {
	return txReads(a[1:2], false, func(w *writer, es []command.KVEntry, oks []bool) { answerTTL(w, es[0], oks[0], unit, time.Now()) })
}

// answerTTL: -2 without the key, -1 without a lifetime, else what is
// left, rounded as Redis rounds it.
func answerTTL(w *writer, e command.KVEntry, ok bool, unit time.Duration, now time.Time) {
	switch {
	case !ok:
		w.integer(-2)
	case e.ExpiresAt == 0:
		w.integer(-1)
	default:
		left := max(time.Unix(0, e.ExpiresAt).Sub(now), 0)
		w.integer(int64((left + unit/2) / unit))
	}
}

// setOptions is what SET's options came to.
type setOptions struct {
	mode      command.SetMode
	match     []byte // IFEQ/IFNE's value
	digest    uint64 // IFDEQ/IFDNE's digest
	get       bool
	keepTTL   bool
	ttl       time.Duration
	hasExpiry bool
}

// parseSet reads SET's options as Redis 8.4 does: one of NX|XX|IFEQ v|
// IFNE v|IFDEQ d|IFDNE d, GET, one of EX|PX|EXAT|PXAT|KEEPTTL, in any
// order; the reply for a refusal.
func parseSet(a [][]byte, now time.Time) (setOptions, string) {
	var (
		o      setOptions
		expOpt string // the expiry option, given once or again (the last value counts, as in Redis)
		expVal []byte
	)
	for i := 3; i < len(a); i++ {
		opt := string(a[i])
		switch {
		case eq(opt, "nx") && (o.mode == command.SetPlain || o.mode == command.SetNX): // NX NX is NX, as in Redis
			o.mode = command.SetNX
		case eq(opt, "xx") && (o.mode == command.SetPlain || o.mode == command.SetXX):
			o.mode = command.SetXX
		case condition(opt) != command.SetPlain && o.mode == command.SetPlain && i+1 < len(a):
			i++
			o.mode = condition(opt)
			if o.mode == command.SetIfDigestEq || o.mode == command.SetIfDigestNe {
				d, ok := parseDigest(a[i])
				if !ok {
					return o, msgBadDigest
				}
				o.digest = d
			} else {
				o.match = a[i]
			}
		case eq(opt, "get"):
			o.get = true
		case eq(opt, "keepttl") && expOpt == "":
			o.keepTTL = true
		case (eq(opt, "ex") || eq(opt, "px") || eq(opt, "exat") || eq(opt, "pxat")) && (expOpt == "" || eq(opt, strings.ToLower(expOpt))) &&
			!o.keepTTL && i+1 < len(a):
			i++
			expOpt, expVal = opt, a[i]
		default:
			return o, msgSyntax
		}
	}
	if expOpt != "" {
		n, ok := parseInt64(expVal)
		if !ok {
			return o, msgNotInteger
		}
		d, ok := expiryOf(expOpt, n, now)
		if !ok {
			return o, "ERR invalid expire time in 'set' command"
		}
		o.ttl, o.hasExpiry = d, true
	}
	return o, ""
}

// expiryOf turns EX/PX/EXAT/PXAT n into a lifetime from now, refusing
// (false) exactly what Redis 7 refuses (getExpireMillisecondsOrReply: not
// positive, or past a 64-bit count of milliseconds once made absolute). An
// absolute time already past is a lifetime of 1ns: the key is set and
// gone, as in Redis. A lifetime Redis takes that is longer than the
// store's bound (command.MaxTTL, 100 years) is that bound.
func expiryOf(opt string, n int64, now time.Time) (time.Duration, bool) {
	seconds, relative := eq(opt, "ex") || eq(opt, "exat"), eq(opt, "ex") || eq(opt, "px")
	if n <= 0 || (seconds && n > math.MaxInt64/1000) {
		return 0, false
	}
	ms := n
	if seconds {
		ms *= 1000
	}
	nowMs := now.UnixMilli()
	if relative && ms > math.MaxInt64-nowMs {
		return 0, false
	}
	var d time.Duration
	switch {
	case relative && ms <= int64(command.MaxTTL/time.Millisecond):
		d = time.Duration(ms) * time.Millisecond
	case relative:
		d = command.MaxTTL
	case ms-nowMs > int64(command.MaxTTL/time.Millisecond):
		d = command.MaxTTL
	default:
		d = time.UnixMilli(ms).Sub(now)
	}
	return max(d, 1), true
}

// lifetimeOf is EXPIRE's arithmetic (Redis's expireGenericCommand): n
// units from base (the Unix epoch for EXPIREAT, now for EXPIRE) as a
// lifetime from now, 0 when that is already past (the key goes); false
// where Redis answers "invalid expire time": n seconds past a 64-bit count
// of milliseconds, or past it once base is added. A lifetime longer than
// the store's bound (command.MaxTTL) is that bound.
func lifetimeOf(n int64, unit time.Duration, relative bool, now time.Time) (time.Duration, bool) {
	ms := n
	if unit == time.Second {
		if n > math.MaxInt64/1000 || n < math.MinInt64/1000 {
			return 0, false
		}
		ms *= 1000
	}
	nowMs := now.UnixMilli()
	if relative {
		if ms > math.MaxInt64-nowMs {
			return 0, false
		}
		ms += nowMs
	}
	switch left := ms - nowMs; {
	case ms <= nowMs: // (left is read only below, where ms is past now: no overflow)
		return 0, true
	case left > int64(command.MaxTTL/time.Millisecond):
		return command.MaxTTL, true
	case relative:
		return time.Duration(left) * time.Millisecond, true
	}
	return max(time.UnixMilli(ms).Sub(now), 0), true
}

func planSet(c *conn, a [][]byte) plan {
	o, refusal := parseSet(a, c.now())
	if refusal != "" {
		return plan{err: refusal}
	}
	op := command.KVSetCommand(command.KVSetRequest{Key: a[1], Value: a[2], TTL: o.ttl, Mode: o.mode,
		KeepTTL: o.keepTTL, ReturnOld: o.get, Match: o.match, Digest: o.digest})
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) { answerSet(w, o.get, r) }}
}

// answerSet: OK or nil (NX/XX/IF* refused), or with GET the old value or
// nil, set or not.
func answerSet(w *writer, get bool, r []storeapi.OpResult) {
	if r[0].Err != nil {
		w.errorLine(errorReply(r[0].Err))
		return
	}
	res := r[0].Res
	refused := res.Code == command.CodeExists || res.Code == command.CodeNotFound || res.Code == command.CodeVersionMismatch
	switch {
	case res.Code != command.CodeOK && res.Code != command.CodeCreated && !refused:
		w.errorLine(errorReply(res.Err()))
	case get && (res.Code == command.CodeOK || res.Code == command.CodeExists ||
		(res.Code == command.CodeVersionMismatch && res.Version != 0)): // the key was there
		w.bulk(res.Value)
	case get || refused:
		w.null()
	default:
		w.ok()
	}
}

// planSetNX is the old SETNX key value: 1 if set, 0 if not.
func planSetNX(c *conn, a [][]byte) plan {
	op := command.KVSetCommand(command.KVSetRequest{Key: a[1], Value: a[2], Mode: command.SetNX})
	return plan{ops: []*command.Command{op}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeCreated))) }, command.CodeCreated, command.CodeExists)
	}}
}

func planGetDel(c *conn, a [][]byte) plan {
	return plan{ops: []*command.Command{command.KVGetDelCommand(a[1], 0)}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(code command.Code) {
			if code == command.CodeOK {
				w.bulk(r[0].Res.Value)
			} else {
				w.null()
			}
		}, command.CodeNotFound)
	}}
}

// planDel deletes each key in turn (each delete is atomic; the keys
// together are not one transaction) and counts those that existed.
func planDel(c *conn, a [][]byte) plan {
	ops := make([]*command.Command, len(a)-1)
	for i, k := range a[1:] {
		ops[i] = command.KVDeleteCommand(k)
	}
	return plan{ops: ops, answer: func(w *writer, r []storeapi.OpResult) {
		n := 0
		for _, x := range r {
			if x.Err == nil && x.Res.Code != command.CodeOK && x.Res.Code != command.CodeNotFound {
				x.Err = x.Res.Err()
			}
			if x.Err != nil {
				w.errorLine(errorReply(x.Err))
				return
			}
			n += boolInt(x.Res.Code == command.CodeOK)
		}
		w.integer(int64(n))
	}}
}

func planIncrBy(a [][]byte, sign int64) plan {
	n, ok := parseInt64(a[2])
	if !ok {
		return plan{err: msgNotInteger}
	}
	if sign < 0 {
		if n == -1<<63 {
			return plan{err: "ERR decrement would overflow"}
		}
		n = -n
	}
	return planIncr(a[1], n)
}

func planIncr(key []byte, delta int64) plan {
	return plan{ops: []*command.Command{command.KVIncrCommand(key, delta)}, answer: func(w *writer, r []storeapi.OpResult) {
		answerCode(w, r[0], func(command.Code) {
			n, _ := strconv.ParseInt(string(r[0].Res.Value), 10, 64)
			w.integer(n)
		}, command.CodeCreated)
	}}
}

// planExpire: EXPIRE/PEXPIRE key n [NX|XX|GT|LT]; n <= 0 deletes the key
// (once the condition holds), as Redis does.
func planExpire(c *conn, a [][]byte, unit time.Duration) plan {
	return planExpiry(c, a, unit, true, map[time.Duration]string{time.Second: "expire", time.Millisecond: "pexpire"}[unit])
}

// planExpireAt: EXPIREAT/PEXPIREAT key t [NX|XX|GT|LT], a Unix time in
// seconds or milliseconds; one already past deletes the key, as Redis
// does. The lifetime is counted from the command's clock (conn.now), the
// one the state machine applies a script's writes at.
func planExpireAt(c *conn, a [][]byte, unit time.Duration) plan {
	return planExpiry(c, a, unit, false, map[time.Duration]string{time.Second: "expireat", time.Millisecond: "pexpireat"}[unit])
}

// planExpiry is the EXPIRE family's plan: n in unit, relative to the
// command's clock or an absolute Unix time; name is the command's, for
// Redis's error. A lifetime of 0 (past) deletes the key.
func planExpiry(c *conn, a [][]byte, unit time.Duration, relative bool, name string) plan {
	n, ok := parseInt64(a[2])
	if !ok {
		return plan{err: msgNotInteger}
	}
	flags, refusal := parseExpireFlags(a[3:])
	if refusal != "" {
		return plan{err: refusal}
	}
	d, ok := lifetimeOf(n, unit, relative, c.now())
	if !ok {
		return plan{err: "ERR invalid expire time in '" + name + "' command"}
	}
	return planLifetime(a[1], d, flags)
}

// parseExpireFlags reads EXPIRE's conditions; the reply for a refusal.
func parseExpireFlags(opts [][]byte) (byte, string) {
	var flags byte
	for _, opt := range opts {
		switch s := string(opt); {
		case eq(s, "nx"):
			flags |= command.FlagExpireNX
		case eq(s, "xx"):
			flags |= command.FlagExpireXX
		case eq(s, "gt"):
			flags |= command.FlagExpireGT
		case eq(s, "lt"):
			flags |= command.FlagExpireLT
		default:
			return 0, "ERR Unsupported option " + clip(opt)
		}
	}
	if flags&command.FlagExpireNX != 0 && flags&(command.FlagExpireXX|command.FlagExpireGT|command.FlagExpireLT) != 0 {
		return 0, "ERR NX and XX, GT or LT options at the same time are not compatible"
	}
	if flags&command.FlagExpireGT != 0 && flags&command.FlagExpireLT != 0 {
		return 0, "ERR GT and LT options at the same time are not compatible"
	}
	return flags, ""
}

// planLifetime sets key's lifetime to d (0: the key is deleted) under the
// conditions of flags.
func planLifetime(key []byte, d time.Duration, flags byte) plan {
	if d <= 0 {
		flags |= command.FlagExpireNow
		d = 0
	}
	return plan{ops: []*command.Command{command.KVExpireCommand(key, d, flags)}, answer: answerChanged}
}

func planPersist(c *conn, a [][]byte) plan {
	return plan{ops: []*command.Command{command.KVExpireCommand(a[1], 0, 0)}, answer: answerChanged}
}

// answerChanged: 1 when the lifetime changed, 0 when the key was missing
// or a condition did not hold.
func answerChanged(w *writer, r []storeapi.OpResult) {
	answerCode(w, r[0], func(code command.Code) { w.integer(int64(boolInt(code == command.CodeOK))) },
		command.CodeNotFound, command.CodeUnchanged)
}

// answerCode answers an op's result with ok when it applied (CodeOK, or
// one of also) and with its error otherwise.
func answerCode(w *writer, r storeapi.OpResult, ok func(command.Code), also ...command.Code) {
	if r.Err != nil {
		w.errorLine(errorReply(r.Err))
		return
	}
	code := r.Res.Code
	if code == command.CodeOK {
		ok(code)
		return
	}
	for _, a := range also {
		if code == a {
			ok(code)
			return
		}
	}
	w.errorLine(errorReply(r.Res.Err()))
}

func eq(s, lower string) bool {
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		ch := s[i]
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		if ch != lower[i] {
			return false
		}
	}
	return true
}

// parseInt64 reads a Redis integer argument as Redis's string2ll does
// (command.ParseInt): "01" and "-0" are not integers there.
func parseInt64(b []byte) (int64, bool) { return command.ParseInt(b) }
