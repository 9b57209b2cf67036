package resp

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
)

// What a key is: EXPIRETIME, PEXPIRETIME, TYPE, OBJECT ENCODING. Each is
// one key's read, here after the pipeline's barrier or, inside MULTI, a
// read in the log.

func init() {
	rd := func(name string, arity, first int, answer keyAnswer) *redisCommand {
		return &redisCommand{name: name, op: command.TypeKVRead, arity: arity, flags: []string{"fast"}, firstKey: first, lastKey: first, step: 1,
			read: func(c *conn, ctx context.Context, a [][]byte) {
				if refusal := answer.refusal(a); refusal != "" {
					c.w.errorLine(refusal)
					return
				}
				e, ok, err := c.local(ctx, a[first])
				if err != nil {
					c.w.errorLine(errorReply(err))
					return
				}
				answer.fn(&c.w, a, e, ok)
			},
			txRead: func(a [][]byte) plan {
				if refusal := answer.refusal(a); refusal != "" {
					return plan{err: refusal}
				}
				return txReads(a[first:first+1], true, func(w *writer, es []command.KVEntry, oks []bool) { answer.fn(w, a, es[0], oks[0]) })
			}}
	}
	object := rd("object", -2, 2, keyAnswer{check: checkObject, fn: func(w *writer, _ [][]byte, e command.KVEntry, ok bool) {
		if !ok {
			w.null()
			return
		}
		if e.Kind == command.KindList {
			w.bulkString("quicklist") // Redis 7.0's only list encoding (7.2 added listpack for small lists)
			return
		}
		if e.Kind.IsColl() {
			h, _ := command.DecodeCollHeader(e.Value)
			w.bulkString(h.Encoding(e.Kind))
			return
		}
		w.bulkString(encoding(e.Value))
	}})
	object.sub = checkObject
	register(
		object,
		rd("expiretime", 2, 1, keyAnswer{fn: func(w *writer, _ [][]byte, e command.KVEntry, ok bool) { answerExpireTime(w, e, ok, time.Second) }}),
		rd("pexpiretime", 2, 1, keyAnswer{fn: func(w *writer, _ [][]byte, e command.KVEntry, ok bool) { answerExpireTime(w, e, ok, time.Millisecond) }}),
		rd("type", 2, 1, keyAnswer{fn: func(w *writer, _ [][]byte, e command.KVEntry, ok bool) {
			if !ok {
				w.simple("none")
				return
			}
			w.simple(e.Kind.Name())
		}}),
	)
}

// keyAnswer is a key read's reply from the entry, and its refusal, if
// any, before the key is read.
type keyAnswer struct {
	check func(a [][]byte) string
	fn    func(w *writer, a [][]byte, e command.KVEntry, ok bool)
}

func (k keyAnswer) refusal(a [][]byte) string {
	if k.check == nil {
		return ""
	}
	return k.check(a)
}

// answerExpireTime: the Unix time the key expires at, in unit (seconds
// rounded as Redis rounds them), -1 without a lifetime, -2 without the
// key.
func answerExpireTime(w *writer, e command.KVEntry, ok bool, unit time.Duration) {
	switch {
	case !ok:
		w.integer(-2)
	case e.ExpiresAt == 0:
		w.integer(-1)
	case unit == time.Second:
		w.integer((e.ExpiresAt/int64(time.Millisecond) + 500) / 1000)
	default:
		w.integer(e.ExpiresAt / int64(time.Millisecond))
	}
}

// checkObject: only OBJECT ENCODING key is run here; a command that is
// not OBJECT's is Redis's error, and OBJECT's others (REFCOUNT,
// IDLETIME, FREQ, HELP: about Redis's memory) are refused plainly.
func checkObject(a [][]byte) string {
	sub := strings.ToLower(string(a[1]))
	switch sub {
	case "encoding":
		if len(a) != 3 {
			return "ERR wrong number of arguments for 'object|encoding' command"
		}
		return ""
	case "refcount", "idletime", "freq", "help":
		return "ERR OBJECT " + strings.ToUpper(sub) + " is not supported by idemgate"
	}
	return "ERR unknown subcommand '" + clip(a[1]) + "'. Try OBJECT HELP."
}

// encoding is the encoding Redis 7 gives a string SET stores: "int" for a
// decimal 64-bit integer as Redis writes one, "embstr" up to 44 bytes,
// "raw" beyond. (Redis gives a value APPEND or SETRANGE made "raw", and
// one INCRBYFLOAT made "embstr", whatever it holds: idemgate keeps no
// trace of which command wrote a value.)
func encoding(v []byte) string {
	if len(v) <= 20 && canonicalInt(v) {
		return "int"
	}
	if len(v) <= 44 {
		return "embstr"
	}
	return "raw"
}

// canonicalInt: v is an int64 as Redis's string2l reads one (no sign but
// '-', no leading zeros, not "-0").
func canonicalInt(v []byte) bool {
	n, err := strconv.ParseInt(string(v), 10, 64)
	return err == nil && strconv.FormatInt(n, 10) == string(v)
}
