package resp

import (
	"strings"
	"testing"

	"github.com/idemgate/idemgate/internal/memstore"
)

// scriptLibCases are EVALs of Redis's Lua libraries (cjson, cmsgpack,
// bit, struct), the redis library's helpers and shebangs, whose replies
// must be redis-server's byte for byte: numbers of every width and edge,
// strings of every byte, nesting, and every error text. Each is
// {command, body, numkeys, keys and args...}. A case that changes a
// cjson setting sets it back: Redis keeps the settings for later
// scripts. Objects and maps have one key at most: their order is the
// table's, which differs.
func scriptLibCases() [][]string {
	eval := func(body string, rest ...string) []string {
		if len(rest) == 0 {
			rest = []string{"0"}
		}
		return append([]string{"EVAL", body}, rest...)
	}
	// err returns what a call raised, pcall'd from Lua (so with where).
	err := func(call string) []string {
		return eval("local ok, e = pcall(function() return " + call + " end) if ok then return 'no error' end return e")
	}
	allBytes := "local t = {} for i = 0, 255 do t[#t + 1] = string.char(i) end local s = table.concat(t) "
	var cases [][]string
	add := func(c ...[]string) { cases = append(cases, c...) }

	// cjson.encode
	add(eval("return cjson.encode({1, 2, 3})"), eval("return cjson.encode({})"), eval("return cjson.encode({a = 1})"),
		eval("return cjson.encode({a = {b = {c = {}}}})"), eval("return cjson.encode('a/b\"c\\\\d')"),
		eval(allBytes+"return cjson.encode(s)"), eval(allBytes+"return cjson.encode({[s] = s})"),
		eval("return cjson.encode({0.1, 1/3, 1e100, -0, 123456789012345678, 2^53, 1e-7, 3.14159265358979, -1e-300, 100, 1e14, 1e15, 123456.789})"),
		eval("return cjson.encode({true, false, cjson.null, 'x'})"),
		eval("return cjson.encode({[1] = 1, [3] = 3})"), eval("return cjson.encode({[1] = 1, [2] = 2, [20] = 3})"),
		eval("return cjson.encode({[10] = 1})"), eval("return cjson.encode({[11] = 1})"),
		eval("return cjson.encode({[2^31] = 1})"), eval("return cjson.encode({[2^40] = 1})"), eval("return cjson.encode({[0] = 1})"),
		eval("return cjson.encode({[1.5] = 1})"), eval("return cjson.encode({[-1] = 1})"), eval("return cjson.encode({[1/3] = 1})"),
		eval("return cjson.encode(12)"), eval("return cjson.encode(nil)"), eval("return cjson.encode(cjson.null)"),
		eval("local t = {} local c = t for i = 1, 999 do c[1] = {} c = c[1] end return #cjson.encode(t)"),
		err("cjson.encode(1/0)"), err("cjson.encode(-1/0)"), err("cjson.encode(0/0)"), err("cjson.encode({[1/0] = 1})"),
		err("cjson.encode({[true] = 1})"), err("cjson.encode(tostring)"), err("cjson.encode({1, {x = tostring}})"),
		err("cjson.encode()"), err("cjson.encode(1, 2)"),
		eval("local t = {} t[1] = t return cjson.encode(t)"),
		eval("local t = {} local c = t for i = 1, 1000 do c[1] = {} c = c[1] end return cjson.encode(t)"),
		eval("local t = {} t.a = t return cjson.encode(t)"),
		eval("cjson.encode_max_depth(100000) local t = {} t[1] = t local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"),
		eval("cjson.encode_max_depth(100000) local t = {} t.x = t local ok, e = pcall(cjson.encode, t) cjson.encode_max_depth(1000) return e"),
		eval("cjson.encode_max_depth(3) local ok, e = pcall(cjson.encode, {{{{1}}}}) cjson.encode_max_depth(1000) return e"),
		eval("local p = cjson.encode_number_precision(4) local s = cjson.encode({1/3, 123456, 2/3}) cjson.encode_number_precision(14) return {p, s}"),
		err("cjson.encode_number_precision(15)"), err("cjson.encode_number_precision(0)"), err("cjson.encode_max_depth(0)"),
		err("cjson.encode_number_precision('x')"),
		eval("local r = cjson.encode_invalid_numbers(true) local s = cjson.encode({1/0, -1/0, 0/0}) cjson.encode_invalid_numbers(false) return {tostring(r), s}"),
		eval("local r = cjson.encode_invalid_numbers('null') local s = cjson.encode({1/0, -1/0, 0/0}) cjson.encode_invalid_numbers('off') return {r, s}"),
		err("cjson.encode_invalid_numbers('maybe')"), err("cjson.encode_keep_buffer('maybe')"), err("cjson.encode_keep_buffer(1, 2)"),
		eval("return {tostring(cjson.encode_keep_buffer()), tostring(cjson.encode_keep_buffer(false)), tostring(cjson.encode_keep_buffer(true))}"),
		eval("local a, b, c = cjson.encode_sparse_array() return {tostring(a), b, c}"),
		eval("cjson.encode_sparse_array(true) local s = cjson.encode({[1] = 1, [30] = 2}) cjson.encode_sparse_array(false) return #s"),
		eval("cjson.encode_sparse_array(nil, 0) local s = cjson.encode({[1] = 1, [30] = 2}) cjson.encode_sparse_array(nil, 2) return s"),
		err("cjson.encode_sparse_array(false, -1)"), err("cjson.encode_sparse_array(1, 2, 3, 4)"),
		eval("return {cjson._NAME, cjson._VERSION, type(cjson.null), type(cjson.new), cjson.new().encode({1})}"),
	)
	// cjson.decode
	add(eval("return cjson.decode('[1,2,3]')"), eval("return cjson.decode('{\"a\":[1,{\"b\":\"c\"}]}').a[2].b"),
		eval("return cjson.decode('\"\\\\u00e9\\\\ud83d\\\\ude00\\\\u0000\\\\/\\\\b\\\\f\\\\n\\\\r\\\\t\\\\\"\\\\\\\\\"')"),
		eval("return cjson.decode(' \\t\\r\\n 12.5e3 ')"), eval("return tostring(cjson.decode('0.1'))"),
		eval("return tostring(cjson.decode('-0'))"), eval("return tostring(cjson.decode('1e999'))"), eval("return tostring(cjson.decode('-1e999'))"),
		eval("return tostring(cjson.decode('1e-400'))"), eval("return tostring(cjson.decode('123456789012345678901234567890'))"),
		eval("return {cjson.decode('true'), cjson.decode('false'), type(cjson.decode('null')), cjson.decode('null') == cjson.null}"),
		eval("return cjson.decode('[null, 1]')[2]"), eval("return cjson.decode(123)"), eval("return cjson.decode('{}')"),
		eval("return tostring(cjson.decode('01'))"), eval("return tostring(cjson.decode('+1'))"), eval("return tostring(cjson.decode('0x10'))"),
		eval("return tostring(cjson.decode('0x1p4'))"), eval("return tostring(cjson.decode('-0x.8'))"),
		eval("return tostring(cjson.decode('inf'))"), eval("return tostring(cjson.decode('-Infinity'))"),
		eval("return tostring(cjson.decode('[1e5, 1E+2, 2e-1]')[3])"), eval("return cjson.decode('[1]\\0x')"),
		eval("return #cjson.decode('[' .. string.rep('1,', 10000) .. '1]')"),
		eval(allBytes+"return cjson.decode(cjson.encode(s)) == s"),
		eval("return #cjson.decode(string.rep('[', 1000) .. string.rep(']', 1000))"),
		err("cjson.decode(string.rep('[', 1001) .. string.rep(']', 1001))"),
		err("cjson.decode(string.rep('{\"a\":', 1001) .. '1' .. string.rep('}', 1001))"),
		eval("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('[', 10000)) cjson.decode_max_depth(1000) return e"),
		eval("cjson.decode_max_depth(100000) local ok, e = pcall(cjson.decode, string.rep('{\"a\":', 10000)) cjson.decode_max_depth(1000) return e"),
		eval("cjson.decode_max_depth(2) local ok, e = pcall(cjson.decode, '[[[1]]]') cjson.decode_max_depth(1000) return e"),
		eval("cjson.decode_invalid_numbers(false) local r = {} for _, s in ipairs({'01', '+1', '0x10', 'nan', 'inf', '-', '1'}) do local ok, e = pcall(cjson.decode, s) r[#r + 1] = tostring(e) end cjson.decode_invalid_numbers(true) return r"),
	)
	for _, bad := range []string{"", " ", "[1,]", "[1 2]", "{\"a\" 1}", "{1:2}", "{\"a\":1,}", "tru", "nul", "\"abc", "\"\\\\q\"",
		"\"\\\\u12\"", "\"\\\\ud800\"", "\"\\\\ud800\\\\u0041\"", "\"\\\\udc00\"", "[1]x", "-", "--1", ".5", "[", "]", "{", "\\0[", "[\\0",
		"\\f1", "1 2", "nan", "x", "\"\\\\", "\"\\\\u", "\\'x\\'"} {
		add(err("cjson.decode('" + bad + "')"))
	}
	add(err("cjson.decode()"), err("cjson.decode('1', 2)"), err("cjson.decode({})"))

	// cmsgpack
	add(eval("return cmsgpack.pack(0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649, 2^53, -2^63, 2^63, 2^64, -2^64)"),
		eval("return cmsgpack.pack(0.5, 0.1, 1/3, 1/0, -1/0, 0/0, 1e300, -0.0, 1e-45, 3.4028234663852886e38, 2^100)"),
		eval("return cmsgpack.pack('', 'a', string.rep('x', 31), string.rep('x', 32), string.rep('x', 255), string.rep('x', 256))"),
		eval("return cmsgpack.pack(string.rep('x', 65535), string.rep('y', 65536))"),
		eval(allBytes+"return cmsgpack.pack(s)"),
		eval("return cmsgpack.pack({}, {1, 2, 3}, {a = 1}, {[1] = 1, [3] = 3}, {[0] = 1}, {[1.5] = 1}, {[2^31] = 1}, {[true] = false})"),
		eval("local t = {} for i = 1, 15 do t[i] = i end local u = {} for i = 1, 16 do u[i] = i end local v = {} for i = 1, 65536 do v[i] = 0 end return cmsgpack.pack(t, u, v)"),
		eval("local t = {} local c = t for i = 1, 20 do c[1] = {} c = c[1] end return cmsgpack.pack(t)"),
		eval("local t = {} t[1] = t return cmsgpack.pack(t)"),
		eval("return cmsgpack.pack(true, false, nil, tostring, cjson.null)"),
		err("cmsgpack.pack()"), eval("local t = {} for i = 1, 4001 do t[i] = i end local ok, e = pcall(cmsgpack.pack, unpack(t)) return e"),
		eval("local t = {} for i = 1, 4000 do t[i] = i end return #cmsgpack.pack(unpack(t))"),
		eval("return {cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, 2}, {a = {b = 1}}, true, 0.5, -7))}"),
		eval("local t = cmsgpack.unpack(cmsgpack.pack({a = {b = 'c'}})) return t.a.b"),
		eval("return {cmsgpack.unpack(string.char(0xcc, 255, 0xcd, 255, 255, 0xce, 255, 255, 255, 255, 0xcf, 255, 255, 255, 255, 255, 255, 255, 255, 0xcf, 0, 0, 0, 0, 0, 0, 0, 1))}"),
		eval("return {cmsgpack.unpack(string.char(0xd0, 128, 0xd1, 128, 0, 0xd2, 128, 0, 0, 0, 0xd3, 128, 0, 0, 0, 0, 0, 0, 0, 0xd3, 255, 255, 255, 255, 255, 255, 255, 254, 0xe0, 0x7f))}"),
		eval("local a, b, c = cmsgpack.unpack(string.char(0xca, 0x3f, 0xc0, 0, 0, 0xcb, 0x3f, 0xb9, 0x99, 0x99, 0x99, 0x99, 0x99, 0x9a, 0xca, 0x7f, 0x80, 0, 0)) return {tostring(a), tostring(b), tostring(c)}"),
		eval("return {cmsgpack.unpack(string.char(0xd9, 2, 65, 66, 0xda, 0, 1, 67, 0xdb, 0, 0, 0, 1, 68, 0xa1, 69))}"),
		eval("return {cmsgpack.unpack(string.char(0xdc, 0, 2, 1, 2, 0xdd, 0, 0, 0, 1, 3, 0x92, 4, 0xc0))}"),
		eval("return cmsgpack.unpack(string.char(0xde, 0, 1, 0xa1, 97, 1, 0xdf, 0, 0, 0, 0)).a"),
		eval("return {cmsgpack.unpack('')}"), eval("return {cmsgpack.unpack(1)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_one(s), cmsgpack.unpack_one(s, 1), cmsgpack.unpack_one(s, 2)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_one(s, 3)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(s, 2)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(s, 2, 1)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(s, 0, 0)}"),
		eval("local s = cmsgpack.pack(1, 2, 3) return {cmsgpack.unpack_limit(s, 5, 0)}"),
		err("cmsgpack.unpack_one(cmsgpack.pack(1), 5)"), err("cmsgpack.unpack_one(cmsgpack.pack(1), -1)"),
		err("cmsgpack.unpack_limit(cmsgpack.pack(1), -1)"), err("cmsgpack.unpack_limit(cmsgpack.pack(1))"), err("cmsgpack.unpack_one()"),
		err("cmsgpack.unpack()"), err("cmsgpack.unpack({})"),
		eval("return #{cmsgpack.unpack(string.rep(string.char(1), 7999))}"),
		err("cmsgpack.unpack(string.rep(string.char(1), 8000))"),
		err("cmsgpack.unpack(string.rep(string.char(0x91), 3997) .. string.char(1))"),
		err("cmsgpack.unpack(string.rep(string.char(0x91), 3998) .. string.char(1))"),
		err("cmsgpack.unpack(string.rep(string.char(0x81, 1), 2700) .. string.char(1))"),
		err("cmsgpack.unpack(string.rep(string.char(0x81), 2700) .. string.char(1))"),
		err("cmsgpack.unpack(string.rep(string.char(0x91), 1e6))"),
		err("cmsgpack.unpack(string.char(0x81, 0xc0, 1))"), err("cmsgpack.unpack(string.char(0x81, 0xcb, 0xff, 0xf8, 0, 0, 0, 0, 0, 0, 1))"),
		eval("return cmsgpack.unpack(string.char(0x92, 0xc0, 1))[2]"),
	)
	for _, bad := range []string{"0xc1", "0xc4, 1, 65", "0xc7, 1, 1, 1", "0xd4, 1, 1", "0xd8", "0xdd, 255, 255, 255, 255", "0xdf, 255, 255, 255, 255",
		"0xdb, 255, 255, 255, 255, 1", "0xda, 0, 5, 1", "0xd9", "0xcc", "0xcf, 1, 2, 3", "0xa5, 1", "0x95, 1, 2", "0x85, 1, 2",
		"0xdd, 0x7f, 255, 255, 255, 0x90, 0x90", "0xcb, 1", "1, 2, 0xc1"} {
		add(err("cmsgpack.unpack(string.char(" + bad + "))"))
	}
	add(eval("local ok, e = pcall(cmsgpack.unpack, string.char(0xdd, 0x7f, 255, 255, 255) .. string.rep(string.char(0x90), 100000)) return e"),
		eval("return {cmsgpack._NAME, cmsgpack._VERSION, cmsgpack._COPYRIGHT, cmsgpack._DESCRIPTION}"))

	// bit
	add(eval("return {bit.tobit(0xffffffff), bit.tobit(2^32 + 5), bit.tobit(-1), bit.tobit(1.5), bit.tobit(2.5), bit.tobit(-1.5), bit.tobit(2^53), bit.tobit(1e300), bit.tobit(0/0), bit.tobit(1/0), bit.tobit(-2^31), bit.tobit(2^31), bit.tobit('12'), bit.tobit('0x10')}"),
		eval("return {bit.bnot(0), bit.band(0xff, 0x0f, 0x3), bit.bor(1, 2, 4), bit.bxor(-1, 5), bit.band(), bit.band(7)}"),
		eval("return {bit.lshift(1, 31), bit.lshift(1, 32), bit.lshift(1, -1), bit.rshift(-1, 28), bit.rshift(-1, 0), bit.arshift(-256, 4), bit.arshift(2^31, 31), bit.rol(0x12345678, 12), bit.ror(0x12345678, 12), bit.rol(1, 0), bit.ror(1, 33), bit.bswap(0x12345678), bit.bswap(-1)}"),
		eval("return {bit.tohex(255), bit.tohex(-1), bit.tohex(255, 2), bit.tohex(255, -4), bit.tohex(1, 0), bit.tohex(1, 20), bit.tohex('16'), bit.tohex(0x12345678, -8), bit.tohex(2^40 + 1), bit.tohex(255, -2^31), bit.tohex(255, 2^31)}"),
		err("bit.band(1, 'x')"), err("bit.tobit()"), err("bit.tohex(1, nil)"), err("bit.bor({})"), err("bit.lshift(1)"),
		eval("return {bit.tobit(2^52), bit.tobit(2^52 + 0.5), bit.tobit(-2^52 - 1.5), bit.tobit(4503599627370495.5)}"),
	)

	// struct
	add(eval("return struct.pack('>i4', 1)"), eval("return struct.pack('<h', -2)"),
		eval("return struct.pack('bBhHlLiIT', -1, 255, -2, 65535, -3, 4, -5, 6, 7)"),
		eval("return struct.pack('!4 b i b d', 1, 2, 3, 4.5)"), eval("return struct.pack('! b d', 1, 2)"), eval("return struct.pack('!2 b i', 1, 2)"),
		eval("return struct.pack('i16', -1)"), eval("return struct.pack('>I3', 2^24 + 5)"), eval("return struct.pack('i1 i2 i5 i8 i9', 300, 70000, 2^33, -2, 2^60)"),
		eval("return struct.pack('d', 1.5)"), eval("return struct.pack('>f', 0.1)"), eval("return struct.pack('<d >d', 1/3, 1/3)"),
		eval("return struct.pack('c3', 'abcdef')"), eval("return struct.pack('c0', 'abc')"), eval("return struct.pack('s', 'ab')"),
		eval("return struct.pack('xxx')"), eval("return struct.pack('')"), eval("return struct.pack('b\\0b', 1, 2)"),
		eval("return struct.pack('l', 2^63)"), eval("return struct.pack('L', 2^64)"), eval("return struct.pack('L', 2^63 + 2^62)"),
		eval("return struct.pack('L', -1)"), eval("return struct.pack('l', -2^64)"), eval("return struct.pack('B', 256.7)"),
		eval("return struct.pack('i', '12')"), eval("return struct.pack('c2', 5)"),
		err("struct.pack('i33', 1)"), err("struct.pack('z')"), err("struct.pack('!3')"), err("struct.pack('!0')"), err("struct.pack('c5', 'ab')"),
		err("struct.pack('i')"), err("struct.pack('ii', 1)"), err("struct.pack('iii', 1)"), err("struct.pack('c', 1, 2)"),
		err("struct.pack('bbc', 1, 2)"), err("struct.pack('i', 'x')"), err("struct.pack('c99999999999', 'x')"), err("struct.pack('c2147483648', 'x')"),
		err("struct.pack()"), err("struct.pack('s', {})"),
		eval("return {struct.unpack('>i4', struct.pack('>i4', -7))}"),
		eval("return {struct.unpack('bBhH', '\\255\\255\\255\\255\\255\\255')}"),
		eval("return {struct.unpack('s', 'ab\\0cd')}"), eval("return {struct.unpack('b c0', '\\3abcd')}"),
		eval("return {struct.unpack('c2 c0', '3xabcd')}"), eval("return {struct.unpack('i9', string.rep('\\255', 9))}"),
		eval("return {struct.unpack('I9 i16', string.rep('\\128', 25))}"), eval("return {struct.unpack('l L', string.rep('\\255', 16))}"),
		eval("local a, b = struct.unpack('f d', struct.pack('f d', 0.1, 0.1)) return {tostring(a), tostring(b)}"),
		eval("return {struct.unpack('>f <f', struct.pack('>f <f', 1.5, 2.5))}"),
		eval("return {struct.unpack('i', 'abcdefgh', 5)}"), eval("return {struct.unpack('!4 b i', '\\1\\0\\0\\0\\2\\0\\0\\0')}"),
		eval("return {struct.unpack('x x b', '\\1\\2\\3')}"), eval("return {struct.unpack('', 'x')}"),
		err("struct.unpack('i4', 'abc')"), err("struct.unpack('i', 'abcd', 0)"), err("struct.unpack('b', 'x', -1)"),
		err("struct.unpack('s', 'abc')"), err("struct.unpack('c0', 'abc')"), err("struct.unpack('b c0', '\\9abc')"),
		err("struct.unpack('z', 'x')"), err("struct.unpack('b')"), err("struct.unpack('b', 'x', 'y')"),
		err("struct.unpack(string.rep('b', 8000), string.rep('x', 8000))"),
		eval("return select('#', struct.unpack(string.rep('b', 7997), string.rep('x', 8000)))"),
		eval("return {struct.size('i4 d !8 d'), struct.size('bhilT'), struct.size('!4 b d'), struct.size('z'), struct.size(''), struct.size('c5 x')}"),
		err("struct.size('s')"), err("struct.size('c0')"), err("struct.size('?')"), err("struct.size('!3')"), err("struct.size()"),
	)

	// the redis library's helpers
	add(eval("return redis.error_reply(1)"), eval("return redis.error_reply()"), eval("return redis.error_reply('\\nfoo\\r\\n')"),
		eval("return redis.error_reply('-\\nBAR x\\n')"), eval("return redis.error_reply('a\\0b')"), eval("return redis.error_reply('-')"),
		eval("return redis.status_reply()"), eval("return redis.status_reply(5)"), eval("return redis.status_reply('a', 'b')"),
		eval("return redis.sha1hex()"), eval("return redis.sha1hex(1)"), eval("return redis.sha1hex(nil)"), eval("return redis.sha1hex({})"),
		eval("return redis.sha1hex(1.5)"), eval("return redis.sha1hex('a\\0b')"), eval("return redis.sha1hex('a', 'b')"),
		eval("redis.log(redis.LOG_WARNING, 'x', 1, {}) return 1"), eval("return redis.log(1)"), eval("return redis.log('x', 'y')"),
		eval("return redis.log(9, 'y')"), eval("return redis.log(-1, 'y')"), eval("return redis.log('2', 'y')"),
		eval("return redis.setresp(4)"), eval("redis.setresp(2) return 1"), eval("return redis.setresp()"), eval("return redis.setresp('x')"),
		eval("return redis.set_repl(8)"), eval("return redis.set_repl()"), eval("redis.set_repl(redis.REPL_ALL) return 1"),
		eval("return {redis.breakpoint(), redis.debug('x')}"),
		eval("return {redis.LOG_DEBUG, redis.LOG_VERBOSE, redis.LOG_NOTICE, redis.LOG_WARNING, redis.REPL_NONE, redis.REPL_AOF, redis.REPL_SLAVE, redis.REPL_REPLICA, redis.REPL_ALL}"),
	)

	// shebangs
	add(eval("#!lua\nreturn 1"), eval("#!lua flags=no-writes\nreturn redis.call('get', KEYS[1])", "1", "lib:k"),
		eval("#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')", "1", "lib:k"),
		eval("#!lua flags=no-writes\nreturn redis.pcall('set', KEYS[1], 'x')", "1", "lib:k"),
		eval("#!lua\nreturn redis.call('set', KEYS[1], 'x')", "1", "lib:k"),
		eval("#!lua flags=no-writes,allow-oom,allow-stale,no-cluster,allow-cross-slot-keys\nreturn 1"),
		eval("#!lua flags=\nreturn 1"), eval("#!lua   flags=no-writes  \nreturn 2"), eval("#!lua \"flags=no-writes\"\nreturn 3"),
		eval("#!lua flags=bogus\nreturn 1"), eval("#!lua flags=no-writes,,\nreturn 1"), eval("#!lua flags=NO-WRITES\nreturn 1"),
		eval("#!lua name=x\nreturn 1"), eval("#!python\nreturn 1"), eval("#!lua"), eval("#!\nreturn 1"), eval("#!\"lua\nreturn 1"),
		eval("#!lua\nreturn error('boom')"), eval("#!lua\n\nreturn redis.call('nosuchcommand')"),
		eval("#!lua flags=no-writes\nreturn 1", "0"),
		[]string{"EVAL_RO", "#!lua\nreturn 1", "0"}, []string{"EVAL_RO", "#!lua flags=no-writes\nreturn 1", "0"},
		[]string{"EVAL_RO", "return 1", "0"}, []string{"SCRIPT", "LOAD", "#!lua flags=bogus\nreturn 1"},
		[]string{"SCRIPT", "LOAD", "#!lua flags=no-writes\nreturn 1"},
		[]string{"EVALSHA_RO", sha1hex("#!lua flags=no-writes\nreturn 1"), "0"}, []string{"EVALSHA_RO", sha1hex("#!lua\nreturn 1"), "0"},
		[]string{"EVALSHA", sha1hex("#!lua flags=no-writes\nreturn redis.call('set', KEYS[1], 'x')"), "1", "lib:k"},
		[]string{"MULTI"}, []string{"EVAL_RO", "#!lua\nreturn 1", "0"}, []string{"EVAL_RO", "#!lua flags=no-writes\nreturn 2", "0"},
		eval("#!lua flags=no-writes\nreturn redis.pcall('set', KEYS[1], 'x')", "1", "lib:k"), []string{"SET", "lib:k", "y"},
		[]string{"EXEC"}, []string{"GET", "lib:k"},
	)
	// RESP3: a script's own (redis.setresp(3)), what it returns, and a
	// RESP3 client's (HELLO's replies are not compared: they name the
	// server)
	resp3 := [][]string{eval("redis.setresp(3) return redis.call('get', 'lib:none')"),
		eval("redis.setresp(3) return type(redis.call('get', 'lib:none'))"),
		eval("redis.setresp(3) return redis.call('set', 'lib:r3', 'v')"),
		eval("redis.setresp(3) return redis.call('mget', 'lib:r3', 'lib:none', 'lib:r3')"),
		eval("redis.setresp(3) local r = redis.call('ping') return r.ok"),
		eval("redis.setresp(3) return {true, false, 1}"), eval("redis.setresp(3) return true"), eval("redis.setresp(3) return false"),
		eval("redis.setresp(3) redis.setresp(2) return {true, false}"),
		eval("return {true, false}"), eval("return true"), eval("return false"), eval("return nil"),
		eval("return {double = 1.5}"), eval("return {double = 1/3}"), eval("return {double = 1/0}"), eval("return {double = -1/0}"),
		eval("return {double = 0/0}"), eval("return {double = 1e300}"), eval("return {double = 'x'}"),
		eval("return {big_number = '123456789012345678901234567890'}"), eval("return {big_number = '1\\r\\n2'}"),
		eval("return {verbatim_string = {format = 'txt', string = 'hello'}}"), eval("return {verbatim_string = {format = 'mkd', string = ''}}"),
		eval("return {verbatim_string = {format = 'txt'}}"),
		eval("return {map = {a = 1}}"), eval("return {map = {}}"), eval("return {set = {a = true}}"), eval("return {set = {}}"),
		eval("return {map = {a = {set = {b = true}}}}"), eval("return {map = {x = {double = 2.5}}}"),
		eval("return {1, {map = {a = {1, 2}}}, {set = {[5] = true}}}"), eval("return {map = 5}"),
		eval("return {err = 'E x', double = 1}"), eval("return {ok = 'fine', map = {a = 1}}"),
	}
	add(resp3...)
	add([]string{"HELLO", "3"})
	add(resp3...)
	add([]string{"HELLO", "2"})
	// the environment: read-only, and no nonexistent globals (the
	// reply's where and the script's sha are compared too)
	for _, body := range []string{
		"return a", "a = 10", "function f() end", "_G = {}", "redis = function() return 1 end",
		"setmetatable(_G, {})", "local g = getmetatable(_G) g.__index = {}", "getmetatable(_G).__newindex = nil",
		"rawset(_G, 'a', 1)", "rawset(redis, 'call', 1)", "table.insert(redis, 1)", "table.sort(bit)", "table.remove(cjson)",
		"redis.call = function() return 1 end", "cjson.encode = 1", "cmsgpack.pack = 1", "bit.lshift = 1", "struct.pack = 1",
		"string.rep = 1", "math.floor = 1", "table.insert = 1", "redis.LOG_DEBUG = 1",
		"getmetatable('').x = 1", "getmetatable('').__index = {}", "setmetatable(string, {})",
		"loadfile('x')", "dofile('x')", "print('x')", "setfenv(1, {})", "getfenv(1)", "newproxy()", "return _G[1]",
		"return type(rawget(_G, 'a'))", "return type(getmetatable(_G).__index)",
		"local t = {} setmetatable(t, {}) t.x = 1 return t.x", "local s = {} table.insert(s, 'x') return s",
		"return type(_G.redis)", "return redis.call('cluster', 'info')", "return redis.call('cluster', 'reset', 'hard')",
		"return redis.call('cluster', 'foo')", "return redis.call('cluster', 'info', 'x')", "return redis.call('cluster')",
		"return redis.call('xread', 'block', 0, 'streams', 's', '0')",
		"return redis.call('xreadgroup', 'group', 'g', 'c', 'block', 0, 'streams', 's', '>')",
	} {
		add(eval(body))
	}
	add(eval("KEYS[1] = 'x' ARGV[2] = 'y' return {KEYS[1], ARGV[2]}", "1", "k", "a"),
		err("foo"), err("loadstring('a = 1')()"), err("setmetatable(_G, {})"),
		err("loadstring('a = 1', '=' .. string.rep('y', 100))()"), err("loadstring('a = 1', '@' .. string.rep('y', 100))()"),
		err("loadstring(string.rep('x', 100) .. ' = 1')()"), err("loadstring('a = 1\\nb = 2')()"),
		eval("math.randomseed(7) local a = math.random(1000) math.randomseed(7) return a == math.random(1000)"))
	return cases
}

// TestScriptLibsAgainstRedis sends each of scriptLibCases to redis-server
// and to a node, and compares the replies byte for byte.
func TestScriptLibsAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	srv := startServer(t, memstore.New(t), "mem", nil)
	rc, ic := dialRaw(t, redisAddr), dialRaw(t, srv.Addr())
	for _, c := range scriptLibCases() {
		rc.send(array(c...))
		ic.send(array(c...))
		if want, got := rc.replies(1)[0], ic.replies(1)[0]; got != want && c[0] != "HELLO" {
			t.Errorf("%s %q:\n idemgate %q\n redis    %q", c[0], clipString(strings.Join(c[1:], " ")), clipString(got), clipString(want))
		}
	}
}
