package script

import (
	"fmt"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// What Redis's C libraries (cjson, cmsgpack, bit, struct: lib_*.go) share.
// Each is written here in Go after its C source as Redis 7.0 ships it,
// for the same bytes out and the same error texts; so their errors are
// raised as Lua 5.1's auxiliary library raises them (luaL_error,
// luaL_argerror, luaL_checkstack), and a builtin's own loop, which the
// VM's instruction check never sees, is kept under the run's budget by a
// meter.

// maxCStack is Lua 5.1's LUAI_MAXCSTACK: the values a C function may
// hold on its stack. The C libraries' decoders fail at it (luaL_checkstack)
// rather than at a depth of their own, and so do these.
const maxCStack = maxResults

// cError raises msg as luaL_error does: after where the calling Lua code
// is ("user_script:1: "), or bare when a builtin called (pcall(f, ...)).
func cError(L *lua.LState, format string, args ...any) {
	msg := format
	if len(args) > 0 {
		msg = fmt.Sprintf(format, args...)
	}
	if src, line, ok := luaCaller(L); ok {
		msg = fmt.Sprintf("%s:%d: %s", src, line, msg)
	}
	L.Error(lua.LString(msg), 0)
}

// luaCaller is where the Lua code that called the running builtin is;
// false when a builtin called it.
func luaCaller(L *lua.LState) (source string, line int, ok bool) {
	if dbg, ok := L.GetStack(1); ok {
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			return dbg.Source, dbg.CurrentLine, true
		}
	}
	return "", 0, false
}

// argError is luaL_argerror: "bad argument #n to 'fn' (msg)". Lua names
// the function as its caller's code does; a builtin's call (pcall(f,
// ...)) has no name for it: '?'.
func argError(L *lua.LState, n int, fn, msg string) {
	if _, _, ok := luaCaller(L); !ok {
		fn = "?"
	}
	cError(L, "bad argument #%d to '%s' (%s)", n, fn, msg)
}

// typeError is luaL_typerror.
func typeError(L *lua.LState, n int, fn, want string) {
	got := "no value"
	if n <= L.GetTop() {
		got = L.Get(n).Type().String()
	}
	argError(L, n, fn, fmt.Sprintf("%s expected, got %s", want, got))
}

// checkString is luaL_checklstring: a string, or a number as its text.
func checkString(L *lua.LState, n int, fn string) string {
	s, ok := toString(L.Get(n))
	if !ok {
		typeError(L, n, fn, "string")
	}
	return s
}

// toString is lua_tolstring: a string, or a number as its text; false
// for any other value.
func toString(v lua.LValue) (string, bool) {
	switch v := v.(type) {
	case lua.LString:
		return string(v), true
	case lua.LNumber:
		return formatLua(float64(v)), true
	}
	return "", false
}

// toNumber is lua_tonumber: a number, or a string that reads as one.
func toNumber(v lua.LValue) (float64, bool) {
	switch v := v.(type) {
	case lua.LNumber:
		return float64(v), true
	case lua.LString:
		if n := lua.LVAsNumber(v); n != 0 || isZeroText(string(v)) {
			return float64(n), true
		}
	}
	return 0, false
}

// isZeroText reports whether a string gopher-lua reads as 0 is a number
// (LVAsNumber answers 0 for text that is none too).
func isZeroText(s string) bool {
	s = strings.TrimSpace(s)
	if h := strings.TrimPrefix(strings.TrimPrefix(strings.TrimPrefix(s, "-"), "0x"), "0X"); h != s && h != "" && strings.Trim(h, "0") == "" {
		return true
	}
	f, err := strconv.ParseFloat(s, 64)
	return err == nil && f == 0
}

// checkNumber is luaL_checknumber.
func checkNumber(L *lua.LState, n int, fn string) float64 {
	f, ok := toNumber(L.Get(n))
	if !ok {
		typeError(L, n, fn, "number")
	}
	return f
}

// optInteger is luaL_optinteger: d for none or nil, else the number
// truncated (lua_Integer is 64 bits).
func optInteger(L *lua.LState, n int, fn string, d int64) int64 {
	if L.Get(n) == lua.LNil {
		return d
	}
	return cInt64(checkNumber(L, n, fn))
}

// cInt64 is C's (long long) cast of a double on x86-64: the minimum
// integer for what does not fit.
func cInt64(f float64) int64 { return truncate(f) }

// cInt32 is C's (int) cast of a double on x86-64.
func cInt32(f float64) int32 {
	if f != f || f >= 2147483648 || f <= -2147483649 {
		return -2147483648
	}
	return int32(f)
}

// meter keeps one call of a C library's builtin under the run's budget:
// it counts the bytes the call makes, charging them to the budget a
// megabyte at a time (charge raises once the run is past its memory), and
// looks at the budget every meterEvery steps, raising once the run has
// been stopped (past its time, or its heap as the watchdog saw it).
type meter struct {
	L    *lua.LState
	r    *run
	made int64
	n    uint32
}

const meterEvery = 1 << 10

func newMeter(L *lua.LState, r *run) *meter { return &meter{L: L, r: r} }

// step counts one step that made about bytes.
func (m *meter) step(bytes int64) {
	if m.made += bytes; m.made >= chargeFloor {
		m.r.charge(m.L, m.made)
		m.made = 0
	}
	if m.n++; m.n%meterEvery == 0 {
		select {
		case <-m.r.b.Done():
			m.L.RaiseError("script stopped by its limit")
		default:
		}
	}
}
