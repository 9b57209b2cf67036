package script

import (
	"math"
	"math/bits"

	lua "github.com/yuin/gopher-lua"
)

// The bit library: LuaBitOp 1.0 as Redis ships it (deps/lua/src/lua_bit.c).
// A number becomes 32 bits as LuaBitOp makes them: the double plus 2^52 +
// 2^51, whose low 32 bits are the number modulo 2^32, rounded to nearest
// even (so 2^32 + 5 is 5, -1 is 0xffffffff, 1.5 is 2, NaN and infinities
// 0); every result is that as a signed 32-bit number.

// bitArg is LuaBitOp's barg: argument n of fn as 32 bits. A string that
// reads as a number is that number; anything else is a type error.
func bitArg(L *lua.LState, n int, fn string) uint32 {
	f, ok := toNumber(L.Get(n))
	b := uint32(math.Float64bits(f + 6755399441055744.0))
	if b == 0 && !ok {
		typeError(L, n, fn, "number")
	}
	return b
}

func bitResult(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

// bitLib is the bit table.
func bitLib(L *lua.LState) *lua.LTable {
	t := L.CreateTable(0, 12)
	fn := func(name string, f func(L *lua.LState, name string) int) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return f(L, name) }))
	}
	fn("tobit", func(L *lua.LState, name string) int { return bitResult(L, bitArg(L, 1, name)) })
	fn("bnot", func(L *lua.LState, name string) int { return bitResult(L, ^bitArg(L, 1, name)) })
	fold := func(op func(a, b uint32) uint32) func(L *lua.LState, name string) int {
		return func(L *lua.LState, name string) int {
			b := bitArg(L, 1, name)
			for i := L.GetTop(); i > 1; i-- {
				b = op(b, bitArg(L, i, name))
			}
			return bitResult(L, b)
		}
	}
	fn("band", fold(func(a, b uint32) uint32 { return a & b }))
	fn("bor", fold(func(a, b uint32) uint32 { return a | b }))
	fn("bxor", fold(func(a, b uint32) uint32 { return a ^ b }))
	shift := func(op func(b uint32, n uint) uint32) func(L *lua.LState, name string) int {
		return func(L *lua.LState, name string) int {
			b := bitArg(L, 1, name)
			n := uint(bitArg(L, 2, name) & 31)
			return bitResult(L, op(b, n))
		}
	}
	fn("lshift", shift(func(b uint32, n uint) uint32 { return b << n }))
	fn("rshift", shift(func(b uint32, n uint) uint32 { return b >> n }))
	fn("arshift", shift(func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) }))
	fn("rol", shift(func(b uint32, n uint) uint32 { return bits.RotateLeft32(b, int(n)) }))
	fn("ror", shift(func(b uint32, n uint) uint32 { return bits.RotateLeft32(b, -int(n)) }))
	fn("bswap", func(L *lua.LState, name string) int { return bitResult(L, bits.ReverseBytes32(bitArg(L, 1, name))) })
	fn("tohex", func(L *lua.LState, name string) int {
		b := bitArg(L, 1, name)
		n := int32(8)
		if L.GetTop() >= 2 {
			n = int32(bitArg(L, 2, name))
		}
		digits := "0123456789abcdef"
		if n < 0 {
			n, digits = -n, "0123456789ABCDEF"
		}
		// -(-2^31) is still negative; Redis's build then gives 8 digits.
		if n < 0 || n > 8 {
			n = 8
		}
		buf := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			buf[i] = digits[b&15]
			b >>= 4
		}
		L.Push(lua.LString(buf))
		return 1
	})
	return t
}
