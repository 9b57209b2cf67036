// Package script runs Redis's Lua scripts (EVAL) on gopher-lua, a Lua 5.1
// VM in pure Go, as Redis 7 runs them: KEYS and ARGV, the redis library
// (call, pcall, error_reply, status_reply, sha1hex, ...), the conversion
// of replies between Redis and Lua, and Redis's error texts ("ERR
// user_script:1: ... script: <sha>, on @user_script:1.").
//
// It owns the VM: which libraries a script gets (base, table, string, math,
// and Redis's cjson, cmsgpack, bit and struct, written after their C code
// for the same bytes and errors: clib.go; no os, io, debug, package or
// coroutines), RESP3's conversions after redis.setresp(3) (resp3.go), a
// script's shebang flags (shebang.go), and the limits that keep a
// script from harming the node it runs on: its source's size, tokens and
// nesting, bounded before it is compiled (compile.go, levels.go); a
// wall-clock budget and a cap on the heap it may grow, checked as it runs
// (budget.go), and charged before any one step makes a large value
// (alloc.go); the values a builtin may answer (results.go); a bounded
// call stack; and its reply's size (reply.go). Nothing a script does ends
// the process: a panic of the VM is an error, and that VM is dropped. It
// never runs a command itself: the caller gives a Caller, which runs one
// command's argv and answers its Reply, and decides what the commands do
// and whether the script's work is kept.
//
// gopher-lua is a patched copy (third_party/gopher-lua): two VM
// instructions make large values out of any hook's sight, and Redis 7's
// read-only environment needs a flag on a table that every write of the
// VM checks (protect.go).
package script
