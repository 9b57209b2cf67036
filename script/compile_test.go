package script

import (
	"strings"
	"testing"
)

// TestCompileLevels: code nested past Lua's 200 syntax levels is refused
// with Lua's words, at the same point Redis 7 refuses it (each pair below
// is the last depth redis-server 7.0.15 takes and the first it refuses);
// chains Lua parses in a loop are taken up to maxTreeDepth; and nothing,
// however deep or long, ends the process (a million braces did: a Go
// stack overflow in gopher-lua's compiler).
func TestCompileLevels(t *testing.T) {
	rep := strings.Repeat
	levels := "ERR Error compiling script (new function): user_script:1: chunk has too many syntax levels"
	type tc struct {
		name, body, err string
	}
	var tests []tc
	pair := func(name string, ok int, body func(n int) string) {
		tests = append(tests, tc{name + " at Redis's deepest", body(ok), ""}, tc{name + " one deeper", body(ok + 1), levels})
	}
	pair("parentheses", 198, func(n int) string { return "return " + rep("(", n) + "1" + rep(")", n) })
	pair("braces", 198, func(n int) string { return "return #" + rep("{", n) + rep("}", n) })
	pair("indexes", 198, func(n int) string { return "local t = {} return " + rep("t[", n) + "1" + rep("]", n) })
	pair("concatenation", 198, func(n int) string { return "return 'x'" + rep("..'x'", n) })
	pair("power", 198, func(n int) string { return "return 1" + rep("^1", n) })
	pair("unary minus", 198, func(n int) string { return "return " + rep("- ", n) + "1" })
	pair("not", 198, func(n int) string { return "return " + rep("not ", n) + "1" })
	pair("minus and parenthesis", 99, func(n int) string { return "return " + rep("-(", n) + "1" + rep(")", n) })
	pair("do blocks", 199, func(n int) string { return rep("do ", n) + rep(" end", n) + " return 1" })
	pair("repeat blocks", 199, func(n int) string { return rep("repeat ", n) + rep(" until true", n) + " return 1" })
	pair("function literals", 66, func(n int) string { return "return " + rep("(function() return ", n) + "1" + rep(" end)()", n) })
	pair("call arguments", 199, func(n int) string { return rep("print(", n) + "1" + rep(")", n) })
	tests = append(tests,
		tc{"if blocks", rep("if true then ", 150) + "return 1" + rep(" end", 150), ""},
		tc{"a long left-associative chain", "return 1" + rep("+1", 1500), ""},
		tc{"a long elseif chain", "local x = 1 if x == 0 then return 0 " + rep("elseif x == 0 then return 0 ", 1500) + "end return 1", ""},
		tc{"a long field chain", "local t = {} return t" + rep(".a", 1500), ""},
		tc{"a left-associative chain past the tree's bound", "return 1" + rep("+1", maxTreeDepth+1), levels},
		tc{"an elseif chain past the tree's bound", "local x = 1 if x == 0 then return 0 " + rep("elseif x == 0 then return 0 ", maxTreeDepth+1) + "end", levels},
		tc{"a call chain past the tree's bound", "local f return f" + rep("()", maxTreeDepth+1), levels},
		tc{"a method name chain past the tree's bound", "function a" + rep(".b", maxTreeDepth+1) + "() end", levels},
		tc{"a million braces", "return " + rep("{", 1_000_000) + rep("}", 1_000_000), levels},
		tc{"a million parentheses, never closed", "return " + rep("(", 1_000_000), levels},
		tc{"300,000 function literals", rep("function f() ", 300_000), levels},
		tc{"a million nots", "return " + rep("not ", 1_000_000) + "1", levels},
		tc{"braces in a string are no levels", "return #'" + rep("{", 10_000) + "'", ""},
		tc{"nor in a long string", "return #[==[" + rep("{", 10_000) + "]==]", ""},
		tc{"nor in a comment", "--[[" + rep("(", 10_000) + "]] return 1", ""},
		tc{"nor in a line comment", "-- " + rep("{", 10_000) + "\nreturn 1", ""},
		tc{"a line past the levels is named", "return 1\n\n" + rep("(", 300), "ERR Error compiling script (new function): user_script:3: chunk has too many syntax levels"},
		tc{"too many tokens", "local x = 0 " + rep("x = 1 ", maxTokens/3+1), "ERR Error compiling script (new function): user_script:1: script has more than 250000 tokens"},
		tc{"too large", "return 1 --" + rep("x", MaxSourceBytes), "ERR Error compiling script (new function): user_script: script has more than 4194304 bytes"},
		tc{"a megabyte of comment", "return 1 --" + rep("x", 1<<20), ""},
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Compile([]byte(tt.body))
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.err {
				t.Fatalf("Compile = %q, want %q", got, tt.err)
			}
		})
	}
}
