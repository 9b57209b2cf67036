package script

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// FuzzCompileRun: no script body, however malformed, deep or greedy,
// panics the parser, the compiler or a run, or ends the process; a run
// ends within its budget.
func FuzzCompileRun(f *testing.F) {
	for _, seed := range []string{"return 1", "return x(", "local t = {} t[1] = t return t", "error({err='x'})",
		"return redis.call('get', KEYS[1])", "return string.rep('x', 10)", "while true do end", "--[[", "return '\\z'",
		"goto x", "return ...", "return #ARGV .. tostring(1/0)", "setfenv(0, {})", "return getmetatable('').__index",
		// issue 34's hostile inputs: nesting, result counts, one-step allocations, replies
		"return " + strings.Repeat("{", 5000), "return " + strings.Repeat("(", 199) + "1" + strings.Repeat(")", 199),
		"return 'x'" + strings.Repeat("..'x'", 199), "return 1" + strings.Repeat("+1", 3000),
		"return unpack({}, 1, 300000)", "return string.byte(string.rep('x', 300000), 1, -1)",
		"return string.find('x', string.rep('()', 3000))", "return loadstring(string.rep('{', 1e5))",
		"local t = {} t[67108863] = 1", "local t = {} table.insert(t, 67108863, 1)",
		"local s = string.rep('x', 4e6) return s..s..s..s..s", "local t = {1} for i = 1, 23 do t = {t, t} end return t",
		"local t = {} t[1] = t t[2] = t return t", "local t = {} t[1] = t return t",
		// Redis's C libraries: deep, self-holding, exponential, truncated, huge counts
		"local t = {} t[1] = t return cjson.encode(t)", "return cjson.decode(string.rep('[', 5000))",
		"return cjson.decode('{\"a\":[1,2.5e3,\"\\u00e9\",null,true]}')", "return cjson.decode(ARGV[1])",
		"local t = {1} for i = 1, 30 do t = {t, t} end return cjson.encode(t)",
		"return cmsgpack.unpack(cmsgpack.pack(1, 'a', {1, {x = 2}}, 1.5, -2^40))", "return cmsgpack.unpack(ARGV[1])",
		"return cmsgpack.unpack(string.char(0xdd, 255, 255, 255, 255))", "return cmsgpack.unpack_limit(ARGV[1], 2, 1)",
		"local t = {1} for i = 1, 15 do t = {t, t, t, t} end return cmsgpack.pack(t)",
		"return struct.pack('>i4 c0 !8 d s', 1, 'ab', 2.5, 'x')", "return struct.unpack(ARGV[1], 'abcdefgh')",
		"return struct.pack('c99999999999', 'x')", "return {bit.band(-1, 2^40), bit.tohex(-1, -8), bit.rol(1, 33)}",
		"#!lua flags=no-writes\nreturn redis.call('set', 'k', 'v')", "#!lua flags=x\nreturn 1"} {
		f.Add([]byte(seed))
	}
	cfg := DefaultConfig()
	cfg.Timeout = 50 * time.Millisecond
	cfg.MaxMemory = 16 << 20
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := Compile(body)
		if err != nil {
			return
		}
		s.Run(context.Background(), cfg, [][]byte{[]byte("k")}, [][]byte{[]byte("a")}, &echoCaller{})
	})
}

// FuzzDecoders: no input to cjson.decode, cmsgpack.unpack (whole, one
// value, a few) or struct.unpack (as data and as a format) fails the
// state (ErrFailed: a Go panic inside a library), and every run ends with
// a reply.
func FuzzDecoders(f *testing.F) {
	for _, seed := range []string{"", "[1,2,{\"a\":null}]", "\"\\ud83d\\ude00\"", "0x1p3", "-Infinity", "[" + strings.Repeat("[", 2000),
		"\x93\x01\xa1a\x81\xa1b\xc3", "\xdd\xff\xff\xff\xff", "\xdb\x00\x00\x00\x05ab", "\xcb\x3f\xf0\x00\x00\x00\x00\x00\x00",
		"\x81\xc0\x01", "\x81\xce\x03\xff\xff\xff\x01", ">i4 !8 d c0 s", "c2000000000", "bhilTfd", "\x00["} {
		f.Add([]byte(seed))
	}
	cfg := DefaultConfig()
	cfg.Timeout = 200 * time.Millisecond
	cfg.MaxMemory = 16 << 20
	var scripts []*Script
	for _, body := range []string{"return {pcall(cjson.decode, ARGV[1])}", "return {pcall(cmsgpack.unpack, ARGV[1])}",
		"return {pcall(cmsgpack.unpack_limit, ARGV[1], 3, 1)}", "return {pcall(cmsgpack.unpack_one, ARGV[1], 2)}",
		"return {pcall(struct.unpack, ARGV[1], 'abcdefghijklmnopqrstuvwxyz0123456789')}",
		"return {pcall(struct.unpack, 'b h c0 s', ARGV[1])}", "return {pcall(struct.pack, ARGV[1], 1, 2, 'abc', 4)}",
		"return {pcall(struct.size, ARGV[1])}"} {
		s, err := Compile([]byte(body))
		if err != nil {
			f.Fatal(err)
		}
		scripts = append(scripts, s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, s := range scripts {
			if _, err := s.Run(context.Background(), cfg, nil, [][]byte{data}, &echoCaller{}); errors.Is(err, ErrFailed) {
				t.Fatalf("%s on %q: the state failed", s.Body, data)
			}
		}
	})
}
