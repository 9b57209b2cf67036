package script

import (
	"fmt"
	"regexp"
	"strings"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// MaxSourceBytes bounds a script's source, EVAL's and SCRIPT LOAD's as
// loadstring's. Redis takes any script its protocol takes (512 MB); here
// compiling costs memory the script's budget does not see, some 35 times
// the source for dense code, so a script is at most this (a request's
// argument is at most 4 MiB by default anyway). Larger gets
// "ERR Error compiling script (new function): user_script: script has
// more than 4194304 bytes". Dense code meets maxTokens first.
const MaxSourceBytes = 4 << 20

// chunkName is what Redis 7 names an EVAL's code in its messages.
const chunkName = "user_script"

// gopher-lua's syntax errors read "user_script line:1(column:9) near 'x':
// msg"; Redis's Lua says "user_script:1: msg near 'x'".
var syntaxErr = regexp.MustCompile(`^` + chunkName + ` line:(\d+)\(column:\d+\) near '(.*)': (.*)$`)

// Compile parses body; the error is the reply Redis gives (its text says
// where and what, in gopher-lua's words, or Lua's for a script nested too
// deep). Nothing in body can end the process: its size and nesting are
// bounded before gopher-lua parses and compiles it (levels.go), and a
// panic in either is an error.
func Compile(body []byte) (*Script, error) {
	flags, n, err := shebang(body)
	if err != nil {
		return nil, err
	}
	fn, err := compileChunk(string(body[n:]), chunkName)
	if err == nil {
		// gopher-lua's Lua 5.0 compatibility gives every call of a
		// vararg function a table of its arguments, arg; the main
		// chunk is vararg but has no local arg to hold it (arg there
		// is a global, as in Lua 5.1): a table and a map made per
		// run, unreachable.
		fn.IsVarArg &^= lua.VarArgNeedsArg
		return &Script{SHA: SHA1(body), Body: body, Flags: flags, fn: fn, stores: storesIntoTables(fn)}, nil
	}
	return nil, compileError(err)
}

// compileError is err, of the parser or the bounds, as Redis's reply.
func compileError(err error) error {
	msg := strings.Join(strings.Fields(err.Error()), " ")
	if m := syntaxErr.FindStringSubmatch(msg); m != nil {
		near := m[2]
		if near == "EOF" {
			near = "<eof>"
		}
		msg = fmt.Sprintf("%s:%s: %s near '%s'", chunkName, m[1], m[3], near)
	}
	return fmt.Errorf("ERR Error compiling script (new function): %s", msg)
}

// Check answers what Compile would refuse body for before parsing it:
// its size, and its nesting past Lua's syntax levels (one pass of the
// lexer, no allocation that grows with the source). A caller that weighs
// a script before compiling it (a cache bounded by compiled size) checks
// first, so that a script nested too deep gets Lua's own answer.
func Check(body []byte) error {
	_, n, err := shebang(body)
	if err != nil {
		return err
	}
	if err := checkChunk(string(body[n:]), chunkName); err != nil {
		return compileError(err)
	}
	return nil
}

// checkChunk is Check's bounds, for a chunk called name.
func checkChunk(src, name string) error {
	if len(src) > MaxSourceBytes {
		return fmt.Errorf("%s: script has more than %d bytes", name, MaxSourceBytes)
	}
	return syntaxLevels(src, name)
}

// compileChunk checks src's size and nesting, then parses and compiles
// it, as name.
func compileChunk(src, name string) (fn *lua.FunctionProto, err error) {
	if err := checkChunk(src, name); err != nil {
		return nil, err
	}
	defer func() {
		if r := recover(); r != nil {
			fn, err = nil, fmt.Errorf("%s: gopher-lua could not compile it: %v", name, r)
		}
	}()
	chunk, err := parse.Parse(strings.NewReader(src), name)
	if err != nil {
		return nil, err
	}
	var d treeDepth
	if d.stmts(chunk, 0) {
		return nil, levelError(name, d.line)
	}
	return lua.Compile(chunk, name)
}
