package resp

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// groupStreams are command streams of the consumer group commands whose
// replies must be Redis 7.0's ("{k}" is the stream's key prefix), every
// error included: XGROUP's subcommands and their order of checks,
// XREADGROUP's ">" and history, NOACK, COUNT, several keys, XACK,
// XPENDING's forms, XCLAIM's options, XAUTOCLAIM's cursor and deleted
// ids, XINFO GROUPS, CONSUMERS and STREAM FULL, wrong kinds, MULTI and
// scripts. Times differ between two servers: idle times, seen times and
// delivery times are masked (maskGroupTimes), as Redis's own tests do.
var groupStreams = [][][]string{
	// XGROUP: subcommands, arity, options, the key's and the group's checks before the id's
	{{"XGROUP", "FOO", "{k}s", "g"}, {"XGROUP", "CREATE", "{k}s"}, {"XGROUP", "CREATE", "{k}s", "g"}, {"XGROUP", "CREATE", "{k}s", "g", "0"},
		{"XGROUP", "CREATE", "{k}s", "g", "bad"}, {"XGROUP", "CREATE", "{k}s", "g", "bad", "MKSTREAM"}, {"EXISTS", "{k}s"},
		{"XGROUP", "CREATE", "{k}s", "g", "0", "MKSTREAM"}, {"TYPE", "{k}s"}, {"XLEN", "{k}s"}, {"XGROUP", "CREATE", "{k}s", "g", "0", "MKSTREAM"},
		{"XGROUP", "CREATE", "{k}s", "g2", "bad"}, {"XGROUP", "CREATE", "{k}s", "g2", "-"}, {"XGROUP", "CREATE", "{k}s", "g2", "+"},
		{"XGROUP", "CREATE", "{k}s", "g3", "0", "ENTRIESREAD", "-2"}, {"XGROUP", "CREATE", "{k}s", "g3", "0", "ENTRIESREAD", "x"},
		{"XGROUP", "CREATE", "{k}s", "g3", "0", "ENTRIESREAD"}, {"XGROUP", "CREATE", "{k}s", "g3", "0", "foo"},
		{"XGROUP", "CREATE", "{k}s", "g3", "0", "ENTRIESREAD", "5"}, {"XGROUP", "CREATE", "{k}s", "g4", "3-5", "ENTRIESREAD", "-1", "MKSTREAM"},
		{"XGROUP", "CREATE", "{k}s", "g5", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"},
		{"XGROUP", "CREATE", "{k}new", "g5", "0", "MKSTREAM", "MKSTREAM", "MKSTREAM", "MKSTREAM"}, {"EXISTS", "{k}new"},
		{"XGROUP", "CREATE", "{k}s", "g6", "$"}, {"XGROUP", "CREATE", "{k}s", "", "0"}, {"XINFO", "GROUPS", "{k}s"},
		{"XGROUP", "SETID", "{k}s", "nog", "0"}, {"XGROUP", "SETID", "{k}s", "nog", "bad"}, {"XGROUP", "SETID", "{k}s", "g", "bad"},
		{"XGROUP", "SETID", "{k}s", "g", "-"}, {"XGROUP", "SETID", "{k}s", "g", "+"}, {"XGROUP", "SETID", "{k}s", "g2", "7-7", "ENTRIESREAD", "3"},
		{"XGROUP", "SETID", "{k}s", "g", "1", "ENTRIESREAD", "5", "extra"}, {"XGROUP", "SETID", "{k}s", "g", "1", "MKSTREAM"},
		{"XGROUP", "SETID", "{k}none", "g", "0"}, {"XGROUP", "SETID", "{k}s", "g", "$"}, {"XINFO", "GROUPS", "{k}s"},
		{"XGROUP", "DESTROY", "{k}s", "g", "x"}, {"XGROUP", "DESTROY", "{k}s", "nog"}, {"XGROUP", "DESTROY", "{k}none", "g"},
		{"XGROUP", "DESTROY", "{k}s", "g6"}, {"XGROUP", "HELP", "x"}, {"XGROUP", "HELP"}, {"XGROUP", "help"},
		{"XGROUP", "CREATECONSUMER", "{k}s", "nog", "c"}, {"XGROUP", "CREATECONSUMER", "{k}none", "g", "c"}, {"XGROUP", "CREATECONSUMER", "{k}s", "g", "c"},
		{"XGROUP", "CREATECONSUMER", "{k}s", "g", "c"}, {"XGROUP", "CREATECONSUMER", "{k}s", "g", ""}, {"XGROUP", "CREATECONSUMER", "{k}s", "g"},
		{"XGROUP", "DELCONSUMER", "{k}s", "g", "nobody"}, {"XGROUP", "DELCONSUMER", "{k}s", "nog", "c"}, {"XGROUP", "DELCONSUMER", "{k}s", "g", "c"},
		{"XINFO", "GROUPS", "{k}s"}, {"XINFO", "STREAM", "{k}s"}, {"XGROUP"}},
	// XREADGROUP: ">", COUNT, history, NOACK, the consumer made, errors in Redis's order
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "b", "2"}, {"XADD", "{k}s", "3-1", "c", "3", "d", "4"},
		{"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "alice", "COUNT", "1", "STREAMS", "{k}s", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", ">"},
		{"XREADGROUP", "GROUP", "g", "alice", "STREAMS", "{k}s", "0"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "0"},
		{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "1", "STREAMS", "{k}s", "2-1"}, {"XREADGROUP", "GROUP", "g", "carol", "STREAMS", "{k}s", "0"},
		{"XREADGROUP", "GROUP", "g", "dave", "STREAMS", "{k}s", ">"}, {"XINFO", "CONSUMERS", "{k}s", "g"},
		{"XDEL", "{k}s", "2-1"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "0"}, {"XPENDING", "{k}s", "g"},
		{"XADD", "{k}s", "4-1", "e", "5"}, {"XREADGROUP", "GROUP", "g", "erin", "NOACK", "STREAMS", "{k}s", ">"}, {"XPENDING", "{k}s", "g"},
		{"XREADGROUP", "GROUP", "g", "erin", "STREAMS", "{k}s", "0"}, {"XINFO", "GROUPS", "{k}s"},
		{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "$"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "bad"},
		{"XREADGROUP", "GROUP", "nog", "bob", "STREAMS", "{k}s", "bad"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}none", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "{k}none", ">", "$"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "{k}none", "$", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", ">", "x"},
		{"XREADGROUP", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "{k}s", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "COUNT", "x", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "COUNT", "-5", "STREAMS", "{k}s", "0"},
		{"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "x", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "-1", "STREAMS", "{k}s", ">"},
		{"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "10", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "BLOCK", "10", "STREAMS", "{k}s", "0"},
		{"XREADGROUP", "GROUP", "g", "bob", "BOGUS", "STREAMS", "{k}s", ">"}, {"XREAD", "GROUP", "g", "bob", "STREAMS", "{k}s", ">"},
		{"XREAD", "NOACK", "STREAMS", "{k}s", "0"}, {"XREAD", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "bob", "STREAMS", "{k}s", "18446744073709551615-18446744073709551615"}},
	// several keys; a key twice; the group's last id and entries read
	{{"XADD", "{k}a", "1-1", "f", "1"}, {"XADD", "{k}a", "2-1", "f", "2"}, {"XADD", "{k}b", "5-1", "g", "5"},
		{"XGROUP", "CREATE", "{k}a", "g", "0"}, {"XGROUP", "CREATE", "{k}b", "g", "$"}, {"XGROUP", "CREATE", "{k}c", "g", "0", "MKSTREAM"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{k}a", "{k}b", "{k}c", ">", ">", ">"}, {"XADD", "{k}b", "6-1", "g", "6"},
		{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{k}b", "{k}a", ">", "0"}, {"XREADGROUP", "GROUP", "g", "c2", "COUNT", "1", "STREAMS", "{k}a", "{k}a", "0", "0"},
		{"XREADGROUP", "GROUP", "g", "c2", "STREAMS", "{k}a", "{k}a", ">", ">"}, {"XINFO", "GROUPS", "{k}a"}, {"XINFO", "GROUPS", "{k}b"},
		{"XINFO", "GROUPS", "{k}c"}, {"XGROUP", "SETID", "{k}a", "g", "0"}, {"XINFO", "GROUPS", "{k}a"},
		{"XREADGROUP", "GROUP", "g", "c3", "COUNT", "1", "STREAMS", "{k}a", ">"}, {"XPENDING", "{k}a", "g"}, {"XINFO", "GROUPS", "{k}a"},
		{"XADD", "{k}a", "3-1", "f", "3"}, {"XDEL", "{k}a", "2-1"}, {"XINFO", "GROUPS", "{k}a"}, {"XREADGROUP", "GROUP", "g", "c3", "STREAMS", "{k}a", ">"},
		{"XINFO", "GROUPS", "{k}a"}, {"XGROUP", "SETID", "{k}a", "g", "0", "ENTRIESREAD", "0"}, {"XINFO", "GROUPS", "{k}a"},
		{"XTRIM", "{k}a", "MAXLEN", "0"}, {"XINFO", "GROUPS", "{k}a"}, {"XREADGROUP", "GROUP", "g", "c3", "STREAMS", "{k}a", "0"}},
	// XACK
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XGROUP", "CREATE", "{k}s", "g", "0"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}s", ">"}, {"XACK", "{k}s", "g", "1-1", "1-1", "9-9"}, {"XACK", "{k}s", "g", "bad"},
		{"XACK", "{k}s", "g", "2-1", "bad"}, {"XPENDING", "{k}s", "g"}, {"XACK", "{k}s", "nog", "bad"}, {"XACK", "{k}none", "g", "bad"},
		{"XACK", "{k}s", "g", "2", "3-1"}, {"XPENDING", "{k}s", "g"}, {"XINFO", "CONSUMERS", "{k}s", "g"}, {"XACK", "{k}s", "g"},
		{"XACK", "{k}s", "g", "-"}, {"XACK", "{k}s", "g", "+"}},
	// XPENDING: summary, extended, IDLE, consumer, bounds, errors in Redis's order
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XADD", "{k}s", "4-1", "a", "4"},
		{"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XPENDING", "{k}s", "g"}, {"XPENDING", "{k}s", "g", "-", "+", "10"},
		{"XREADGROUP", "GROUP", "g", "zed", "COUNT", "2", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g", "amy", "STREAMS", "{k}s", ">"},
		{"XPENDING", "{k}s", "g"}, {"XPENDING", "{k}s", "g", "-", "+", "10"}, {"XPENDING", "{k}s", "g", "-", "+", "2"},
		{"XPENDING", "{k}s", "g", "(1-1", "(4-1", "10"}, {"XPENDING", "{k}s", "g", "2", "3", "10"}, {"XPENDING", "{k}s", "g", "-", "+", "0"},
		{"XPENDING", "{k}s", "g", "-", "+", "-1"}, {"XPENDING", "{k}s", "g", "-", "+", "10", "amy"}, {"XPENDING", "{k}s", "g", "-", "+", "1", "zed"},
		{"XPENDING", "{k}s", "g", "-", "+", "10", "nobody"}, {"XPENDING", "{k}s", "g", "IDLE", "0", "-", "+", "10"},
		{"XPENDING", "{k}s", "g", "IDLE", "1000000", "-", "+", "10"}, {"XPENDING", "{k}s", "g", "IDLE", "1000000", "-", "+", "10", "amy"},
		{"XPENDING", "{k}s", "g", "IDLE", "-5", "-", "+", "10"}, {"XPENDING", "{k}s", "g", "IDLE", "x", "-", "+", "10"},
		{"XPENDING", "{k}s", "g", "IDLE", "5", "-", "+"}, {"XPENDING", "{k}s", "g", "-"}, {"XPENDING", "{k}s", "g", "-", "+"},
		{"XPENDING", "{k}s", "g", "-", "+", "x"}, {"XPENDING", "{k}s", "g", "x", "+", "1"}, {"XPENDING", "{k}s", "g", "-", "x", "1"},
		{"XPENDING", "{k}s", "g", "(18446744073709551615-18446744073709551615", "+", "1"}, {"XPENDING", "{k}s", "g", "-", "(0-0", "1"},
		{"XPENDING", "{k}s", "nog"}, {"XPENDING", "{k}none", "g"}, {"XPENDING", "{k}none", "g", "x", "+", "1"}, {"XPENDING", "{k}s", "nog", "-", "+", "1"},
		{"XPENDING", "{k}s", "g", "-", "+", "10", "amy", "extra"}, {"XPENDING", "{k}s", "g", "IDLE", "1", "-", "+", "10", "amy", "extra"},
		{"XPENDING", "{k}s"}},
	// XCLAIM: options, FORCE, JUSTID, RETRYCOUNT, LASTID, deleted entries, errors
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XADD", "{k}s", "4-1", "a", "4"},
		{"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c1", "COUNT", "3", "STREAMS", "{k}s", ">"},
		{"XCLAIM", "{k}s", "g", "c2", "0", "1-1"}, {"XPENDING", "{k}s", "g", "-", "+", "10"}, {"XCLAIM", "{k}s", "g", "c2", "3600000", "2-1"},
		{"XCLAIM", "{k}s", "g", "c2", "0", "2-1", "JUSTID"}, {"XPENDING", "{k}s", "g", "-", "+", "10"},
		{"XCLAIM", "{k}s", "g", "c3", "0", "3-1", "RETRYCOUNT", "7", "IDLE", "5000000"}, {"XPENDING", "{k}s", "g", "-", "+", "10"},
		{"XCLAIM", "{k}s", "g", "c3", "0", "4-1"}, {"XCLAIM", "{k}s", "g", "c3", "0", "4-1", "FORCE"}, {"XPENDING", "{k}s", "g", "-", "+", "10"},
		{"XCLAIM", "{k}s", "g", "c3", "0", "9-9", "FORCE"}, {"XCLAIM", "{k}s", "g", "c3", "0", "1-1", "2-1", "LASTID", "9-9", "JUSTID"},
		{"XINFO", "GROUPS", "{k}s"}, {"XCLAIM", "{k}s", "g", "c3", "0", "1-1", "LASTID", "1-1"}, {"XINFO", "GROUPS", "{k}s"},
		{"XCLAIM", "{k}s", "g", "c3", "0", "1-1", "TIME", "1", "JUSTID"}, {"XCLAIM", "{k}s", "g", "c3", "0", "1-1", "IDLE", "-5", "JUSTID"},
		{"XCLAIM", "{k}s", "g", "c3", "0", "1-1", "TIME", "99999999999999", "JUSTID"}, {"XPENDING", "{k}s", "g", "-", "+", "10", "c3"},
		{"XDEL", "{k}s", "1-1"}, {"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "2-1"}, {"XPENDING", "{k}s", "g"},
		{"XCLAIM", "{k}s", "g", "c4", "x", "1-1"}, {"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "IDLE", "x"}, {"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "TIME", "x"},
		{"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "RETRYCOUNT", "x"}, {"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "LASTID", "x"},
		{"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "BOGUS"}, {"XCLAIM", "{k}s", "g", "c4", "0", "1-1", "IDLE"}, {"XCLAIM", "{k}s", "g", "c4", "0", "FORCE"},
		{"XCLAIM", "{k}s", "g", "c4", "0", "JUSTID", "2-1"}, {"XCLAIM", "{k}s", "nog", "c4", "x", "bad"}, {"XCLAIM", "{k}none", "g", "c4", "0", "1-1"},
		{"XCLAIM", "{k}s", "g", "c4", "0"}, {"XINFO", "CONSUMERS", "{k}s", "g"}},
	// XAUTOCLAIM: cursor, COUNT, JUSTID, deleted ids, errors
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XADD", "{k}s", "4-1", "a", "4"},
		{"XADD", "{k}s", "5-1", "a", "5"}, {"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c1", "STREAMS", "{k}s", ">"},
		{"XAUTOCLAIM", "{k}s", "g", "c2", "0", "0", "COUNT", "2"}, {"XAUTOCLAIM", "{k}s", "g", "c2", "0", "3-1", "COUNT", "2", "JUSTID"},
		{"XAUTOCLAIM", "{k}s", "g", "c2", "0", "(4-1", "JUSTID"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "3600000", "-"}, {"XPENDING", "{k}s", "g", "-", "+", "10"},
		{"XDEL", "{k}s", "2-1", "3-1"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "-", "COUNT", "2"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "-", "COUNT", "1"},
		{"XPENDING", "{k}s", "g"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "+"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "(+"},
		{"XAUTOCLAIM", "{k}s", "g", "c3", "x", "0"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "-5", "0", "JUSTID"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "x"},
		{"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT", "0"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT", "x"},
		{"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT", "576460752303423488"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT", "576460752303423487"},
		{"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT", "100000000000", "JUSTID"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "COUNT"},
		{"XAUTOCLAIM", "{k}s", "g", "c3", "0", "0", "BOGUS"}, {"XAUTOCLAIM", "{k}s", "nog", "c3", "0", "0"}, {"XAUTOCLAIM", "{k}none", "g", "c3", "0", "0"},
		{"XAUTOCLAIM", "{k}none", "g", "c3", "x", "0"}, {"XAUTOCLAIM", "{k}s", "g", "c3", "0"}, {"XINFO", "CONSUMERS", "{k}s", "g"}},
	// XINFO GROUPS, CONSUMERS, STREAM FULL; errors
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"XADD", "{k}s", "2-1", "a", "2"}, {"XADD", "{k}s", "3-1", "a", "3"}, {"XINFO", "GROUPS", "{k}s"},
		{"XINFO", "STREAM", "{k}s", "FULL"}, {"XGROUP", "CREATE", "{k}s", "g2", "0"}, {"XGROUP", "CREATE", "{k}s", "g1", "$"},
		{"XREADGROUP", "GROUP", "g2", "bob", "STREAMS", "{k}s", ">"}, {"XREADGROUP", "GROUP", "g2", "al", "STREAMS", "{k}s", "0"},
		{"XCLAIM", "{k}s", "g2", "al", "0", "2-1", "JUSTID"}, {"XGROUP", "CREATECONSUMER", "{k}s", "g1", "z"},
		{"XINFO", "GROUPS", "{k}s"}, {"XINFO", "CONSUMERS", "{k}s", "g2"}, {"XINFO", "CONSUMERS", "{k}s", "g1"}, {"XINFO", "STREAM", "{k}s"},
		{"XINFO", "STREAM", "{k}s", "FULL"}, {"XINFO", "STREAM", "{k}s", "FULL", "COUNT", "1"}, {"XINFO", "STREAM", "{k}s", "FULL", "COUNT", "0"},
		{"XINFO", "CONSUMERS", "{k}s", "nog"}, {"XINFO", "CONSUMERS", "{k}none", "g"}, {"XINFO", "GROUPS", "{k}none"}, {"XINFO", "GROUPS"},
		{"XINFO", "GROUPS", "{k}s", "x"}, {"XINFO", "CONSUMERS", "{k}s"}, {"XINFO", "HELP"}, {"XINFO", "BOGUS", "{k}s"}},
	// wrong kinds, both ways; the keyspace's commands on a stream with groups
	{{"SET", "{k}str", "v"}, {"XGROUP", "CREATE", "{k}str", "g", "0"}, {"XGROUP", "CREATE", "{k}str", "g", "0", "MKSTREAM"},
		{"XGROUP", "CREATE", "{k}str", "g", "bad", "MKSTREAM"}, {"XGROUP", "SETID", "{k}str", "g", "0"}, {"XGROUP", "DESTROY", "{k}str", "g"},
		{"XGROUP", "CREATECONSUMER", "{k}str", "g", "c"}, {"XGROUP", "DELCONSUMER", "{k}str", "g", "c"},
		{"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}str", ">"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}str", "bad"}, {"XACK", "{k}str", "g", "1-1"},
		{"XACK", "{k}str", "g", "bad"}, {"XPENDING", "{k}str", "g"}, {"XPENDING", "{k}str", "g", "-", "+", "1"}, {"XCLAIM", "{k}str", "g", "c", "0", "1-1"},
		{"XAUTOCLAIM", "{k}str", "g", "c", "0", "0"}, {"XINFO", "GROUPS", "{k}str"}, {"XINFO", "CONSUMERS", "{k}str", "g"},
		{"XADD", "{k}s", "1-1", "a", "1"}, {"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}s", ">"},
		{"RENAME", "{k}s", "{k}t"}, {"XPENDING", "{k}t", "g"}, {"COPY", "{k}t", "{k}u"}, {"XACK", "{k}u", "g", "1-1"}, {"XPENDING", "{k}t", "g"},
		{"XPENDING", "{k}u", "g"}, {"XINFO", "STREAM", "{k}u"}, {"DEL", "{k}t"}, {"XADD", "{k}t", "1-1", "a", "1"}, {"XINFO", "GROUPS", "{k}t"},
		{"XPENDING", "{k}t", "g"}, {"SET", "{k}u", "x"}, {"XINFO", "GROUPS", "{k}u"}},
	// MULTI and scripts
	{{"XADD", "{k}s", "1-1", "a", "1"}, {"MULTI"}, {"XGROUP", "CREATE", "{k}s", "g", "0"}, {"XREADGROUP", "GROUP", "g", "c", "STREAMS", "{k}s", ">"},
		{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "0", "STREAMS", "{k}s", ">"}, {"XPENDING", "{k}s", "g"}, {"XACK", "{k}s", "g", "1-1"},
		{"XINFO", "GROUPS", "{k}s"}, {"XGROUP", "FOO"}, {"EXEC"},
		{"EVAL", "redis.call('XADD', KEYS[1], '2-1', 'b', '2'); return redis.call('XREADGROUP', 'GROUP', 'g', 'd', 'STREAMS', KEYS[1], '>')", "1", "{k}s"},
		{"EVAL", "return redis.call('XPENDING', KEYS[1], 'g')", "1", "{k}s"},
		{"EVAL", "return redis.call('XACK', KEYS[1], 'g', '2-1')", "1", "{k}s"},
		{"EVAL", "return redis.pcall('XREADGROUP', 'GROUP', 'g', 'd', 'BLOCK', '0', 'STREAMS', KEYS[1], '>')", "1", "{k}s"},
		{"EVAL", "redis.call('XGROUP', 'CREATE', KEYS[1], 'h', '0'); return redis.call('XAUTOCLAIM', KEYS[1], 'g', 'e', '0', '0', 'JUSTID')", "1", "{k}s"},
		{"EVAL", "return redis.call('XGROUP', 'DESTROY', KEYS[1], 'h')", "1", "{k}s"},
		{"XINFO", "GROUPS", "{k}s"}, {"XPENDING", "{k}s", "g", "-", "+", "10"}},
}

// TestStreamGroupsAgainstRedis: the streams, in RESP2 and RESP3, answered
// as redis-server answers them, through a follower.
func TestStreamGroupsAgainstRedis(t *testing.T) {
	redisAddr := startRedisServer(t)
	tc := startCluster(t, nil)
	follower := (tc.rc.WaitLeader(5*time.Second) + 1) % 3
	for _, proto := range []int{2, 3} {
		for i, stream := range groupStreams {
			rc, ic := dialRaw(t, redisAddr), dialRaw(t, tc.addrs[follower])
			if proto == 3 {
				for _, c := range []*rawConn{rc, ic} {
					c.send("HELLO 3\r\n")
					c.replies(1)
				}
			}
			prefix := fmt.Sprintf("grp%d:%d:", proto, i)
			for _, cmd := range stream {
				args := make([]string, len(cmd))
				for j, a := range cmd {
					args[j] = strings.ReplaceAll(a, "{k}", prefix)
				}
				rc.send(array(args...))
				ic.send(array(args...))
				want, got := rc.replies(1)[0], ic.replies(1)[0]
				if wm, gm := maskGroupTimes(t, want, args), maskGroupTimes(t, got, args); gm != wm {
					t.Errorf("resp%d stream %d: %q:\n idemgate %q\n redis    %q", proto, i, args, got, want)
				}
			}
		}
	}
}

// maskGroupTimes is a reply with its times masked: XPENDING's idle
// times, XINFO CONSUMERS' idle, XINFO STREAM FULL's seen and delivery
// times (the others are compared as they are).
func maskGroupTimes(t *testing.T, r string, args []string) string {
	t.Helper()
	n, _ := parseResp(t, r)
	name := strings.ToLower(args[0])
	sub := ""
	if len(args) > 1 {
		sub = strings.ToLower(args[1])
	}
	mask := func(x *respNode) {
		if x.typ == ':' {
			x.s = "T"
		}
	}
	switch {
	case name == "xpending" && len(args) > 3:
		for i := range n.items {
			if len(n.items[i].items) == 4 {
				mask(&n.items[i].items[2])
			}
		}
	case name == "xinfo" && sub == "consumers":
		for i := range n.items {
			maskAfter(&n.items[i], "idle", mask)
		}
	case name == "xinfo" && sub == "stream" && len(args) > 3:
		for i := range n.items {
			if n.items[i].s != "groups" || i+1 >= len(n.items) {
				continue
			}
			for g := range n.items[i+1].items {
				grp := &n.items[i+1].items[g]
				for j := 0; j+1 < len(grp.items); j++ {
					switch grp.items[j].s {
					case "pending":
						for p := range grp.items[j+1].items {
							mask(&grp.items[j+1].items[p].items[2])
						}
					case "consumers":
						for c := range grp.items[j+1].items {
							cons := &grp.items[j+1].items[c]
							maskAfter(cons, "seen-time", mask)
							for k := 0; k+1 < len(cons.items); k++ {
								if cons.items[k].s == "pending" {
									for p := range cons.items[k+1].items {
										mask(&cons.items[k+1].items[p].items[1])
									}
								}
							}
						}
					}
				}
			}
		}
	}
	return n.String()
}

// maskAfter masks the value after the field named name of a map or a
// flat array of pairs.
func maskAfter(n *respNode, name string, mask func(*respNode)) {
	for i := 0; i+1 < len(n.items); i += 2 {
		if n.items[i].s == name {
			mask(&n.items[i+1])
		}
	}
}
