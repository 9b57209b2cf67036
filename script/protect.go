package script

import (
	lua "github.com/yuin/gopher-lua"
)

// Redis 7's globals protection. A script may not change the environment
// it runs in: the globals, every table reachable from them (the
// libraries: redis, string, cjson, ...), the globals' metatable and the
// strings' metatable are read-only, so a store into one of them (a
// global set, a library function replaced, rawset, setmetatable,
// table.insert) raises "Attempt to modify a readonly table"; and reading
// a global that does not exist raises "Script attempted to access
// nonexistent global variable 'x'" instead of answering nil, so a typo
// fails the script where it is. Scripts keep their state in locals, as
// on Redis 7. KEYS and ARGV are set by the run itself (Run), and their
// tables are the script's to change.

// protectEnv makes L's environment read-only, as Redis's
// scriptingEnableGlobalsProtection and luaSetTableProtectionRecursively
// do: called once the libraries are open.
func protectEnv(L *lua.LState) {
	g := L.G.Global
	mt := L.CreateTable(0, 1)
	mt.RawSetString("__index", L.NewFunction(nonexistentGlobal))
	L.SetMetatable(g, mt)
	protectTables(g)
	mt.SetReadOnly(true)
	if smt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		protectTables(smt)
	}
}

// protectTables makes t and every table reachable from it read-only.
func protectTables(t *lua.LTable) {
	if t.IsReadOnly() {
		return // visited: the globals hold _G, which is themselves
	}
	t.SetReadOnly(true)
	t.ForEach(func(_, v lua.LValue) {
		if tt, ok := v.(*lua.LTable); ok {
			protectTables(tt)
		}
	})
}

// nonexistentGlobal is the globals' __index: a read of a global that does
// not exist is an error, in Redis's words (luaProtectedTableError).
func nonexistentGlobal(L *lua.LState) int {
	if L.GetTop() != 2 {
		L.RaiseError("Wrong number of arguments to luaProtectedTableError")
	}
	name, ok := toString(L.Get(2))
	if !ok {
		L.RaiseError("Second argument to luaProtectedTableError must be a string or number")
	}
	L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
	return 0
}
