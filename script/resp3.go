package script

import (
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// RESP3 in scripts, as Redis 7 converts it (script_lua.c). After
// redis.setresp(3) a script's commands answer in RESP3, and their replies
// become: a map {map={k=v, ...}}, a set {set={m=true, ...}}, a double
// {double=n}, a boolean true or false, a big number {big_number="..."}, a
// verbatim string {verbatim_string={format="txt", string="..."}}, a null
// nil. Any script may return those tables, whatever it set: they reach
// its client as RESP3's kinds, which a RESP2 client gets as Redis sends
// them (a map flattened, a double as its %.17g text, a boolean 1 or 0).
// A script that set RESP3 returns a boolean as one (else true is 1 and
// false a null).

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// resp3ToLua is RESP3's part of toLua: ok false for RESP2's kinds.
func resp3ToLua(L *lua.LState, r Reply, resp int) (lua.LValue, bool) {
	wrap := func(field string, v lua.LValue) lua.LValue {
		t := L.CreateTable(0, 1)
		t.RawSetString(field, v)
		return t
	}
	switch r.Kind {
	case Nil:
		if resp == 3 {
			return lua.LNil, true
		}
		return nil, false
	case Map, Set:
		inner := L.CreateTable(0, len(r.Elems))
		if r.Kind == Map {
			for i := 0; i+1 < len(r.Elems); i += 2 {
				L.RawSet(inner, toLua(L, r.Elems[i], resp), toLua(L, r.Elems[i+1], resp))
			}
			return wrap("map", inner), true
		}
		for _, e := range r.Elems {
			L.RawSet(inner, toLua(L, e, resp), lua.LTrue)
		}
		return wrap("set", inner), true
	case Double:
		return wrap("double", lua.LNumber(r.Float)), true
	case Bool:
		return lua.LBool(r.Int != 0), true
	case BigNumber:
		return wrap("big_number", lua.LString(r.Str)), true
	case Verbatim:
		v := L.CreateTable(0, 2)
		v.RawSetString("format", lua.LString(r.Format))
		v.RawSetString("string", lua.LString(r.Str))
		return wrap("verbatim_string", v), true
	}
	return nil, false
}

// resp3FromLua is RESP3's part of fromLua, for a table that is no error
// or status: a double, big number, verbatim string, map or set, checked
// in Redis's order; ok false for any other table.
func (c *replyConv) resp3FromLua(t *lua.LTable, depth int) (Reply, bool) {
	if n, ok := t.RawGetString("double").(lua.LNumber); ok {
		return Reply{Kind: Double, Float: float64(n)}, true
	}
	if s, ok := t.RawGetString("big_number").(lua.LString); ok {
		c.room -= int64(len(s))
		return Reply{Kind: BigNumber, Str: strings.NewReplacer("\r", " ", "\n", " ").Replace(string(s))}, true
	}
	if v, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		f, fok := v.RawGetString("format").(lua.LString)
		s, sok := v.RawGetString("string").(lua.LString)
		if fok && sok {
			c.room -= int64(len(s))
			return Reply{Kind: Verbatim, Str: string(s), Format: string(f)}, true
		}
	}
	if m, ok := t.RawGetString("map").(*lua.LTable); ok {
		var elems []Reply
		for k, v := m.Next(lua.LNil); k != lua.LNil && c.room >= 0; k, v = m.Next(k) {
			elems = append(elems, c.fromLua(k, depth+1), c.fromLua(v, depth+1))
		}
		return Reply{Kind: Map, Elems: elems}, true
	}
	if s, ok := t.RawGetString("set").(*lua.LTable); ok {
		var elems []Reply
		for k, _ := s.Next(lua.LNil); k != lua.LNil && c.room >= 0; k, _ = s.Next(k) {
			elems = append(elems, c.fromLua(k, depth+1))
		}
		return Reply{Kind: Set, Elems: elems}, true
	}
	return Reply{}, false
}
