package script

import (
	lua "github.com/yuin/gopher-lua"
)

// Lua's pattern functions under the script's budget. gopher-lua matches a
// pattern in one Go call that the VM's instruction check never sees, so
// string.find('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!', string.rep('a?', 30) ..
// string.rep('a', 30) .. '$') ran for ever past the time limit. Each of
// find, match, gmatch and gsub now first runs the same match in
// lpattern.go, a copy of gopher-lua's matcher that looks at the budget
// every lpCheckEvery steps and stops when it is spent; only a match that
// copy finished is run by gopher-lua's function, which then answers (and
// raises its own errors) exactly as before. A match costs twice what it
// did: patterns are rare in scripts, and short.

// lpCheckEvery is how many matcher steps pass between looks at the
// budget: each step is a few nanoseconds, so a look is every few
// microseconds.
const lpCheckEvery = 1 << 10

// lpSteps counts a match's steps against a budget.
type lpSteps struct {
	b *budget
	n uint32
}

// lpStopped is the panic a spent budget raises inside the matcher (lpFind
// recovers *lpError panics into its error).
var lpStopped = &lpError{Pos: lpUNKNOWN, Message: "the script's limit stopped a pattern match"}

func (s *lpSteps) step() {
	if s.n++; s.n%lpCheckEvery != 0 || s.b == nil {
		return
	}
	select {
	case <-s.b.Done():
		panic(lpStopped)
	default:
	}
}

// guardPatterns wraps string.find, match, gmatch and gsub (as set in L's
// string table, so after any other wrapping) with the budgeted match.
func guardPatterns(L *lua.LState, str *lua.LTable, cur func() *budget) {
	guard := func(name string, args func(L *lua.LState) (subject, pattern string, init, limit int, plain bool)) {
		orig := str.RawGetString(name).(*lua.LFunction)
		str.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			subject, pattern, init, limit, plain := args(L)
			// Captures nest on the Go stack in both matchers' parsers (a
			// pattern of 5 million '(' ended the process), and each is a
			// value pushed: Lua 5.1 allows 32.
			if !plain && patternCaptures(pattern) > maxCaptures {
				L.RaiseError("too many captures")
			}
			if !plain && init <= len(subject) {
				_, err := lpFind(&lpSteps{b: cur()}, pattern, []byte(subject), init, limit)
				if e, ok := err.(*lpError); ok && (e == lpStopped || e.Message == lpTooComplex) {
					L.RaiseError("%s", e.Message)
				}
			}
			return callOriginal(L, orig)
		}))
	}
	// The start of each, as gopher-lua's stringlib reads it.
	guard("find", func(L *lua.LState) (string, string, int, int, bool) {
		s, p := L.CheckString(1), L.CheckString(2)
		init := L.OptInt(3, 1)
		if init != 0 {
			init--
		}
		if init < 0 {
			init = len(s) + init + 1
		}
		return s, p, max(init, 0), 1, len(p) == 0 || (L.GetTop() == 4 && lua.LVAsBool(L.Get(4)))
	})
	guard("match", func(L *lua.LState) (string, string, int, int, bool) {
		s, p := L.CheckString(1), L.CheckString(2)
		off := L.OptInt(3, 1)
		if off < 0 {
			off = len(s) + off + 1
		}
		return s, p, max(off-1, 0), 1, false
	})
	guard("gmatch", func(L *lua.LState) (string, string, int, int, bool) {
		return L.CheckString(1), L.CheckString(2), 0, -1, false
	})
	guard("gsub", func(L *lua.LState) (string, string, int, int, bool) {
		return L.CheckString(1), L.CheckString(2), 0, L.OptInt(4, -1), false
	})
}
