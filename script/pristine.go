package script

import (
	lua "github.com/yuin/gopher-lua"
)

// Knowing a run left the environment as opened, without looking. putVM
// compares every table of a state's environment with what it held when
// opened (some 150 entries), and that compare was half of a short
// script's cost (a redsync release: a GET, a compare, a DEL). A run can
// change the environment in only two ways: an instruction that stores
// into a table or a global (SETGLOBAL, SETTABLE, SETTABLEKS, SETLIST: a
// table the script made, a library's, the globals), or a builtin that
// changes a table it is given (rawset, setmetatable, table.insert,
// table.remove, table.sort) or compiles code that
// may do either (load, loadstring). A script none of whose functions
// holds such an instruction, in a run that called none of those
// builtins, left every table of the environment as it was: its state is
// kept without the compare. Any other run is compared as before. The
// script's own upvalues (SETUPVAL) are its closures', made anew each run.
// The environment is read-only besides (protect.go): such a store into it
// fails; the compare is the second guard, for what the flag does not
// cover (a metatable of a value that is no table).

// storesIntoTables reports whether fn or a function inside it holds an
// instruction that stores into a table or a global.
func storesIntoTables(fn *lua.FunctionProto) bool {
	for _, inst := range fn.Code {
		switch int(inst >> 26) { // gopher-lua's opcode field
		case lua.OP_SETGLOBAL, lua.OP_SETTABLE, lua.OP_SETTABLEKS, lua.OP_SETLIST:
			return true
		}
	}
	for _, p := range fn.FunctionPrototypes {
		if storesIntoTables(p) {
			return true
		}
	}
	return false
}

// changingBuiltins are the builtins that change a table or an
// environment they are given, or compile code, by library ("" the base).
var changingBuiltins = map[string][]string{
	"":      {"rawset", "setmetatable", "load", "loadstring"},
	"table": {"insert", "remove", "sort"},
}

// watchChangingBuiltins replaces each of changingBuiltins with one that
// marks v's run as one to compare, then does the builtin's work in the
// same call (same arguments, same error texts).
func watchChangingBuiltins(L *lua.LState, v *vm) {
	for lib, names := range changingBuiltins {
		t := L.G.Global
		if lib != "" {
			t = L.GetGlobal(lib).(*lua.LTable)
		}
		for _, name := range names {
			orig, ok := t.RawGetString(name).(*lua.LFunction)
			if !ok || !orig.IsG {
				continue
			}
			g := orig.GFunction
			t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
				v.changed = true
				return g(L)
			}))
		}
	}
}
