package script

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The struct library: Roberto Ierusalimschy's struct 0.2 as Redis ships
// it (deps/lua/src/lua_struct.c), on x86-64: little-endian by default,
// long and size_t of 8 bytes, alignment at most 8. A format is read as a
// C string (up to its first NUL byte). What pack makes is bounded by its
// arguments: a count repeats nothing (c5 is 5 bytes of one string, which
// must hold them; i5 one 5-byte integer, at most 32), and padding is less
// than 8 bytes an option; a long format makes many, counted by a meter.

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

type structHeader struct {
	little bool
	align  int
}

// structFormat walks a format as the C code does.
type structFormat struct {
	L   *lua.LState
	fn  string
	f   string
	pos int
}

func (s *structFormat) more() bool { return s.pos < len(s.f) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// num is getnum: a decimal count at the format's position, or df.
func (s *structFormat) num(df int) int {
	if s.pos >= len(s.f) || !isDigit(s.f[s.pos]) {
		return df
	}
	a := 0
	for s.pos < len(s.f) && isDigit(s.f[s.pos]) {
		d := int(s.f[s.pos] - '0')
		if a > math.MaxInt32/10 || a*10 > math.MaxInt32-d {
			cError(s.L, "integral size overflow")
		}
		a = a*10 + d
		s.pos++
	}
	return a
}

// size is optsize: the bytes option opt takes.
func (s *structFormat) size(opt byte) int {
	switch opt {
	case 'B', 'b', 'x':
		return 1
	case 'H', 'h':
		return 2
	case 'L', 'l', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'c':
		return s.num(1)
	case 'i', 'I':
		sz := s.num(4)
		if sz > structMaxIntSize {
			cError(s.L, "integral size %d is larger than limit of %d", sz, structMaxIntSize)
		}
		return sz
	}
	return 0
}

// toAlign is gettoalign: the padding before an option of size at len.
func toAlign(n int, h *structHeader, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	size = min(size, h.align)
	return (size - (n & (size - 1))) & (size - 1)
}

// control is controloptions: endianness, alignment, or an error.
func (s *structFormat) control(opt byte, h *structHeader) {
	switch opt {
	case ' ':
	case '>':
		h.little = false
	case '<':
		h.little = true
	case '!':
		a := s.num(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			cError(s.L, "alignment %d is not a power of 2", a)
		}
		h.align = a
	default:
		argError(s.L, 1, s.fn, fmt.Sprintf("invalid format option '%c'", opt))
	}
}

func newStructFormat(L *lua.LState, fn string) (*structFormat, structHeader) {
	f := checkString(L, 1, fn)
	if i := strings.IndexByte(f, 0); i >= 0 {
		f = f[:i]
	}
	return &structFormat{L: L, fn: fn, f: f}, structHeader{little: true, align: 1}
}

// putInt is putinteger: n as size bytes (C's casts of a double to long
// or unsigned long, as x86-64 makes them).
func putInt(out []byte, n float64, little bool, size int) []byte {
	var v uint64
	if n < 0 {
		v = uint64(cInt64(n))
	} else {
		v = cUint64(n)
	}
	buf := make([]byte, size)
	for i := 0; i < size; i++ {
		j := size - 1 - i
		if little {
			j = i
		}
		buf[j] = byte(v)
		v >>= 8
	}
	return append(out, buf...)
}

// cUint64 is C's (unsigned long) cast of a non-negative double as GCC
// makes it on x86-64: below 2^63 a signed conversion, above it the
// signed conversion of n - 2^63 with the top bit flipped (0 past 2^64).
func cUint64(n float64) uint64 {
	if n < 9223372036854775808.0 {
		return uint64(cInt64(n))
	}
	return uint64(cInt64(n-9223372036854775808.0)) ^ (1 << 63)
}

func structPack(L *lua.LState, r *run) int {
	const fn = "pack"
	s, h := newStructFormat(L, fn)
	L.Push(lua.LNil) // the C code's mark after the arguments: a missing one is "got nil", the next "no value"
	arg := 2
	var out []byte
	m := newMeter(L, r)
	made := 0
	for s.more() {
		opt := s.f[s.pos]
		s.pos++
		size := s.size(opt)
		pad := toAlign(len(out), &h, opt, size)
		m.step(int64(len(out) - made)) // what the last option made
		made = len(out)
		out = append(out, make([]byte, pad)...)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			out = putInt(out, checkNumber(L, arg, fn), h.little, size)
			arg++
		case 'x':
			out = append(out, 0)
		case 'f':
			b := math.Float32bits(float32(checkNumber(L, arg, fn)))
			arg++
			out = appendUint(out, uint64(b), 4, h.little)
		case 'd':
			b := math.Float64bits(checkNumber(L, arg, fn))
			arg++
			out = appendUint(out, b, 8, h.little)
		case 'c', 's':
			str := checkString(L, arg, fn)
			arg++
			if size == 0 {
				size = len(str)
			}
			if len(str) < size {
				argError(L, arg, fn, "string too short")
			}
			out = append(out, str[:size]...)
			if opt == 's' {
				out = append(out, 0)
			}
		default:
			s.control(opt, &h)
		}
	}
	L.Push(lua.LString(out))
	return 1
}

func appendUint(out []byte, v uint64, size int, little bool) []byte {
	var b [8]byte
	if little {
		binary.LittleEndian.PutUint64(b[:], v)
		return append(out, b[:size]...)
	}
	binary.BigEndian.PutUint64(b[:], v)
	return append(out, b[8-size:]...)
}

// getInt is getinteger.
func getInt(b string, little, signed bool, size int) float64 {
	var l uint64
	for i := 0; i < size; i++ {
		j := i
		if little {
			j = size - 1 - i
		}
		l = l<<8 | uint64(b[j])
	}
	if !signed {
		return float64(l)
	}
	mask := ^uint64(0) << uint((size*8-1)&63) // x86's shift takes the count modulo 64
	if l&mask != 0 {
		l |= mask
	}
	return float64(int64(l))
}

func structUnpack(L *lua.LState) int {
	const fn = "unpack"
	s, h := newStructFormat(L, fn)
	data := checkString(L, 2, fn)
	ld := uint64(len(data))
	pos := uint64(optInteger(L, 3, fn, 1))
	if pos == 0 {
		argError(L, 3, fn, "offset must be 1 or greater")
	}
	pos--
	top := L.GetTop()
	var vals []lua.LValue
	for s.more() {
		opt := s.f[s.pos]
		s.pos++
		size := uint64(s.size(opt))
		pos += uint64(toAlign(int(pos), &h, opt, int(size)))
		if !(size <= ld && pos <= ld-size) {
			argError(L, 2, fn, "data string too short")
		}
		if top+len(vals)+2 > maxCStack {
			cError(L, "stack overflow (too many results)")
		}
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			vals = append(vals, lua.LNumber(getInt(data[pos:pos+size], h.little, opt >= 'a', int(size))))
		case 'x':
		case 'f':
			v := binary.LittleEndian.Uint32([]byte(data[pos : pos+4]))
			if !h.little {
				v = binary.BigEndian.Uint32([]byte(data[pos : pos+4]))
			}
			vals = append(vals, lua.LNumber(math.Float32frombits(v)))
		case 'd':
			v := binary.LittleEndian.Uint64([]byte(data[pos : pos+8]))
			if !h.little {
				v = binary.BigEndian.Uint64([]byte(data[pos : pos+8]))
			}
			vals = append(vals, lua.LNumber(math.Float64frombits(v)))
		case 'c':
			if size == 0 {
				var prev float64
				ok := false
				if len(vals) > 0 {
					prev, ok = toNumber(vals[len(vals)-1])
				}
				if !ok {
					cError(L, "format 'c0' needs a previous size")
				}
				size = cUint64Size(prev)
				vals = vals[:len(vals)-1]
				if !(size <= ld && pos <= ld-size) {
					argError(L, 2, fn, "data string too short")
				}
			}
			vals = append(vals, lua.LString(data[pos:pos+size]))
		case 's':
			e := strings.IndexByte(data[pos:], 0)
			if e < 0 {
				cError(L, "unfinished string in data")
			}
			size = uint64(e) + 1
			vals = append(vals, lua.LString(data[pos:pos+uint64(e)]))
		default:
			s.control(opt, &h)
		}
		pos += size
	}
	for _, v := range vals {
		L.Push(v)
	}
	L.Push(lua.LNumber(float64(int64(pos + 1))))
	return len(vals) + 1
}

// cUint64Size is C's (size_t) cast of a double.
func cUint64Size(f float64) uint64 {
	if f < 0 {
		return uint64(cInt64(f))
	}
	return cUint64(f)
}

func structSize(L *lua.LState) int {
	const fn = "size"
	s, h := newStructFormat(L, fn)
	pos := 0
	for s.more() {
		opt := s.f[s.pos]
		s.pos++
		size := s.size(opt)
		pos += toAlign(pos, &h, opt, size)
		if opt == 's' {
			argError(L, 1, fn, "option 's' has no fixed size")
		} else if opt == 'c' && size == 0 {
			argError(L, 1, fn, "option 'c0' has no fixed size")
		}
		if !isAlnum(opt) {
			s.control(opt, &h)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}

func isAlnum(c byte) bool {
	return isDigit(c) || (c|0x20 >= 'a' && c|0x20 <= 'z')
}

// structLib is the struct table.
func structLib(L *lua.LState, v *vm) *lua.LTable {
	t := L.CreateTable(0, 3)
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int { return structPack(L, v.cur) }))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}
