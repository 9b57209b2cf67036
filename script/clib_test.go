package script

import (
	"errors"
	"runtime"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

// TestCLibsHostile: each hostile input to cjson, cmsgpack, struct and bit
// answers its exact error, or is stopped by the run's memory limit
// before it makes more than that, and the node's process stays up: deep
// and self-holding tables, exponential output, huge declared lengths,
// huge counts, many small values made from a short input.
func TestCLibsHostile(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Timeout = time.Minute // the memory limit, not the clock, must stop these
	cfg.MaxMemory = 64 << 20
	killed := "-ERR Script killed: script grew the heap past its memory limit (limit 64 MiB); nothing it wrote was applied"
	// caught is the error a pcall caught, as the script returns it.
	caught := func(msg string) string { return `"` + msg + `"` }
	pc := func(call string) string {
		return "local ok, e = pcall(function() return " + call + " end) if ok then return 'no error' end return e"
	}
	tests := []struct {
		name, body, want string
		stopped          error
	}{
		{"cjson: a table holding itself", pc("cjson.encode((function() local t = {} t[1] = t return t end)())"),
			caught("user_script:1: Cannot serialise, excessive nesting (1001)"), nil},
		{"cjson: holding itself, depth limit raised", "cjson.encode_max_depth(2^31 - 1) local t = {} t[1] = t " + strings.TrimPrefix(pc("cjson.encode(t)"), ""),
			caught("user_script:1: Cannot serialise, excessive nesting (7998)"), nil},
		{"cjson: an object holding itself, depth limit raised", "cjson.encode_max_depth(2^31 - 1) local t = {} t.x = t " + pc("cjson.encode(t)"),
			caught("user_script:1: Cannot serialise, excessive nesting (4000)"), nil},
		{"cjson: 2^30 leaves", "local t = {1} for i = 1, 30 do t = {t, t} end return #cjson.encode(t)", killed, ErrMemory},
		{"cjson: decode nested a million deep", pc("cjson.decode(string.rep('[', 1e6))"),
			caught("user_script:1: Found too many nested data structures (1001) at character 1001"), nil},
		{"cjson: decode nested, depth limit raised", "cjson.decode_max_depth(2^31 - 1) " + pc("cjson.decode(string.rep('[', 1e6))"),
			caught("user_script:1: Found too many nested data structures (7999) at character 7999"), nil},
		{"cjson: decode 4 million tables", "return #cjson.decode('[' .. string.rep('[],', 2^22) .. '1]')", killed, ErrMemory},
		{"cjson: malformed", pc("cjson.decode('{\"a\":[1,2}')"), caught("user_script:1: Expected comma or array end but found T_OBJ_END at character 10"), nil},
		{"cjson: a string never ended", pc("cjson.decode('\"' .. string.rep('x', 1e6))"), caught("user_script:1: Expected value but found unexpected end of string at character 1000002"), nil},
		{"cmsgpack: 4^15 values from one table", "local t = {1} for i = 1, 15 do t = {t, t, t, t} end return #cmsgpack.pack(t)", killed, ErrMemory},
		{"cmsgpack: a table holding itself packs 16 deep", "local t = {} t[1] = t return #cmsgpack.pack(t)", "17", nil},
		{"cmsgpack: an array of 2^32-1 declared", pc("cmsgpack.unpack(string.char(0xdd, 255, 255, 255, 255))"), caught("user_script:1: Missing bytes in input."), nil},
		{"cmsgpack: a map of 2^32-1 declared", pc("cmsgpack.unpack(string.char(0xdf, 255, 255, 255, 255, 1, 1))"), caught("user_script:1: Missing bytes in input."), nil},
		{"cmsgpack: a string of 4 GiB declared", pc("cmsgpack.unpack(string.char(0xdb, 255, 255, 255, 255, 65))"), caught("user_script:1: Missing bytes in input."), nil},
		{"cmsgpack: nested a million deep", pc("cmsgpack.unpack(string.rep(string.char(0x91), 1e6))"),
			caught("user_script:1: stack overflow (in function mp_decode_to_lua_array)"), nil},
		{"cmsgpack: 10,000 values at the top", pc("cmsgpack.unpack(string.rep(string.char(1), 10000))"),
			caught("user_script:1: stack overflow (too many return values at once; use unpack_one or unpack_limit instead.)"), nil},
		{"cmsgpack: 16 million empty tables", "return #cmsgpack.unpack(string.char(0xdd, 1, 0, 0, 0) .. string.rep(string.char(0x90), 2^24))", killed, ErrMemory},
		{"cmsgpack: a far integer key", "return cmsgpack.unpack(string.char(0x81, 0xce, 3, 255, 255, 255, 1))[67108863]", killed, ErrMemory},
		{"cmsgpack: bin 8 is no format", pc("cmsgpack.unpack(string.char(0xc4, 1, 65))"), caught("user_script:1: Bad data format in input."), nil},
		{"struct: a count of 2 billion", pc("struct.pack('c2000000000', 'x')"), caught("user_script:1: bad argument #3 to 'pack' (string too short)"), nil},
		{"struct: a count past int", pc("struct.pack('c99999999999', 'x')"), caught("user_script:1: integral size overflow"), nil},
		{"struct: an integer of 2 billion bytes", pc("struct.pack('i2000000000', 1)"), caught("user_script:1: integral size 2000000000 is larger than limit of 32"), nil},
		{"struct: unpack of a huge count", pc("struct.unpack('c2000000000', 'x')"), caught("user_script:1: bad argument #2 to 'unpack' (data string too short)"), nil},
		{"struct: 10,000 results", pc("struct.unpack(string.rep('b', 10000), string.rep('x', 10000))"), caught("user_script:1: stack overflow (too many results)"), nil},
		{"struct: an alignment of 2^30", "return #struct.pack('!1073741824 b d', 1, 2)", "16", nil},
		{"struct: c0 of a huge previous size", pc("struct.unpack('b c0', '\\127')"), caught("user_script:1: bad argument #2 to 'unpack' (data string too short)"), nil},
		{"bit: tohex of -2^31 digits", "return bit.tohex(255, -2^31)", `"000000FF"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runtime.GC()
			r, err := runBody(t, cfg, tt.body)
			if got := show(r); got != tt.want {
				t.Fatalf("reply = %.300s, want %.300s", got, tt.want)
			}
			if !errors.Is(err, tt.stopped) || (tt.stopped == nil && err != nil) {
				t.Fatalf("stopped = %v, want %v", err, tt.stopped)
			}
		})
	}
	runtime.GC()
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	if heap := s[0].Value.Uint64(); heap > 256<<20 {
		t.Fatalf("the heap holds %d MiB after the runs", heap>>20)
	}
}

// TestCLibsStatePerRun: what a run sets in cjson, or does to cjson.null,
// is not seen by the next run on the same pooled state.
func TestCLibsStatePerRun(t *testing.T) {
	cfg := DefaultConfig()
	for i, tt := range []struct{ body, want string }{
		{"cjson.encode_number_precision(3) return cjson.encode(1/3)", `"0.333"`},
		{"return cjson.encode(1/3)", `"0.33333333333333"`},
		{"setmetatable(cjson.null, {__index = function() return 'x' end}) return 1", "1"},
		{"return type(getmetatable(cjson.null))", `"nil"`},
	} {
		r, err := runBody(t, cfg, tt.body)
		if got := show(r); got != tt.want || err != nil {
			t.Fatalf("run %d: reply = %s, %v; want %s", i, got, err, tt.want)
		}
	}
}

// TestCLibs: a few of each library's answers, as redis-server 7.0.15
// gives them (resp's TestScriptLibsAgainstRedis compares some 400 with
// it; these need no server).
func TestCLibs(t *testing.T) {
	cfg := DefaultConfig()
	for _, tt := range []struct{ body, want string }{
		{"return cjson.encode({1, 'a/b', {}, {x = 0.1}, cjson.null, 1/3})", `"[1,\"a\\/b\",{},{\"x\":0.1},null,0.33333333333333]"`},
		{"return cjson.encode(string.char(0, 31, 127, 128))", `"\"\\u0000\\u001f\\u007f\x80\""`},
		{"return cjson.decode('{\"a\":[1,2.5,\"\\\\u00e9\"]}').a[3]", `"é"`},
		{"local ok, e = pcall(cjson.decode, '[1,]') return e", `"Expected value but found T_ARR_END at character 4"`},
		{"return cmsgpack.pack(1, -1, 255, -129, 0.5, 1/3, 'ab', {1, 2}, {a = true})",
			`"\x01\xff\xcc\xff\xd1\xff\x7f\xca?\x00\x00\x00\xcb?\xd5UUUUUU\xa2ab\x92\x01\x02\x81\xa1a\xc3"`},
		{"return {cmsgpack.unpack(string.char(0xcf, 255, 255, 255, 255, 255, 255, 255, 255, 0xd0, 0x80))}", "[-1 -128]"},
		{"return {cmsgpack.unpack_one(cmsgpack.pack(7, 8))}", "[1 7]"},
		{"return {bit.tobit(2^32 + 5), bit.band(-1, 0xff), bit.lshift(1, 31), bit.tohex(-1, -4), bit.bswap(0x01020304)}", `[5 255 -2147483648 "FFFF" 67305985]`},
		{"return struct.pack('>i2 <I4 c2 s', -2, 1, 'xyz', 'q')", `"\xff\xfe\x01\x00\x00\x00xyq\x00"`},
		{"return {struct.unpack('>h !4 i', '\\255\\254\\0\\0\\1\\0\\0\\0')}", "[-2 16777216 9]"},
		{"return struct.size('b !4 i d')", "16"},
		{"redis.setresp(3) return {true, false}", "[#t #f]"},
		{"return {true, false}", "[1 nil]"},
		{"return {map = {a = 1}, set = {b = true}}", `%["a" 1]`},
		{"return {set = {b = true}}", `~["b"]`},
		{"return {double = 2.5}", ",2.5"},
	} {
		r, err := runBody(t, cfg, tt.body)
		if got := show(r); got != tt.want || err != nil {
			t.Errorf("%s: reply = %s, %v; want %s", tt.body, got, err, tt.want)
		}
	}
}
