package script

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library: Lua CJSON 2.1.0 as Redis ships it
// (deps/lua/src/lua_cjson.c), written here after its C code rather than
// over encoding/json, whose text differs from it everywhere a script can
// see: numbers are printed with %.14g (encode_number_precision), '/' is
// escaped, and so are DEL and the control bytes (\u001f); other bytes
// pass as they are, valid UTF-8 or not; a table with only positive
// integer keys is an array (its holes null) unless too sparse, any other
// (and {}) an object; decoding takes what C's strtod takes (hex, inf,
// nan, a leading '+' or zeros: decode_invalid_numbers is on), stops at a
// NUL byte as at the end, and its errors name the byte where they are
// ("Expected value but found invalid token at character 1").
//
// Differences: an object's keys come in the table's order, which in
// gopher-lua is the order they were set and in Redis's Lua the order of
// its hash (both are arbitrary; decoding and encoding back is the same).
// The cjson.* settings last for the run that makes them (Redis keeps them
// for every later script on the server, until a restart).
//
// Bounds: nesting is bounded as in lua-cjson, at encode_max_depth and
// decode_max_depth (1000 each by default) and by Lua's C stack past
// those (some 8,000 levels); what a call makes is charged to the run's
// budget as it grows (a table that holds another many times over encodes
// exponentially long), and the budget's clock is looked at as it goes.

// jsonConfig is a cjson table's settings (json_config_t).
type jsonConfig struct {
	sparseConvert      bool
	sparseRatio        int
	sparseSafe         int
	encodeMaxDepth     int
	decodeMaxDepth     int
	encodeInvalid      int // 0 off, 1 on, 2 null
	encodePrecision    int
	encodeKeepBuffer   bool
	decodeInvalidNumbs bool
}

var defaultJSONConfig = jsonConfig{sparseRatio: 2, sparseSafe: 10, encodeMaxDepth: 1000, decodeMaxDepth: 1000,
	encodePrecision: 14, encodeKeepBuffer: true, decodeInvalidNumbs: true}

// jsonEscape is lua-cjson's char2escape: "" for a byte that passes.
var jsonEscape = func() [256]string {
	var e [256]string
	for i := 0; i < 32; i++ {
		e[i] = fmt.Sprintf("\\u%04x", i)
	}
	e['\b'], e['\t'], e['\n'], e['\f'], e['\r'] = `\b`, `\t`, `\n`, `\f`, `\r`
	e['"'], e['\\'], e['/'], e[0x7f] = `\"`, `\\`, `\/`, `\u007f`
	return e
}()

type jsonEncoder struct {
	L    *lua.LState
	cfg  *jsonConfig
	out  []byte
	m    *meter
	null lua.LValue
	top  int // the values on the C function's stack
}

func (e *jsonEncoder) grow(n int) {
	if len(e.out)+n > cap(e.out) {
		e.m.step(int64(2 * (len(e.out) + n)))
	}
}

func (e *jsonEncoder) raw(s string) {
	e.grow(len(s))
	e.out = append(e.out, s...)
}

// fail is json_encode_exception.
func (e *jsonEncoder) fail(v lua.LValue, reason string) {
	cError(e.L, "Cannot serialise %s: %s", v.Type().String(), reason)
}

func (e *jsonEncoder) str(s string) {
	e.grow(len(s)*6 + 2)
	e.out = append(e.out, '"')
	for i := 0; i < len(s); i++ {
		if esc := jsonEscape[s[i]]; esc != "" {
			e.out = append(e.out, esc...)
		} else {
			e.out = append(e.out, s[i])
		}
	}
	e.out = append(e.out, '"')
}

func (e *jsonEncoder) number(f float64) {
	switch {
	case e.cfg.encodeInvalid == 0 && (math.IsInf(f, 0) || math.IsNaN(f)):
		e.fail(lua.LNumber(f), "must not be NaN or Inf")
	case e.cfg.encodeInvalid == 1 && math.IsNaN(f):
		e.raw("nan")
		return
	case e.cfg.encodeInvalid == 2 && (math.IsInf(f, 0) || math.IsNaN(f)):
		e.raw("null")
		return
	}
	e.raw(formatG(f, e.cfg.encodePrecision))
}

// formatG is C's %.<prec>g.
func formatG(f float64, prec int) string {
	switch {
	case math.IsInf(f, 0) || math.IsNaN(f):
		return formatLua(f) // C's inf, -inf, nan
	case f == math.Trunc(f) && math.Abs(f) < 1e14 && !(f == 0 && math.Signbit(f)) && (prec == 14 || math.Abs(f) < math.Pow10(prec)):
		return strconv.FormatInt(int64(f), 10) // what %g prints for an integer of no more digits than prec, faster
	}
	return fmt.Sprintf("%.*g", prec, f)
}

// arrayLength is lua_array_length: the array's length, or -1 for an
// object (a key that is not a positive integer, or an array too sparse
// when encode_sparse_array converts).
func (e *jsonEncoder) arrayLength(t *lua.LTable) int {
	var max int32
	items := 0
	for k, _ := t.Next(lua.LNil); k != lua.LNil; k, _ = t.Next(k) {
		f, ok := k.(lua.LNumber)
		if !ok || f == 0 || math.Floor(float64(f)) != float64(f) || f < 1 {
			return -1
		}
		if float64(f) > float64(max) {
			max = cInt32(float64(f)) // C's int: a key past 2^31 makes it INT_MIN
		}
		items++
	}
	c := e.cfg
	if c.sparseRatio > 0 && int64(max) > int64(items)*int64(c.sparseRatio) && int(max) > c.sparseSafe {
		if !c.sparseConvert {
			e.fail(t, "excessively sparse array")
		}
		return -1
	}
	return int(max)
}

func (e *jsonEncoder) value(v lua.LValue, depth int) {
	e.m.step(0)
	switch v := v.(type) {
	case lua.LString:
		e.str(string(v))
	case lua.LNumber:
		e.number(float64(v))
	case lua.LBool:
		if v {
			e.raw("true")
		} else {
			e.raw("false")
		}
	case *lua.LTable:
		depth++
		if depth > e.cfg.encodeMaxDepth || e.top+3 > maxCStack {
			cError(e.L, "Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := e.arrayLength(v); n > 0 {
			e.raw("[")
			e.top++ // the element
			for i := 1; i <= n; i++ {
				if i > 1 {
					e.raw(",")
				}
				e.value(v.RawGetInt(i), depth)
			}
			e.top--
			e.raw("]")
			return
		}
		e.raw("{")
		e.top += 2 // the key and the value
		first := true
		for k, val := v.Next(lua.LNil); k != lua.LNil; k, val = v.Next(k) {
			if !first {
				e.raw(",")
			}
			first = false
			switch k := k.(type) {
			case lua.LNumber:
				e.raw(`"`)
				e.number(float64(k))
				e.raw(`":`)
			case lua.LString:
				e.str(string(k))
				e.raw(":")
			default:
				e.fail(k, "table key must be a number or string")
			}
			e.value(val, depth)
		}
		e.top -= 2
		e.raw("}")
	default:
		if v == lua.LNil || v == e.null {
			e.raw("null")
			return
		}
		e.fail(v, "type not supported")
	}
}

// JSON's tokens (json_token_type_t), named as lua-cjson names them in
// its errors.
const (
	tObjBegin = iota
	tObjEnd
	tArrBegin
	tArrEnd
	tString
	tNumber
	tBoolean
	tNull
	tColon
	tComma
	tEnd
	tWhitespace
	tError
	tUnknown
)

var jsonTokenNames = [...]string{"T_OBJ_BEGIN", "T_OBJ_END", "T_ARR_BEGIN", "T_ARR_END", "T_STRING", "T_NUMBER",
	"T_BOOLEAN", "T_NULL", "T_COLON", "T_COMMA", "T_END", "T_WHITESPACE", "T_ERROR", "T_UNKNOWN"}

// jsonSingle is the token of a byte that is one (plus one; 0 for none).
var jsonSingle = [256]int{'{': tObjBegin + 1, '}': tObjEnd + 1, '[': tArrBegin + 1, ']': tArrEnd + 1, ',': tComma + 1, ':': tColon + 1}

type jsonToken struct {
	typ   int
	index int
	str   string // a string's value, an error's text
	num   float64
	b     bool
}

type jsonDecoder struct {
	L     *lua.LState
	cfg   *jsonConfig
	s     string
	p     int
	depth int
	top   int // the values on the C function's stack
	m     *meter
	null  lua.LValue
	tmp   []byte
}

// at is the byte at i, 0 past the end (the C code reads a C string).
func (d *jsonDecoder) at(i int) byte {
	if i < len(d.s) {
		return d.s[i]
	}
	return 0
}

func (d *jsonDecoder) tokenError(t *jsonToken, msg string) {
	t.typ, t.index, t.str = tError, d.p, msg
}

func (d *jsonDecoder) next(t *jsonToken) {
	for {
		c := d.at(d.p)
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			break
		}
		d.p++
	}
	t.index = d.p
	c := d.at(d.p)
	if typ := jsonSingle[c]; typ != 0 {
		t.typ = typ - 1
		d.p++
		return
	}
	switch {
	case c == 0:
		t.typ = tEnd
	case c == '"':
		d.stringToken(t)
	case c == '-' || isDigit(c):
		if !d.cfg.decodeInvalidNumbs && d.invalidNumber() {
			d.tokenError(t, "invalid number")
			return
		}
		d.numberToken(t)
	case strings.IndexByte("fiInNt+", c) < 0:
		d.tokenError(t, "invalid token")
	case strings.HasPrefix(d.s[d.p:], "true"):
		t.typ, t.b = tBoolean, true
		d.p += 4
	case strings.HasPrefix(d.s[d.p:], "false"):
		t.typ, t.b = tBoolean, false
		d.p += 5
	case strings.HasPrefix(d.s[d.p:], "null"):
		t.typ = tNull
		d.p += 4
	case d.cfg.decodeInvalidNumbs && d.invalidNumber():
		d.numberToken(t)
	default:
		d.tokenError(t, "invalid token")
	}
}

// invalidNumber is json_is_invalid_number: what strtod takes but JSON
// does not (a '+', hex, leading zeros, inf, nan).
func (d *jsonDecoder) invalidNumber() bool {
	p := d.p
	if d.at(p) == '+' {
		return true
	}
	if d.at(p) == '-' {
		p++
	}
	if d.at(p) == '0' {
		c := d.at(p + 1)
		return c|0x20 == 'x' || isDigit(c)
	} else if d.at(p) <= '9' {
		return false
	}
	rest := strings.ToLower(d.s[p:min(p+3, len(d.s))])
	return rest == "inf" || rest == "nan"
}

func (d *jsonDecoder) numberToken(t *jsonToken) {
	f, n := strtod(d.s[d.p:])
	if n == 0 {
		d.tokenError(t, "invalid number")
		return
	}
	t.typ, t.num = tNumber, f
	d.p += n
}

func hexDigit(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c|0x20 >= 'a' && c|0x20 <= 'f':
		return int(c|0x20-'a') + 10
	}
	return -1
}

func (d *jsonDecoder) hex4(at int) int {
	v := 0
	for i := 0; i < 4; i++ {
		h := hexDigit(d.at(at + i))
		if h < 0 {
			return -1
		}
		v = v<<4 | h
	}
	return v
}

// unicodeEscape is json_append_unicode_escape, at a \u.
func (d *jsonDecoder) unicodeEscape() bool {
	cp := d.hex4(d.p + 2)
	if cp < 0 {
		return false
	}
	n := 6
	if cp&0xF800 == 0xD800 {
		if cp&0x400 != 0 || d.at(d.p+6) != '\\' || d.at(d.p+7) != 'u' {
			return false
		}
		low := d.hex4(d.p + 8)
		if low < 0 || low&0xFC00 != 0xDC00 {
			return false
		}
		cp = ((cp&0x3FF)<<10 | low&0x3FF) + 0x10000
		n = 12
	}
	switch {
	case cp <= 0x7F:
		d.tmp = append(d.tmp, byte(cp))
	case cp <= 0x7FF:
		d.tmp = append(d.tmp, byte(cp>>6|0xC0), byte(cp&0x3F|0x80))
	case cp <= 0xFFFF:
		d.tmp = append(d.tmp, byte(cp>>12|0xE0), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	default:
		d.tmp = append(d.tmp, byte(cp>>18|0xF0), byte(cp>>12&0x3F|0x80), byte(cp>>6&0x3F|0x80), byte(cp&0x3F|0x80))
	}
	d.p += n
	return true
}

var jsonUnescape = map[byte]byte{'"': '"', '\\': '\\', '/': '/', 'b': '\b', 't': '\t', 'n': '\n', 'f': '\f', 'r': '\r', 'u': 'u'}

func (d *jsonDecoder) stringToken(t *jsonToken) {
	d.p++
	d.tmp = d.tmp[:0]
	for {
		c := d.at(d.p)
		if c == '"' {
			break
		}
		if c == 0 {
			d.tokenError(t, "unexpected end of string")
			return
		}
		if c == '\\' {
			esc, ok := jsonUnescape[d.at(d.p+1)]
			if esc == 'u' {
				if d.unicodeEscape() {
					continue
				}
				d.tokenError(t, "invalid unicode escape code")
				return
			}
			if !ok {
				d.tokenError(t, "invalid escape code")
				return
			}
			c = esc
			d.p++
		}
		d.tmp = append(d.tmp, c)
		d.p++
	}
	d.p++
	t.typ, t.str = tString, string(d.tmp)
}

func (d *jsonDecoder) fail(want string, t *jsonToken) {
	found := t.str
	if t.typ != tError {
		found = jsonTokenNames[t.typ]
	}
	cError(d.L, "Expected %s but found %s at character %d", want, found, t.index+1)
}

// descend is json_decode_descend: a nesting level more, with slots more
// values on the C stack.
func (d *jsonDecoder) descend(slots int) {
	d.depth++
	if d.depth > d.cfg.decodeMaxDepth || d.top+slots > maxCStack {
		cError(d.L, "Found too many nested data structures (%d) at character %d", d.depth, d.p)
	}
}

func (d *jsonDecoder) value(t *jsonToken) lua.LValue {
	d.m.step(16)
	switch t.typ {
	case tString:
		d.m.step(int64(len(t.str)))
		return lua.LString(t.str)
	case tNumber:
		return lua.LNumber(t.num)
	case tBoolean:
		return lua.LBool(t.b)
	case tNull:
		return d.null
	case tObjBegin:
		return d.object()
	case tArrBegin:
		return d.array()
	}
	d.fail("value", t)
	return nil
}

func (d *jsonDecoder) object() lua.LValue {
	d.descend(3)
	tbl := d.L.CreateTable(0, 0)
	d.m.step(tableCost)
	d.top += 2 // the table, a key
	var t jsonToken
	d.next(&t)
	if t.typ != tObjEnd {
		for {
			if t.typ != tString {
				d.fail("object key string", &t)
			}
			key := t.str
			if d.next(&t); t.typ != tColon {
				d.fail("colon", &t)
			}
			d.next(&t)
			tbl.RawSetString(key, d.value(&t))
			d.m.step(32)
			if d.next(&t); t.typ == tObjEnd {
				break
			}
			if t.typ != tComma {
				d.fail("comma or object end", &t)
			}
			d.next(&t)
		}
	}
	d.top -= 2
	d.depth--
	return tbl
}

func (d *jsonDecoder) array() lua.LValue {
	d.descend(2)
	tbl := d.L.CreateTable(0, 0)
	d.m.step(tableCost)
	d.top++ // the table
	var t jsonToken
	d.next(&t)
	if t.typ != tArrEnd {
		for i := 1; ; i++ {
			tbl.RawSetInt(i, d.value(&t))
			d.m.step(16)
			if d.next(&t); t.typ == tArrEnd {
				break
			}
			if t.typ != tComma {
				d.fail("comma or array end", &t)
			}
			d.next(&t)
		}
	}
	d.top--
	d.depth--
	return tbl
}

// strtod is C's strtod over the start of s (glibc's grammar: a sign;
// inf, infinity, nan, nan(...); hex digits after 0x with an optional
// binary exponent; decimal digits with an optional exponent): the value
// and the bytes read, 0 for none. A value past the double's range is
// infinite, as strtod's HUGE_VAL.
func strtod(s string) (float64, int) {
	at := func(i int) byte {
		if i < len(s) {
			return s[i]
		}
		return 0
	}
	i := 0
	neg := false
	if c := at(0); c == '+' || c == '-' {
		neg, i = c == '-', 1
	}
	sign := func(f float64) float64 {
		if neg {
			return -f
		}
		return f
	}
	fold := strings.ToLower(s[i:min(i+8, len(s))])
	switch {
	case strings.HasPrefix(fold, "infinity"):
		return sign(math.Inf(1)), i + 8
	case strings.HasPrefix(fold, "inf"):
		return sign(math.Inf(1)), i + 3
	case strings.HasPrefix(fold, "nan"):
		j := i + 3
		if at(j) == '(' {
			k := j + 1
			for c := at(k); isDigit(c) || c|0x20 >= 'a' && c|0x20 <= 'z' || c == '_'; c = at(k) {
				k++
			}
			if at(k) == ')' {
				j = k + 1
			}
		}
		return sign(math.NaN()), j
	}
	if at(i) == '0' && at(i+1)|0x20 == 'x' && (hexDigit(at(i+2)) >= 0 || at(i+2) == '.' && hexDigit(at(i+3)) >= 0) {
		j := i + 2
		digits := func() {
			for hexDigit(at(j)) >= 0 {
				j++
			}
		}
		digits()
		if at(j) == '.' {
			j++
			digits()
		}
		mant := s[i+2 : j]
		exp := "p0"
		if at(j)|0x20 == 'p' {
			k := j + 1
			if at(k) == '+' || at(k) == '-' {
				k++
			}
			if isDigit(at(k)) {
				for isDigit(at(k)) {
					k++
				}
				exp, j = s[j:k], k
			}
		}
		f, _ := strconv.ParseFloat("0x"+mant+exp, 64)
		return sign(f), j
	}
	j := i
	nd := 0
	for isDigit(at(j)) {
		j, nd = j+1, nd+1
	}
	if at(j) == '.' {
		j++
		for isDigit(at(j)) {
			j, nd = j+1, nd+1
		}
	}
	if nd == 0 {
		return 0, 0
	}
	if at(j)|0x20 == 'e' {
		k := j + 1
		if at(k) == '+' || at(k) == '-' {
			k++
		}
		if isDigit(at(k)) {
			for isDigit(at(k)) {
				k++
			}
			j = k
		}
	}
	f, _ := strconv.ParseFloat(s[i:j], 64)
	return sign(f), j
}

// cjsonLib is a cjson table over cfg (cjson.new makes another, with its
// own settings).
func cjsonLib(L *lua.LState, v *vm, cfg *jsonConfig) *lua.LTable {
	t := L.CreateTable(0, 16)
	fn := func(name string, f func(L *lua.LState) int) { t.RawSetString(name, L.NewFunction(f)) }
	fn("encode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			argError(L, 1, "encode", "expected 1 argument")
		}
		e := &jsonEncoder{L: L, cfg: cfg, m: newMeter(L, v.cur), null: v.jsonNull, top: 1}
		e.value(L.Get(1), 0)
		L.Push(lua.LString(e.out))
		return 1
	})
	fn("decode", func(L *lua.LState) int {
		if L.GetTop() != 1 {
			argError(L, 1, "decode", "expected 1 argument")
		}
		s := checkString(L, 1, "decode")
		if len(s) >= 2 && (s[0] == 0 || s[1] == 0) {
			cError(L, "JSON parser does not support UTF-16 or UTF-32")
		}
		d := &jsonDecoder{L: L, cfg: cfg, s: s, top: 1, m: newMeter(L, v.cur), null: v.jsonNull}
		var tok jsonToken
		d.next(&tok)
		val := d.value(&tok)
		if d.next(&tok); tok.typ != tEnd {
			d.fail("the end", &tok)
		}
		L.Push(val)
		return 1
	})
	jsonOptions(L, t, cfg)
	fn("new", func(L *lua.LState) int {
		c := defaultJSONConfig
		L.Push(cjsonLib(L, v, &c))
		return 1
	})
	t.RawSetString("null", v.jsonNull)
	t.RawSetString("_NAME", lua.LString("cjson"))
	t.RawSetString("_VERSION", lua.LString("2.1.0"))
	return t
}

// jsonOptions adds cjson's settings functions over cfg: each sets what it is
// given (nil leaves a setting) and answers the settings.
func jsonOptions(L *lua.LState, t *lua.LTable, cfg *jsonConfig) {
	args := func(L *lua.LState, name string, n int) {
		if L.GetTop() > n {
			argError(L, n+1, name, "found too many arguments")
		}
		L.SetTop(n)
	}
	integer := func(L *lua.LState, name string, i int, setting *int, lo, hi int) {
		if L.Get(i) != lua.LNil {
			v := cInt64(checkNumber(L, i, name))
			if v < int64(lo) || v > int64(hi) {
				argError(L, 1, name, fmt.Sprintf("expected integer between %d and %d", lo, hi))
			}
			*setting = int(v)
		}
		L.Push(lua.LNumber(*setting))
	}
	enum := func(L *lua.LState, name string, i int, setting *int, opts []string) {
		if L.Get(i) != lua.LNil {
			if b, ok := L.Get(i).(lua.LBool); ok {
				*setting = 0
				if b {
					*setting = 1
				}
			} else {
				s := checkString(L, i, name)
				found := false
				for j, o := range opts {
					if s == o {
						*setting, found = j, true
					}
				}
				if !found {
					argError(L, i, name, fmt.Sprintf("invalid option '%s'", s))
				}
			}
		}
		if *setting <= 1 {
			L.Push(lua.LBool(*setting == 1))
		} else {
			L.Push(lua.LString(opts[*setting]))
		}
	}
	onOff := []string{"off", "on"}
	boolean := func(L *lua.LState, name string, i int, b *bool) {
		n := 0
		if *b {
			n = 1
		}
		enum(L, name, i, &n, onOff)
		*b = n == 1
	}
	fn := func(name string, f func(L *lua.LState, name string) int) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return f(L, name) }))
	}
	fn("encode_sparse_array", func(L *lua.LState, name string) int {
		args(L, name, 3)
		boolean(L, name, 1, &cfg.sparseConvert)
		integer(L, name, 2, &cfg.sparseRatio, 0, math.MaxInt32)
		integer(L, name, 3, &cfg.sparseSafe, 0, math.MaxInt32)
		return 3
	})
	fn("encode_max_depth", func(L *lua.LState, name string) int {
		args(L, name, 1)
		integer(L, name, 1, &cfg.encodeMaxDepth, 1, math.MaxInt32)
		return 1
	})
	fn("decode_max_depth", func(L *lua.LState, name string) int {
		args(L, name, 1)
		integer(L, name, 1, &cfg.decodeMaxDepth, 1, math.MaxInt32)
		return 1
	})
	fn("encode_number_precision", func(L *lua.LState, name string) int {
		args(L, name, 1)
		integer(L, name, 1, &cfg.encodePrecision, 1, 14)
		return 1
	})
	fn("encode_keep_buffer", func(L *lua.LState, name string) int {
		args(L, name, 1)
		boolean(L, name, 1, &cfg.encodeKeepBuffer)
		return 1
	})
	fn("encode_invalid_numbers", func(L *lua.LState, name string) int {
		args(L, name, 1)
		enum(L, name, 1, &cfg.encodeInvalid, []string{"off", "on", "null"})
		return 1
	})
	fn("decode_invalid_numbers", func(L *lua.LState, name string) int {
		args(L, name, 1)
		boolean(L, name, 1, &cfg.decodeInvalidNumbs)
		return 1
	})
}
