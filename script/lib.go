package script

import (
	"math/rand/v2"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// openLibs gives a VM Redis's environment: the base library without
// what reaches files or other code (dofile, loadfile, require, module)
// or changes a function's environment (getfenv, setfenv), table, string
// and math, the redis library, and the C libraries Redis adds: cjson,
// cmsgpack, bit and struct. Its functions act for the VM's current run
// (v.cur).
func openLibs(L *lua.LState, v *vm) {
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	// What Redis 7.0's Lua does not have either: a script reading one is
	// told the global does not exist (protect.go).
	for _, name := range []string{"dofile", "loadfile", "require", "module", "_printregs", "print",
		"getfenv", "setfenv", "newproxy", "_GOPHER_LUA_VERSION"} {
		L.SetGlobal(name, lua.LNil)
	}
	// gopher-lua's collectgarbage runs the process's garbage collector: a
	// script calling it in a loop would spend the node's CPU on it. The
	// Lua heap is Go's; there is nothing of the script's own to collect.
	L.SetGlobal("collectgarbage", L.NewFunction(func(L *lua.LState) int {
		L.Push(lua.LNumber(0))
		return 1
	}))
	// Lua 5.1 prints numbers with %.14g; gopher-lua with Go's shortest
	// form. tostring is what scripts call to turn a number into a reply.
	tostring := L.GetGlobal("tostring").(*lua.LFunction)
	L.SetGlobal("tostring", L.NewFunction(func(L *lua.LState) int {
		if n, ok := L.Get(1).(lua.LNumber); ok {
			L.Push(lua.LString(formatLua(float64(n))))
			return 1
		}
		return callOriginal(L, tostring)
	}))
	str := L.GetGlobal("string").(*lua.LTable)
	guardPatterns(L, str, func() *budget { return v.cur.b }) // innermost: the bounds below refuse first
	boundAllocations(L, v)
	boundResults(L, str)
	guardLoad(L)
	rng := rand.New(v.pcg)
	m := L.GetGlobal("math").(*lua.LTable)
	m.RawSetString("random", L.NewFunction(func(L *lua.LState) int { return random(L, rng) }))
	m.RawSetString("randomseed", L.NewFunction(func(L *lua.LState) int {
		v.pcg.Seed(uint64(int64(L.CheckNumber(1))), 0)
		return 0
	}))
	L.SetGlobal("redis", v.redisLib(L))
	// Redis's C libraries (clib.go).
	v.jsonNull = L.NewUserData()
	L.SetGlobal("cjson", cjsonLib(L, v, &v.json))
	L.SetGlobal("cmsgpack", cmsgpackLib(L, v))
	L.SetGlobal("bit", bitLib(L))
	L.SetGlobal("struct", structLib(L, v))
}

// callOriginal calls fn with the arguments of the current call and
// returns what it returns.
func callOriginal(L *lua.LState, fn *lua.LFunction) int {
	n := L.GetTop()
	L.Push(fn)
	for i := 1; i <= n; i++ {
		L.Push(L.Get(i))
	}
	L.Call(n, lua.MultRet)
	return L.GetTop() - n
}

// wide reports whether a format has a width or precision of three digits
// or more, which Lua 5.1 refuses (and which would make one huge string).
func wide(f string) bool {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		digits := 0
		for i++; i < len(f) && strings.IndexByte("-+ #0.123456789", f[i]) >= 0; i++ {
			if f[i] >= '0' && f[i] <= '9' {
				if digits++; digits > 2 {
					return true
				}
			} else {
				digits = 0
			}
		}
	}
	return false
}

// random is Lua 5.1's math.random over rng.
func random(L *lua.LState, rng *rand.Rand) int {
	switch L.GetTop() {
	case 0:
		L.Push(lua.LNumber(rng.Float64()))
	case 1:
		n := L.CheckInt(1)
		if n < 1 {
			L.ArgError(1, "interval is empty")
		}
		L.Push(lua.LNumber(rng.IntN(n) + 1))
	default:
		lo, hi := L.CheckInt(1), L.CheckInt(2)
		if lo > hi {
			L.ArgError(2, "interval is empty")
		}
		L.Push(lua.LNumber(rng.IntN(hi-lo+1) + lo))
	}
	return 1
}

// redisLib is the redis table: call and pcall over the Caller, the reply
// helpers, sha1hex, setresp (the protocol of the replies call and pcall
// answer), and what Redis 7 keeps for old scripts (log,
// replicate_commands, set_repl) as harmless no-ops.
func (v *vm) redisLib(L *lua.LState) *lua.LTable {
	t := L.CreateTable(0, 24)
	fn := func(name string, f lua.LGFunction) { t.RawSetString(name, L.NewFunction(f)) }
	fn("call", func(L *lua.LState) int { return v.cur.call(L, true) })
	fn("pcall", func(L *lua.LState) int { return v.cur.call(L, false) })
	// error_reply and status_reply answer an error for anything but one
	// string; sha1hex hashes any one value (a non-string as "").
	single := func(L *lua.LState) (string, bool) {
		s, ok := L.Get(1).(lua.LString)
		if L.GetTop() != 1 || !ok {
			L.Push(errorTable(L, luaPushError("wrong number or type of arguments")))
			return "", false
		}
		return string(s), true
	}
	fn("error_reply", func(L *lua.LState) int {
		if s, ok := single(L); ok {
			if i := strings.IndexByte(s, 0); i >= 0 { // read as a C string
				s = s[:i]
			}
			if !strings.HasPrefix(s, "-") {
				s = "-" + s
			}
			L.Push(errorTable(L, luaPushError(s)))
		}
		return 1
	})
	fn("status_reply", func(L *lua.LState) int {
		if s, ok := single(L); ok {
			t := L.CreateTable(0, 1)
			t.RawSetString("ok", lua.LString(s))
			L.Push(t)
		}
		return 1
	})
	fn("sha1hex", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseReply(L, "wrong number of arguments")
		}
		s, _ := toString(L.Get(1)) // any other value hashes as ""
		L.Push(lua.LString(SHA1([]byte(s))))
		return 1
	})
	fn("log", func(L *lua.LState) int {
		n := L.GetTop()
		if n < 2 {
			raiseReply(L, "redis.log() requires two arguments or more.")
		}
		level, ok := toNumber(L.Get(1))
		if !ok {
			raiseReply(L, "First argument must be a number (log level).")
		}
		if l := cInt32(level); l < 0 || l > 3 {
			raiseReply(L, "Invalid debug level.")
		}
		return 0
	})
	fn("replicate_commands", func(L *lua.LState) int { L.Push(lua.LTrue); return 1 })
	fn("set_repl", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseReply(L, "redis.set_repl() requires two arguments.")
		}
		if f, _ := toNumber(L.Get(1)); cInt32(f)&^3 != 0 {
			raiseReply(L, "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE.")
		}
		return 0
	})
	fn("setresp", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			raiseReply(L, "redis.setresp() requires one argument.")
		}
		f, _ := toNumber(L.Get(1))
		if n := cInt32(f); n == 2 || n == 3 {
			v.cur.resp = int(n)
			return 0
		}
		raiseReply(L, "RESP version must be 2 or 3.")
		return 0
	})
	fn("breakpoint", func(L *lua.LState) int { L.Push(lua.LFalse); return 1 })
	fn("debug", func(L *lua.LState) int { return 0 })
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3,
		"REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString("7.0.15"))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(0x07000f))
	return t
}

// call is redis.call (raise) and redis.pcall: the arguments must be
// strings or numbers; the reply becomes a Lua value, and an error reply
// is raised by call and returned (as {err=...}) by pcall.
func (r *run) call(L *lua.LState, raise bool) int {
	n := L.GetTop()
	fail := func(msg string) int {
		t := errorTable(L, msg)
		if raise {
			L.Error(t, 0)
		}
		L.Push(t)
		return 1
	}
	if n == 0 {
		return fail("ERR Please specify at least one argument for this redis lib call")
	}
	var size int64
	for i := 1; i <= n; i++ {
		if s, ok := L.Get(i).(lua.LString); ok {
			size += int64(len(s))
		}
	}
	r.charge(L, size) // the arguments' copies
	args := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			args[i-1] = []byte(v)
		case lua.LNumber:
			args[i-1] = []byte(formatNumber(float64(v)))
		default:
			return fail("ERR Lua redis lib command arguments must be strings or integers")
		}
	}
	reply := r.c.Call(args, r.resp)
	if reply.Kind == Error {
		return fail(reply.Str)
	}
	r.charge(L, replyCost(reply))
	L.Push(toLua(L, reply, r.resp))
	return 1
}

// errorTable is {err=msg}.
func errorTable(L *lua.LState, msg string) *lua.LTable {
	t := L.CreateTable(0, 1)
	t.RawSetString("err", lua.LString(msg))
	return t
}

// luaPushError is the text of Redis's error table for msg
// (luaPushErrorBuff): a message that starts with '-' keeps its first
// word as its code (or ERR if it is one word), any other gets ERR; the
// message is trimmed of CR and LF at either end.
func luaPushError(msg string) string {
	code := "ERR"
	if rest, ok := strings.CutPrefix(msg, "-"); ok {
		msg = rest
		if c, m, ok := strings.Cut(rest, " "); ok {
			code, msg = c, m
		}
	}
	return code + " " + strings.Trim(msg, "\r\n")
}

// raiseReply raises Redis's error table for msg (luaPushError, then
// lua_error): the error handler adds where.
func raiseReply(L *lua.LState, msg string) {
	L.Error(errorTable(L, luaPushError(msg)), 0)
}
