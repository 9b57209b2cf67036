package script

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// What a script makes in one step is charged to its memory budget before
// it is made. The watchdog samples the heap every millisecond and stops a
// script between instructions; one instruction or builtin can make far
// more than the limit in less (t[67108863] = 1 made a 1 GiB array; a
// 10-way .. of 100 MiB strings a 1 GiB string). So each way a script can
// make a large value at once says how large first, and is refused when
// the heap's growth and it would pass Config.MaxMemory: the run is then
// stopped (ErrMemory), and the builtin raises instead of making it.
//
//   - the VM: a concatenation (OP_CONCAT) and a store to a table's array
//     past its end (OP_SETTABLE, rawset), through gopher-lua's
//     Options.Allocating, a hook idemgate's copy of gopher-lua adds
//     (third_party/gopher-lua/README.md);
//   - builtins: string.rep, string.format, string.gsub, string.upper,
//     string.lower, string.reverse, table.concat, table.insert, and
//     loadstring and load (which compile: compile.go's bounds);
//   - redis.call's arguments, and the reply it converts to Lua values;
//   - the reply a script returns (reply.go).
//
// string.rep, table.concat and string.gsub refuse with a Lua error of
// their own (one a script may catch) a result larger than the whole
// limit, as they did before.

// boundAllocations wraps the builtins that make one large value, and sets
// the VM's hook, for v's runs.
func boundAllocations(L *lua.LState, v *vm) {
	L.Options.Allocating = func(L *lua.LState, n int) {
		if v.cur != nil {
			v.cur.charge(L, int64(n))
		}
	}
	str := L.GetGlobal("string").(*lua.LTable)
	wrap := func(t *lua.LTable, name string, size func(L *lua.LState) int64) {
		orig := t.RawGetString(name).(*lua.LFunction)
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			v.cur.charge(L, size(L))
			return callOriginal(L, orig)
		}))
	}
	limit := func() int64 { return v.cur.cfg.MaxMemory }
	wrap(str, "rep", func(L *lua.LState) int64 {
		s, n := int64(len(L.CheckString(1))), int64(L.CheckInt(2))
		if n > 0 && s > 0 && n > limit()/s {
			L.RaiseError("string.rep: a result of %.0f bytes, over the script memory limit", float64(s)*float64(n))
		}
		return s * max(n, 0)
	})
	wrap(str, "format", func(L *lua.LState) int64 {
		f := L.CheckString(1)
		if wide(f) {
			L.RaiseError("invalid format (width or precision too long)")
		}
		// Each directive makes at most 99 characters of padding, a
		// number's digits, or its string argument (%q: each byte as \ddd).
		n := int64(len(f)) + 128*int64(strings.Count(f, "%"))
		for i := 2; i <= L.GetTop(); i++ {
			if s, ok := L.Get(i).(lua.LString); ok {
				n += 4*int64(len(s)) + 2
			}
		}
		return n
	})
	wrap(str, "gsub", func(L *lua.LState) int64 {
		// A string replacement can be made at every position: the result
		// is at most this. (A function's or table's replacements are Lua
		// values, made by instructions the budget sees.)
		repl, ok := L.Get(3).(lua.LString)
		if !ok {
			return 0
		}
		n := int64(len(L.CheckString(1)))
		bound := (n+1)*int64(len(repl)) + n
		if bound > limit() {
			L.RaiseError("string.gsub: a result that may be %d bytes, over the script memory limit", bound)
		}
		return bound
	})
	for _, name := range []string{"upper", "lower", "reverse"} {
		wrap(str, name, func(L *lua.LState) int64 { return int64(len(L.CheckString(1))) })
	}
	tbl := L.GetGlobal("table").(*lua.LTable)
	wrap(tbl, "concat", func(L *lua.LState) int64 {
		t := L.CheckTable(1)
		sep := int64(len(L.OptString(2, "")))
		var n int64
		for i := 1; i <= t.Len(); i++ {
			switch e := t.RawGetInt(i).(type) {
			case lua.LString:
				n += int64(len(e)) + sep
			case lua.LNumber:
				n += 24 + sep
			}
			if n > limit() {
				L.RaiseError("table.concat: a result over the script memory limit")
			}
		}
		return n
	})
	wrap(tbl, "insert", func(L *lua.LState) int64 {
		// table.insert(t, pos, v) past the array's end fills it with nil
		// up to pos, 16 bytes a slot (Lua 5.1 takes any pos).
		if L.GetTop() != 3 {
			return 0
		}
		n := L.CheckTable(1).Len()
		if pos := L.CheckInt(2); pos > n+1 && pos < lua.MaxArrayIndex {
			return 16 * int64(pos-n)
		}
		return 0
	})
}

// charge is told of n bytes the run is about to make at once: over the
// budget, it raises a Lua error instead (and the run is stopped).
func (r *run) charge(L *lua.LState, n int64) {
	if r.b.charge(n) != nil {
		L.RaiseError("not enough memory")
	}
}

// replyCost is what converting r to Lua values makes, about: a value
// and its string's bytes per element.
func replyCost(r Reply) int64 {
	n := 64 + int64(len(r.Str))
	for _, e := range r.Elems {
		n += replyCost(e)
	}
	return n
}

// chunkID is how Lua 5.1 names a chunk in its run-time errors
// (luaO_chunkid, LUA_IDSIZE 60): "=name" as name (59 bytes at most),
// "@file" as file (its last 52 bytes after "..."), and any other name,
// the source itself by default, as [string "its first line"], the line
// cut to 43 bytes and "...". (Its compile errors cut at 80: gopher-lua's
// are worded otherwise anyway.)
func chunkID(name string) string {
	const size = 60
	switch {
	case strings.HasPrefix(name, "="):
		return name[1:min(len(name), size)]
	case strings.HasPrefix(name, "@"):
		file, room := name[1:], size-len(" '...' ")-1
		if len(file) > room {
			return "..." + file[len(file)-room:]
		}
		return file
	}
	line, _, _ := strings.Cut(name, "\n")
	line, _, _ = strings.Cut(line, "\r")
	line = line[:min(len(line), size-len(` [string "..."] `)-1)]
	if len(line) < len(name) {
		return `[string "` + line + `..."]`
	}
	return `[string "` + line + `"]`
}

// guardLoad replaces loadstring and load with ones that compile under
// the bounds EVAL's body has (compile.go): a script compiling a million
// nested braces must not end the process either.
func guardLoad(L *lua.LState) {
	load := func(L *lua.LState, src, name string) int {
		fn, err := compileChunk(src, name)
		if err != nil {
			L.Push(lua.LNil)
			L.Push(lua.LString(err.Error()))
			return 2
		}
		L.Push(L.NewFunctionFromProto(fn))
		return 1
	}
	L.SetGlobal("loadstring", L.NewFunction(func(L *lua.LState) int {
		src := L.CheckString(1)
		return load(L, src, chunkID(L.OptString(2, src)))
	}))
	// load(f) calls f for the source's pieces until it answers nil or "".
	L.SetGlobal("load", L.NewFunction(func(L *lua.LState) int {
		f := L.CheckFunction(1)
		name := chunkID(L.OptString(2, "=(load)"))
		var src strings.Builder
		for {
			L.Push(f)
			L.Call(0, 1)
			piece := L.Get(-1)
			L.Pop(1)
			if piece == lua.LNil {
				break
			}
			if !lua.LVCanConvToString(piece) {
				L.Push(lua.LNil)
				L.Push(lua.LString("reader function must return a string"))
				return 2
			}
			s := lua.LVAsString(piece)
			if s == "" {
				break
			}
			if src.Len()+len(s) > MaxSourceBytes {
				L.Push(lua.LNil)
				L.Push(lua.LString(fmt.Sprintf("%s: script has more than %d bytes", name, MaxSourceBytes)))
				return 2
			}
			src.WriteString(s)
		}
		return load(L, src.String(), name)
	}))
}
