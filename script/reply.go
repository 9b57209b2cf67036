package script

import (
	"fmt"
	"math"
	"strconv"
	"unsafe"

	lua "github.com/yuin/gopher-lua"
)

// Kind is a reply's type.
type Kind byte

// The kinds of reply a script sees and returns: RESP2's, and RESP3's
// (a script that called redis.setresp(3) sees them; any script may
// return them, as {map=...}, {double=...}, ...: resp3.go).
const (
	Nil       Kind = iota // a null: false in Lua (nil after redis.setresp(3))
	Int                   // integer
	Bulk                  // bulk string
	Status                // +status: {ok=...} in Lua
	Error                 // -error: {err=...} in Lua
	Array                 // array of replies
	Map                   // RESP3 map: Elems holds keys and values, alternately
	Set                   // RESP3 set
	Double                // RESP3 double: Float
	Bool                  // RESP3 boolean: Int, 0 or 1
	BigNumber             // RESP3 big number: Str, its digits
	Verbatim              // RESP3 verbatim string: Str, with Format
)

// Reply is a Redis reply: what a command answered a script, or what a
// script answers its caller.
type Reply struct {
	Kind   Kind
	Int    int64
	Str    string // Bulk's value; Status's and Error's text (an Error's starts with its code: "ERR ..."); BigNumber's and Verbatim's
	Elems  []Reply
	Float  float64 // Double's
	Format string  // Verbatim's ("txt")
}

// ErrorReply is an error reply with text msg ("ERR ...").
func ErrorReply(msg string) Reply { return Reply{Kind: Error, Str: msg} }

// maxReplyDepth bounds the nesting of a table a script returns: a table
// that holds itself would otherwise nest forever.
const maxReplyDepth = 1000

// toLua converts a command's reply as Redis does: integer to number, bulk
// to string, null to false, array to table, status to {ok=s}, error to
// {err=s}; RESP3's kinds as resp3ToLua does (and null to nil).
func toLua(L *lua.LState, r Reply, resp int) lua.LValue {
	if lv, ok := resp3ToLua(L, r, resp); ok {
		return lv
	}
	switch r.Kind {
	case Int:
		return lua.LNumber(r.Int)
	case Bulk:
		return lua.LString(r.Str)
	case Status, Error:
		t := L.CreateTable(0, 1)
		field := "ok"
		if r.Kind == Error {
			field = "err"
		}
		t.RawSetString(field, lua.LString(r.Str))
		return t
	case Array:
		t := L.CreateTable(len(r.Elems), 0)
		for i, e := range r.Elems {
			t.RawSetInt(i+1, toLua(L, e, resp))
		}
		return t
	}
	return lua.LFalse
}

// replyBytes is what one element of a reply costs: the Reply value in
// its array.
const replyBytes = int64(unsafe.Sizeof(Reply{}))

// reply converts what the script returned to its reply, within the
// run's memory budget: each element and each string's bytes (which the
// listener then writes) are counted before the element is made, and a
// reply that would pass what is left of the budget stops the run
// (ErrMemory). A table returned many times over ({t, t} nested 23 times:
// 8 million elements, 2.5 GB) or holding itself twice is stopped so; one
// holding itself once nests maxReplyDepth deep, then answers Redis's
// "reached lua stack limit" in place.
func (r *run) reply(v lua.LValue) (Reply, error) {
	c := replyConv{room: r.b.room(), resp: r.resp}
	reply := c.fromLua(v, 0)
	if c.room < 0 {
		err := ErrMemory
		r.b.why.CompareAndSwap(nil, &err)
		return killed(err, r.b, ""), err
	}
	return reply, nil
}

// replyConv converts a value, counting what it makes against room; resp
// is the protocol the script set (redis.setresp), which decides what a
// boolean becomes.
type replyConv struct {
	room int64
	resp int
}

// fromLua converts a script's value to a reply as Redis does: a number is
// truncated to an integer, a string is bulk, true is 1, false and nil are
// null, a table with a string err is an error and one with a string ok a
// status, any other table an array of its elements up to the first nil.
// Once room is spent it makes nothing more.
func (c *replyConv) fromLua(v lua.LValue, depth int) Reply {
	if c.room -= replyBytes; c.room < 0 {
		return Reply{}
	}
	switch v := v.(type) {
	case lua.LNumber:
		return Reply{Kind: Int, Int: truncate(float64(v))}
	case lua.LString:
		c.room -= int64(len(v))
		return Reply{Kind: Bulk, Str: string(v)}
	case lua.LBool:
		if c.resp == 3 {
			return Reply{Kind: Bool, Int: int64(boolInt(bool(v)))}
		}
		if v {
			return Reply{Kind: Int, Int: 1}
		}
	case *lua.LTable:
		if depth >= maxReplyDepth {
			return ErrorReply("ERR reached lua stack limit")
		}
		if s, ok := v.RawGetString("err").(lua.LString); ok {
			c.room -= int64(len(s))
			return Reply{Kind: Error, Str: string(s)}
		}
		if s, ok := v.RawGetString("ok").(lua.LString); ok {
			c.room -= int64(len(s))
			return Reply{Kind: Status, Str: string(s)}
		}
		if r, ok := c.resp3FromLua(v, depth); ok {
			return r
		}
		var elems []Reply
		for i := 1; c.room >= 0; i++ {
			e := v.RawGetInt(i)
			if e == lua.LNil {
				break
			}
			elems = append(elems, c.fromLua(e, depth+1))
		}
		return Reply{Kind: Array, Elems: elems}
	}
	return Reply{Kind: Nil}
}

// truncate is C's (long long) cast of a double as Redis's x86-64 build
// does it: toward zero, and the minimum integer for what does not fit.
func truncate(f float64) int64 {
	if math.IsNaN(f) || f >= 9223372036854775807 || f < -9223372036854775808 {
		return math.MinInt64
	}
	return int64(f)
}

// formatLua is Lua 5.1's tostring of a number (LUAI_NUMFFORMAT "%.14g",
// with C's inf and nan).
func formatLua(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "inf"
	case math.IsInf(f, -1):
		return "-inf"
	case math.IsNaN(f):
		return "nan"
	}
	return fmt.Sprintf("%.14g", f)
}

// formatNumber is a number given to redis.call as an argument: Redis
// prints it as the shortest text that reads back the same.
func formatNumber(f float64) string {
	if f == math.Trunc(f) && math.Abs(f) < 1e15 {
		return strconv.FormatInt(int64(f), 10)
	}
	if a := math.Abs(f); a >= 1e-4 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64)
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
