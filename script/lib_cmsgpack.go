package script

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library: lua-cmsgpack 0.4.0 as Redis ships it
// (deps/lua/src/lua_cmsgpack.c), written here after its C code rather
// than over a Go msgpack codec: what it makes of a Lua value is its own
// (a number that is a whole int64 is the smallest integer, any other a
// float 32 when that is exact, else a float 64; a string is fixstr, str 8,
// 16 or 32, never bin; a table with exactly the keys 1..n is an array,
// any other a map; a table nested 16 deep is nil; a function nil), and so
// is what it reads (a uint 64 past 2^63 reads as negative, bin and ext are
// "Bad data format"), byte for byte.
//
// Bounds: packing a table that holds another many times over makes output
// exponential in its size (16 levels of {t, t, t, t} is 4^16 values), so
// the bytes made are charged to the run's budget as they grow and the
// budget's clock is looked at as values are packed. Unpacking reads a
// declared length as a count of values still to come, making nothing for
// it ahead (a 5-byte array header of 4 billion elements fails at the
// input's end, "Missing bytes in input."), and fails past Lua's C stack
// as lua-cmsgpack does: a value nested 4,000 deep, or 8,000 values at the
// top, is "stack overflow (...)". A table it makes is charged as made.

// cmsgpackMaxNesting is LUACMSGPACK_MAX_NESTING.
const cmsgpackMaxNesting = 16

// tableCost is about what a table costs the heap when made empty.
const tableCost = 128

type mpEncoder struct {
	out []byte
	m   *meter
}

func (e *mpEncoder) grow(n int) {
	if len(e.out)+n > cap(e.out) {
		e.m.step(int64(2 * (len(e.out) + n))) // the doubled buffer
	}
	e.m.step(0)
}

func (e *mpEncoder) put(b ...byte) {
	e.grow(len(b))
	e.out = append(e.out, b...)
}

// header writes a type byte and n as size big-endian bytes.
func (e *mpEncoder) header(t byte, n uint64, size int) {
	var b [9]byte
	b[0] = t
	for i := size; i >= 1; i-- {
		b[i] = byte(n)
		n >>= 8
	}
	e.put(b[:size+1]...)
}

func (e *mpEncoder) bytes(s string) {
	switch n := len(s); {
	case n < 32:
		e.put(0xa0 | byte(n))
	case n <= 0xff:
		e.header(0xd9, uint64(n), 1)
	case n <= 0xffff:
		e.header(0xda, uint64(n), 2)
	default:
		e.header(0xdb, uint64(n), 4)
	}
	e.grow(len(s))
	e.out = append(e.out, s...)
}

func (e *mpEncoder) integer(n int64) {
	switch {
	case n >= 0 && n <= 127:
		e.put(byte(n))
	case n >= 0 && n <= 0xff:
		e.header(0xcc, uint64(n), 1)
	case n >= 0 && n <= 0xffff:
		e.header(0xcd, uint64(n), 2)
	case n >= 0 && n <= 0xffffffff:
		e.header(0xce, uint64(n), 4)
	case n >= 0:
		e.header(0xcf, uint64(n), 8)
	case n >= -32:
		e.put(byte(int8(n)))
	case n >= -128:
		e.header(0xd0, uint64(n), 1)
	case n >= -32768:
		e.header(0xd1, uint64(n), 2)
	case n >= -2147483648:
		e.header(0xd2, uint64(n), 4)
	default:
		e.header(0xd3, uint64(n), 8)
	}
}

func (e *mpEncoder) number(f float64) {
	if !math.IsInf(f, 0) && f >= -9223372036854775808.0 && f < 9223372036854775808.0 && float64(int64(f)) == f {
		e.integer(int64(f))
		return
	}
	if f32 := float32(f); float64(f32) == f {
		e.header(0xca, uint64(math.Float32bits(f32)), 4)
		return
	}
	e.header(0xcb, math.Float64bits(f), 8)
}

// isArray is table_is_an_array: every key a number that is a positive
// C int, and as many keys as the largest.
func isArray(t *lua.LTable) (n int, ok bool) {
	count, max := 0, 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		f, isNum := k.(lua.LNumber)
		if !isNum || f <= 0 || float64(cInt32(float64(f))) != float64(f) {
			return 0, false
		}
		max = int(math.Max(float64(f), float64(max)))
		count++
	}
	return count, max == count
}

func (e *mpEncoder) value(v lua.LValue, level int) {
	e.m.step(0)
	switch v := v.(type) {
	case lua.LString:
		e.bytes(string(v))
	case lua.LBool:
		if v {
			e.put(0xc3)
		} else {
			e.put(0xc2)
		}
	case lua.LNumber:
		e.number(float64(v))
	case *lua.LTable:
		if level == cmsgpackMaxNesting {
			e.put(0xc0)
			return
		}
		if n, ok := isArray(v); ok {
			e.collection(0x90, 0xdc, 0xdd, uint64(n))
			for i := 1; i <= n; i++ {
				e.value(v.RawGetInt(i), level+1)
			}
			return
		}
		n := 0
		for k, _ := v.Next(lua.LNil); k != lua.LNil; k, _ = v.Next(k) {
			n++
		}
		e.collection(0x80, 0xde, 0xdf, uint64(n))
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			e.value(k, level+1)
			e.value(val, level+1)
		}
	default:
		e.put(0xc0)
	}
}

// collection writes an array's or a map's header.
func (e *mpEncoder) collection(fix, b16, b32 byte, n uint64) {
	switch {
	case n <= 15:
		e.put(fix | byte(n))
	case n <= 65535:
		e.header(b16, n, 2)
	default:
		e.header(b32, n, 4)
	}
}

func mpPack(L *lua.LState, r *run) int {
	n := L.GetTop()
	if n == 0 {
		argError(L, 0, "pack", "MessagePack pack needs input.")
	}
	if 2*n > maxCStack {
		argError(L, 0, "pack", "Too many arguments for MessagePack pack.")
	}
	e := &mpEncoder{m: newMeter(L, r)}
	for i := 1; i <= n; i++ {
		e.value(L.Get(i), 0)
	}
	L.Push(lua.LString(e.out))
	return 1
}

// Decoding errors (mp_cur's).
const (
	mpEOF = iota + 1
	mpBadFormat
)

type mpDecoder struct {
	L   *lua.LState
	s   string
	p   int
	err int
	top int // the values on the C function's stack
	m   *meter
}

func (d *mpDecoder) need(n uint64) bool {
	if uint64(len(d.s)-d.p) < n {
		d.err = mpEOF
		return false
	}
	return true
}

// be is size big-endian bytes at at.
func (d *mpDecoder) be(at, size int) uint64 {
	var b [8]byte
	copy(b[8-size:], d.s[at:at+size])
	return binary.BigEndian.Uint64(b[:])
}

// checkStack is luaL_checkstack(L, 1, msg) at the decoder's stack.
func (d *mpDecoder) checkStack(msg string) {
	if d.top+1 > maxCStack {
		cError(d.L, "stack overflow (%s)", msg)
	}
}

// value is mp_decode_to_lua_type: the next value, or nil with d.err set.
func (d *mpDecoder) value() lua.LValue {
	if !d.need(1) {
		return lua.LNil
	}
	d.checkStack("too many return values at once; use unpack_one or unpack_limit instead.")
	d.m.step(16)
	c := d.s[d.p]
	fixed := func(size int) (uint64, bool) {
		if !d.need(uint64(1 + size)) {
			return 0, false
		}
		v := d.be(d.p+1, size)
		d.p += 1 + size
		return v, true
	}
	str := func(size int) lua.LValue {
		if !d.need(uint64(1 + size)) {
			return lua.LNil
		}
		n := d.be(d.p+1, size)
		if size == 4 { // raw 32 consumes its header first
			d.p += 5
			size = -1
		}
		if !d.need(uint64(1+size) + n) {
			return lua.LNil
		}
		start := d.p + 1 + size
		d.p = start + int(n)
		d.m.step(int64(n))
		return lua.LString(d.s[start:d.p])
	}
	num := func(size int, conv func(uint64) float64) lua.LValue {
		v, ok := fixed(size)
		if !ok {
			return lua.LNil
		}
		return lua.LNumber(conv(v))
	}
	unsigned := func(v uint64) float64 { return float64(int64(v)) } // lua_pushunsigned is lua_pushinteger
	switch c {
	case 0xcc:
		return num(1, unsigned)
	case 0xd0:
		return num(1, func(v uint64) float64 { return float64(int8(v)) })
	case 0xcd:
		return num(2, unsigned)
	case 0xd1:
		return num(2, func(v uint64) float64 { return float64(int16(v)) })
	case 0xce:
		return num(4, unsigned)
	case 0xd2:
		return num(4, func(v uint64) float64 { return float64(int32(v)) })
	case 0xcf:
		return num(8, unsigned)
	case 0xd3:
		return num(8, unsigned)
	case 0xc0:
		d.p++
		return lua.LNil
	case 0xc3:
		d.p++
		return lua.LTrue
	case 0xc2:
		d.p++
		return lua.LFalse
	case 0xca:
		return num(4, func(v uint64) float64 { return float64(math.Float32frombits(uint32(v))) })
	case 0xcb:
		return num(8, math.Float64frombits)
	case 0xd9:
		return str(1)
	case 0xda:
		return str(2)
	case 0xdb:
		return str(4)
	case 0xdc, 0xdd, 0xde, 0xdf:
		size := 2
		if c == 0xdd || c == 0xdf {
			size = 4
		}
		n, ok := fixed(size)
		if !ok {
			return lua.LNil
		}
		if c == 0xdc || c == 0xdd {
			return d.array(n)
		}
		return d.hash(n)
	}
	switch {
	case c&0x80 == 0:
		d.p++
		return lua.LNumber(c)
	case c&0xe0 == 0xe0:
		d.p++
		return lua.LNumber(int8(c))
	case c&0xe0 == 0xa0:
		n := uint64(c & 0x1f)
		if !d.need(1 + n) {
			return lua.LNil
		}
		d.p += 1 + int(n)
		return lua.LString(d.s[d.p-int(n) : d.p])
	case c&0xf0 == 0x90:
		d.p++
		return d.array(uint64(c & 0xf))
	case c&0xf0 == 0x80:
		d.p++
		return d.hash(uint64(c & 0xf))
	}
	d.err = mpBadFormat
	return lua.LNil
}

// array is mp_decode_to_lua_array: n values, made one at a time (a
// declared length is no promise the input holds them).
func (d *mpDecoder) array(n uint64) lua.LValue {
	t := d.L.CreateTable(0, 0)
	d.top++ // the table
	d.m.step(tableCost)
	d.checkStack("in function mp_decode_to_lua_array")
	for i := 1; n > 0; n, i = n-1, i+1 {
		d.top++ // its index
		v := d.value()
		d.top--
		if d.err != 0 {
			break
		}
		d.m.step(16)
		d.L.RawSet(t, lua.LNumber(i), v)
	}
	d.top--
	return t
}

// hash is mp_decode_to_lua_hash: n keys and values.
func (d *mpDecoder) hash(n uint64) lua.LValue {
	t := d.L.CreateTable(0, 0)
	d.top++
	d.m.step(tableCost)
	for ; n > 0; n-- {
		k := d.value()
		if d.err != 0 {
			break
		}
		d.top++
		v := d.value()
		d.top--
		if d.err != 0 {
			break
		}
		switch f, ok := k.(lua.LNumber); {
		case k == lua.LNil:
			d.L.Error(lua.LString("table index is nil"), 0)
		case ok && f != f:
			d.L.Error(lua.LString("table index is NaN"), 0)
		}
		d.m.step(32)
		d.L.RawSet(t, k, v) // through the VM's hook: a far integer key is charged before the array grows to it
	}
	d.top--
	return t
}

// mpUnpack is mp_unpack_full: limit values from offset (every value
// when both are 0), with the next offset first unless every value.
func mpUnpack(L *lua.LState, r *run, fn string, limit, offset int64) int {
	s := checkString(L, 1, fn)
	if offset < 0 || limit < 0 {
		cError(L, "Invalid request to unpack with offset of %d and limit of %d.", int32(offset), int32(len(s)))
	} else if offset > int64(len(s)) {
		cError(L, "Start offset %d greater than input length %d.", int32(offset), int32(len(s)))
	}
	all := limit == 0 && offset == 0
	if all {
		limit = math.MaxInt32
	}
	d := &mpDecoder{L: L, s: s, p: int(offset), top: L.GetTop(), m: newMeter(L, r)}
	var vals []lua.LValue
	for cnt := int64(0); d.p < len(s) && cnt < limit; cnt++ {
		v := d.value()
		switch d.err {
		case mpEOF:
			cError(L, "Missing bytes in input.")
		case mpBadFormat:
			cError(L, "Bad data format in input.")
		}
		vals = append(vals, v)
		d.top++
	}
	if !all {
		next := lua.LNumber(d.p)
		if d.p == len(s) {
			next = -1
		}
		L.Push(next)
	}
	for _, v := range vals {
		L.Push(v)
	}
	if all {
		return len(vals)
	}
	return len(vals) + 1
}

// cmsgpackLib is the cmsgpack table.
func cmsgpackLib(L *lua.LState, v *vm) *lua.LTable {
	t := L.CreateTable(0, 8)
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int { return mpPack(L, v.cur) }))
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return mpUnpack(L, v.cur, "unpack", 0, 0) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		offset := optInteger(L, 2, "unpack_one", 0)
		L.SetTop(min(L.GetTop(), 1))
		return mpUnpack(L, v.cur, "unpack_one", 1, offset)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		limit := cInt64(checkNumber(L, 2, "unpack_limit"))
		offset := optInteger(L, 3, "unpack_limit", 0)
		L.SetTop(min(L.GetTop(), 1))
		return mpUnpack(L, v.cur, "unpack_limit", limit, offset)
	}))
	for _, kv := range [][2]string{{"_NAME", "cmsgpack"}, {"_VERSION", "lua-cmsgpack 0.4.0"},
		{"_COPYRIGHT", "Copyright (C) 2012, Salvatore Sanfilippo"}, {"_DESCRIPTION", "MessagePack C implementation for Lua"}} {
		t.RawSetString(kv[0], lua.LString(kv[1]))
	}
	return t
}
