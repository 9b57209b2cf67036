package script

import (
	lua "github.com/yuin/gopher-lua"
)

// How many values one builtin may answer. gopher-lua keeps a state's
// values on one stack (its registry) of bounded size, 256 Ki values
// here; a builtin that pushes past it raises "registry overflow" from
// inside the push, and PCall's recovery then pushes the error handler
// onto the still-full stack, outside its own recover: the second panic
// ended the process (unpack({}, 1, 300000), issue 34, B2), after a
// minute of growing the stack 32 values at a time. Lua 5.1 refuses more
// than LUAI_MAXCSTACK (8000) values on a C function's stack, its
// arguments included: unpack with "too many results to unpack",
// string.byte with "stack overflow (string slice too long)", and a
// pattern with more than LUA_MAXCAPTURES (32) captures with "too many
// captures". Those are the builtins that answer a count of values their
// arguments choose (select and the others answer values already on the
// stack, or one value); each is checked here, with Lua's words, before it
// pushes anything. Run still recovers any panic (vm.go): this makes the
// error Lua's, and keeps the registry from filling at all.

// maxResults is Lua 5.1's LUAI_MAXCSTACK.
const maxResults = 8000

// maxCaptures is Lua 5.1's LUA_MAXCAPTURES.
const maxCaptures = 32

// boundResults wraps unpack and string.byte with Lua 5.1's check.
func boundResults(L *lua.LState, str *lua.LTable) {
	unpack := L.GetGlobal("unpack").(*lua.LFunction)
	L.SetGlobal("unpack", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		i, e := L.OptInt(2, 1), L.OptInt(3, t.Len())
		if i <= e {
			if n := e - i + 1; n <= 0 || n+L.GetTop() > maxResults {
				L.RaiseError("too many results to unpack")
			}
		}
		return callOriginal(L, unpack)
	}))
	byteFn := str.RawGetString("byte").(*lua.LFunction)
	str.RawSetString("byte", L.NewFunction(func(L *lua.LState) int {
		if n := byteCount(L.CheckString(1), L.OptInt(2, 1), L.OptInt(3, -1), L.GetTop()); n+L.GetTop() > maxResults {
			L.RaiseError("stack overflow (string slice too long)")
		}
		return callOriginal(L, byteFn)
	}))
}

// byteCount is how many values gopher-lua's string.byte answers for s,
// i, j given nargs arguments (its arithmetic, which differs from Lua's
// only in j's default).
func byteCount(s string, i, j, nargs int) int {
	l := len(s)
	start, end := i-1, j
	if start < 0 {
		start = l + start + 1
	}
	if end < 0 {
		end = l + end + 1
	}
	if nargs == 2 {
		return 1
	}
	start, end = max(start, 0), min(end, l)
	if end < 0 || end <= start || start >= l {
		return 0
	}
	return end - start
}

// patternCaptures counts a Lua pattern's captures: each '(' that is not
// escaped (%() nor in a set ([(]).
func patternCaptures(p string) int {
	n := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '%':
			i++
		case '[':
			// A set: ']' right after '[' or '[^' is a member, % escapes.
			i++
			if i < len(p) && p[i] == '^' {
				i++
			}
			if i < len(p) && p[i] == ']' {
				i++
			}
			for ; i < len(p) && p[i] != ']'; i++ {
				if p[i] == '%' {
					i++
				}
			}
		case '(':
			n++
		}
	}
	return n
}
