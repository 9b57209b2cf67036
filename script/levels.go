package script

import (
	"fmt"
	"strings"

	"github.com/yuin/gopher-lua/ast"
	"github.com/yuin/gopher-lua/parse"
)

// How deep a script's code may nest, checked before gopher-lua compiles
// it. gopher-lua's compiler walks the syntax tree on the Go stack, one
// call per level, and a Go stack that overflows ends the process (it
// cannot be recovered): a body of a million nested braces did. Its parser
// keeps its stack on the heap, a few hundred bytes per open level. Lua
// 5.1 refuses code nested more than 200 levels ("chunk has too many syntax
// levels", LUAI_MAXCCALLS), counting a level each time its recursive
// parser enters a block (chunk()) or an expression (subexpr()): a block
// (do, then, else, repeat, a function's body), an expression that starts
// in a statement, a bracket's expression ((), [], {}, a call's
// arguments), a unary operator, a binary operator's right operand. That
// count is made here, over gopher-lua's own tokens, before its parser
// runs: so what Redis refuses, and what it accepts, is the same here, and
// the parser's stack stays small.
//
// gopher-lua's syntax tree nests where Lua's parser loops: a chain of
// left-associative operators (a+b+c), of fields, indexes and calls
// (a.b[c]()), of elseif branches. Lua has no limit on those; the compiler
// here recurses on them, so after parsing the tree's depth is bounded
// too, at maxTreeDepth, with the same error.

// maxSyntaxLevels is Lua 5.1's LUAI_MAXCCALLS as its parser applies it.
const maxSyntaxLevels = 200

// maxTreeDepth bounds the syntax tree's nesting. Code within Lua's 200
// levels nests at most a few tree levels per Lua level; the rest is for
// chains Lua parses in a loop. Each level costs the compiler about a
// 400 bytes of Go stack.
const maxTreeDepth = 2000

// maxTokens bounds a script's tokens (names, numbers, strings,
// operators, ...): parsing and compiling hold some 150 bytes per token at
// their peak, and take a few microseconds each, none of which a script's
// budget sees (4 MiB of "f(x)" held 563 MiB and took 12 s). Comments and
// long strings are one token each, so only dense code meets it: 250,000
// tokens is about a megabyte of it, some 40 MB at the peak.
const maxTokens = 250_000

// msgSyntaxLevels is Lua's error for code nested too deep.
const msgSyntaxLevels = "chunk has too many syntax levels"

// levelError is code nested too deep: where, in Lua's words.
func levelError(name string, line int) error {
	return fmt.Errorf("%s:%d: %s", name, line, msgSyntaxLevels)
}

// Lua 5.1's binary operators' priorities, left and right (lparser.c).
var binaryPriority = map[int][2]int8{
	'+': {6, 6}, '-': {6, 6}, '*': {7, 7}, '/': {7, 7}, '%': {7, 7},
	'^': {10, 9}, parse.T2Comma: {5, 4},
	parse.TEqeq: {3, 3}, parse.TNeq: {3, 3}, '<': {3, 3}, '>': {3, 3}, parse.TLte: {3, 3}, parse.TGte: {3, 3},
	parse.TAnd: {2, 2}, parse.TOr: {1, 1},
}

// unaryPriority is Lua 5.1's UNARY_PRIORITY.
const unaryPriority = 8

// levelFrame is one open block or bracket.
type levelFrame struct {
	kind  byte   // 'b' a block, 'e' a bracket of expressions, 'p' a parameter list
	ops   []int8 // the expression's open levels: each a subexpr() limit
	intro bool   // an expression starts at the next operand (after =, return, if, ...)
}

// syntaxLevels counts Lua 5.1's syntax levels over src's tokens and
// answers the error for the first point past maxSyntaxLevels, or past
// maxTokens, or nil. A token the scanner refuses ends the count: the
// parser then reports it.
func syntaxLevels(src, name string) error {
	sc := parse.NewScanner(strings.NewReader(src), name)
	lx := &parse.Lexer{}
	frames := []*levelFrame{{kind: 'b'}}
	depth := 1
	push := func(f *levelFrame) { // a block is a level; a bracket's expressions are
		frames = append(frames, f)
		if f.kind == 'b' {
			depth++
		}
	}
	pop := func() *levelFrame {
		f := frames[len(frames)-1]
		frames = frames[:len(frames)-1]
		depth -= len(f.ops)
		if f.kind == 'b' {
			depth--
		}
		return f
	}
	prevEnd := false       // the previous token ends an operand
	pendingParams := false // after "function": its name, then its parameter list
	for n := 1; ; n++ {
		lx.PrevTokenType = lx.Token.Type
		tok, err := sc.Scan(lx)
		if err != nil || tok.Type == parse.EOF {
			return nil
		}
		lx.Token = tok
		if n > maxTokens {
			return fmt.Errorf("%s:%d: script has more than %d tokens", name, tok.Pos.Line, maxTokens)
		}
		t := tok.Type
		f := frames[len(frames)-1]
		reset := func(intro bool) {
			depth -= len(f.ops)
			f.ops = f.ops[:0]
			f.intro = intro
		}
		level := func(limit int8) {
			f.ops = append(f.ops, limit)
			depth++
		}
		// operand: an operand starts; the first of an expression is a level.
		operand := func() {
			if len(f.ops) == 0 && (f.kind == 'e' || f.intro) {
				level(0)
				f.intro = false
			}
		}
		open := func(kind byte) { push(&levelFrame{kind: kind}) }
		if pendingParams && t != '(' && t != parse.TIdent && t != '.' && t != ':' {
			pendingParams = false
		}
		ends := false
		switch t {
		case parse.TIdent, parse.TNumber, parse.TNil, parse.TTrue, parse.TFalse, parse.T3Comma:
			ends = true
			switch {
			case f.kind == 'p' || pendingParams:
			case prevEnd && f.kind == 'b':
				reset(false) // a statement follows one that ended without a ';'
			default:
				operand()
			}
		case parse.TString:
			ends = true
			if !prevEnd { // else a call's one argument: f"x"
				operand()
			}
		case '(':
			switch {
			case pendingParams:
				pendingParams = false
				open('p')
			case prevEnd: // a call's arguments
				open('e')
			default:
				operand()
				open('e')
			}
		case '[': // an index, or a constructor's [key]
			open('e')
		case '{':
			if !prevEnd { // else a call's one argument: f{...}
				operand()
			}
			open('e')
		case ')', ']', '}':
			ends = true
			if f.kind != 'b' {
				if pop().kind == 'p' {
					push(&levelFrame{kind: 'b'}) // the function's body
				}
			}
		case parse.TFunction:
			if prevEnd && f.kind == 'b' {
				reset(false)
			}
			operand()
			pendingParams = true
		case parse.TDo, parse.TThen, parse.TRepeat:
			reset(false)
			push(&levelFrame{kind: 'b'})
		case parse.TElse, parse.TElseIf:
			if f.kind == 'b' && len(frames) > 1 {
				pop()
			}
			if t == parse.TElse {
				push(&levelFrame{kind: 'b'})
			} else {
				f = frames[len(frames)-1]
				reset(true)
			}
		case parse.TEnd, parse.TUntil:
			ends = t == parse.TEnd // a function's end ends an operand
			if f.kind == 'b' && len(frames) > 1 {
				pop()
			}
			f = frames[len(frames)-1]
			if t == parse.TUntil {
				reset(true)
			}
		case parse.TIf, parse.TWhile, parse.TReturn, parse.TIn, '=':
			reset(true)
		case parse.TLocal, parse.TFor, parse.TBreak, parse.TGoto, parse.T2Colon:
			reset(false)
		case ';':
			reset(f.kind == 'e')
		case ',':
			if f.kind == 'e' || len(f.ops) > 0 {
				reset(true)
			} else {
				reset(false)
			}
		case parse.TNot, '#':
			operand()
			level(unaryPriority)
		default:
			if p, ok := binaryPriority[t]; ok {
				if t == '-' && !prevEnd {
					operand()
					level(unaryPriority)
					break
				}
				if len(f.ops) == 0 {
					break // not Lua: the parser says so
				}
				for len(f.ops) > 1 && p[0] <= f.ops[len(f.ops)-1] {
					f.ops = f.ops[:len(f.ops)-1]
					depth--
				}
				level(p[1])
			}
		}
		prevEnd = ends
		if depth > maxSyntaxLevels {
			return levelError(name, tok.Pos.Line)
		}
	}
}

// treeDepth reports whether a syntax tree nests deeper than maxTreeDepth,
// and the line where it does. It stops descending there, so its own
// recursion is bounded too.
type treeDepth struct{ line int }

func (d *treeDepth) stmts(stmts []ast.Stmt, depth int) bool {
	for _, s := range stmts {
		if d.stmt(s, depth) {
			return true
		}
	}
	return false
}

func (d *treeDepth) exprs(exprs []ast.Expr, depth int) bool {
	for _, e := range exprs {
		if d.expr(e, depth) {
			return true
		}
	}
	return false
}

func (d *treeDepth) stmt(s ast.Stmt, depth int) bool {
	if depth++; depth > maxTreeDepth {
		d.line = s.Line()
		return true
	}
	switch s := s.(type) {
	case *ast.AssignStmt:
		return d.exprs(s.Lhs, depth) || d.exprs(s.Rhs, depth)
	case *ast.LocalAssignStmt:
		return d.exprs(s.Exprs, depth)
	case *ast.FuncCallStmt:
		return d.expr(s.Expr, depth)
	case *ast.DoBlockStmt:
		return d.stmts(s.Stmts, depth)
	case *ast.WhileStmt:
		return d.expr(s.Condition, depth) || d.stmts(s.Stmts, depth)
	case *ast.RepeatStmt:
		return d.expr(s.Condition, depth) || d.stmts(s.Stmts, depth)
	case *ast.IfStmt:
		return d.expr(s.Condition, depth) || d.stmts(s.Then, depth) || d.stmts(s.Else, depth)
	case *ast.NumberForStmt:
		return d.expr(s.Init, depth) || d.expr(s.Limit, depth) || d.expr(s.Step, depth) || d.stmts(s.Stmts, depth)
	case *ast.GenericForStmt:
		return d.exprs(s.Exprs, depth) || d.stmts(s.Stmts, depth)
	case *ast.FuncDefStmt:
		return d.expr(s.Name.Func, depth) || d.expr(s.Name.Receiver, depth) || d.expr(s.Func, depth)
	case *ast.ReturnStmt:
		return d.exprs(s.Exprs, depth)
	}
	return false // break, goto, a label: nothing inside
}

func (d *treeDepth) expr(e ast.Expr, depth int) bool {
	if e == nil {
		return false
	}
	if depth++; depth > maxTreeDepth {
		d.line = e.Line()
		return true
	}
	switch e := e.(type) {
	case *ast.AttrGetExpr:
		return d.expr(e.Object, depth) || d.expr(e.Key, depth)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if d.expr(f.Key, depth) || d.expr(f.Value, depth) {
				return true
			}
		}
	case *ast.FuncCallExpr:
		return d.expr(e.Func, depth) || d.expr(e.Receiver, depth) || d.exprs(e.Args, depth)
	case *ast.LogicalOpExpr:
		return d.expr(e.Lhs, depth) || d.expr(e.Rhs, depth)
	case *ast.RelationalOpExpr:
		return d.expr(e.Lhs, depth) || d.expr(e.Rhs, depth)
	case *ast.StringConcatOpExpr:
		return d.expr(e.Lhs, depth) || d.expr(e.Rhs, depth)
	case *ast.ArithmeticOpExpr:
		return d.expr(e.Lhs, depth) || d.expr(e.Rhs, depth)
	case *ast.UnaryMinusOpExpr:
		return d.expr(e.Expr, depth)
	case *ast.UnaryNotOpExpr:
		return d.expr(e.Expr, depth)
	case *ast.UnaryLenOpExpr:
		return d.expr(e.Expr, depth)
	case *ast.FunctionExpr:
		return d.stmts(e.Stmts, depth)
	}
	return false // a constant, a name, ...
}
