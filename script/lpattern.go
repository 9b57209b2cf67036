// Generated from github.com/yuin/gopher-lua v1.1.2's pm/pm.go (MIT
// licence, Copyright (c) 2015 Yusuke Inuzuka): its identifiers prefixed
// with lp, a step count added (lpSteps, patterns.go), and lpFind
// counting its matches instead of keeping them; keep it so.
//
// gopher-lua's own matcher is one call that nothing interrupts, so a
// pattern of many optional items (exponential in time) ignored the
// script's time limit. string.find, match, gmatch and gsub first run
// this copy, which stops at the script's budget; only a match it
// finished is then run by gopher-lua.

// Lua lpPattern match functions for Go
package script

import (
	"fmt"
)

const (
	lpEOS     = -1
	lpUNKNOWN = -2
	// Each level is some 200 bytes of Go stack, which no budget sees:
	// gopher-lua's 1,000,000 held 200 MB for a '.*' over a megabyte.
	// Its matcher, which runs only where this one finished, recurses as
	// deep as this one did.
	lpMaxRecursionLevel = 100000
	lpTooComplex        = "pattern/input too complex"
)

/* lpError {{{ */

type lpError struct {
	Pos     int
	Message string
}

func lpNewError(pos int, message string, args ...interface{}) *lpError {
	if len(args) == 0 {
		return &lpError{pos, message}
	}
	return &lpError{pos, fmt.Sprintf(message, args...)}
}

func (e *lpError) Error() string {
	switch e.Pos {
	case lpEOS:
		return fmt.Sprintf("%s at EOS", e.Message)
	case lpUNKNOWN:
		return fmt.Sprintf("%s", e.Message)
	default:
		return fmt.Sprintf("%s at %d", e.Message, e.Pos)
	}
}

/* }}} */

/* lpMatchData {{{ */

type lpMatchData struct {
	// captured positions
	// layout
	// xxxx xxxx xxxx xxx0 : caputured positions
	// xxxx xxxx xxxx xxx1 : position captured positions
	captures []uint32
}

func lpNewMatchState() *lpMatchData { return &lpMatchData{[]uint32{}} }

func (st *lpMatchData) addPosCapture(s, pos int) {
	for s+1 >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	st.captures[s] = (uint32(pos) << 1) | 1
	st.captures[s+1] = (uint32(pos) << 1) | 1
}

func (st *lpMatchData) setCapture(s, pos int) uint32 {
	for s >= len(st.captures) {
		st.captures = append(st.captures, 0)
	}
	v := st.captures[s]
	st.captures[s] = (uint32(pos) << 1)
	return v
}

func (st *lpMatchData) restoreCapture(s int, pos uint32) { st.captures[s] = pos }

func (st *lpMatchData) CaptureLength() int { return len(st.captures) }

func (st *lpMatchData) IsPosCapture(idx int) bool { return (st.captures[idx] & 1) == 1 }

func (st *lpMatchData) Capture(idx int) int { return int(st.captures[idx] >> 1) }

/* }}} */

/* lpScanner {{{ */

type lpScannerState struct {
	Pos     int
	started bool
}

type lpScanner struct {
	src   []byte
	State lpScannerState
	saved lpScannerState
}

func lpNewScanner(src []byte) *lpScanner {
	return &lpScanner{
		src: src,
		State: lpScannerState{
			Pos:     0,
			started: false,
		},
		saved: lpScannerState{},
	}
}

func (sc *lpScanner) Length() int { return len(sc.src) }

func (sc *lpScanner) Next() int {
	if !sc.State.started {
		sc.State.started = true
		if len(sc.src) == 0 {
			sc.State.Pos = lpEOS
		}
	} else {
		sc.State.Pos = sc.NextPos()
	}
	if sc.State.Pos == lpEOS {
		return lpEOS
	}
	return int(sc.src[sc.State.Pos])
}

func (sc *lpScanner) CurrentPos() int {
	return sc.State.Pos
}

func (sc *lpScanner) NextPos() int {
	if sc.State.Pos == lpEOS || sc.State.Pos >= len(sc.src)-1 {
		return lpEOS
	}
	if !sc.State.started {
		return 0
	} else {
		return sc.State.Pos + 1
	}
}

func (sc *lpScanner) Peek() int {
	cureof := sc.State.Pos == lpEOS
	ch := sc.Next()
	if !cureof {
		if sc.State.Pos == lpEOS {
			sc.State.Pos = len(sc.src) - 1
		} else {
			sc.State.Pos--
			if sc.State.Pos < 0 {
				sc.State.Pos = 0
				sc.State.started = false
			}
		}
	}
	return ch
}

func (sc *lpScanner) Save() { sc.saved = sc.State }

func (sc *lpScanner) Restore() { sc.State = sc.saved }

/* }}} */

/* bytecode {{{ */

type lpOpCode int

const (
	lpOpChar lpOpCode = iota
	lpOpMatch
	lpOpTailMatch
	lpOpJmp
	lpOpSplit
	lpOpSave
	lpOpPSave
	lpOpBrace
	lpOpNumber
)

type lpInst struct {
	OpCode   lpOpCode
	Class    lpClass
	Operand1 int
	Operand2 int
}

/* }}} */

/* classes {{{ */

type lpClass interface {
	Matches(ch int) bool
}

type lpDotClass struct{}

func (pn *lpDotClass) Matches(ch int) bool { return true }

type lpCharClass struct {
	Ch int
}

func (pn *lpCharClass) Matches(ch int) bool { return pn.Ch == ch }

type lpSingleClass struct {
	Class int
}

func (pn *lpSingleClass) Matches(ch int) bool {
	ret := false
	switch pn.Class {
	case 'a', 'A':
		ret = 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'c', 'C':
		ret = (0x00 <= ch && ch <= 0x1F) || ch == 0x7F
	case 'd', 'D':
		ret = '0' <= ch && ch <= '9'
	case 'l', 'L':
		ret = 'a' <= ch && ch <= 'z'
	case 'p', 'P':
		ret = (0x21 <= ch && ch <= 0x2f) || (0x3a <= ch && ch <= 0x40) || (0x5b <= ch && ch <= 0x60) || (0x7b <= ch && ch <= 0x7e)
	case 's', 'S':
		switch ch {
		case ' ', '\f', '\n', '\r', '\t', '\v':
			ret = true
		}
	case 'u', 'U':
		ret = 'A' <= ch && ch <= 'Z'
	case 'w', 'W':
		ret = '0' <= ch && ch <= '9' || 'A' <= ch && ch <= 'Z' || 'a' <= ch && ch <= 'z'
	case 'x', 'X':
		ret = '0' <= ch && ch <= '9' || 'a' <= ch && ch <= 'f' || 'A' <= ch && ch <= 'F'
	case 'z', 'Z':
		ret = ch == 0
	default:
		return ch == pn.Class
	}
	if 'A' <= pn.Class && pn.Class <= 'Z' {
		return !ret
	}
	return ret
}

type lpSetClass struct {
	IsNot   bool
	Classes []lpClass
}

func (pn *lpSetClass) Matches(ch int) bool {
	for _, lpClass := range pn.Classes {
		if lpClass.Matches(ch) {
			return !pn.IsNot
		}
	}
	return pn.IsNot
}

type lpRangeClass struct {
	Begin lpClass
	End   lpClass
}

func (pn *lpRangeClass) Matches(ch int) bool {
	switch begin := pn.Begin.(type) {
	case *lpCharClass:
		end, ok := pn.End.(*lpCharClass)
		if !ok {
			return false
		}
		return begin.Ch <= ch && ch <= end.Ch
	}
	return false
}

// }}}

// patterns {{{

type lpPattern interface{}

type lpSinglePattern struct {
	Class lpClass
}

type lpSeqPattern struct {
	MustHead bool
	MustTail bool
	Patterns []lpPattern
}

type lpRepeatPattern struct {
	Type  int
	Class lpClass
}

type lpPosCapPattern struct{}

type lpCapPattern struct {
	Pattern lpPattern
}

type lpNumberPattern struct {
	N int
}

type lpBracePattern struct {
	Begin int
	End   int
}

// }}}

/* parse {{{ */

func lpParseClass(sc *lpScanner, allowset bool) lpClass {
	ch := sc.Next()
	switch ch {
	case '%':
		return &lpSingleClass{sc.Next()}
	case '.':
		if allowset {
			return &lpDotClass{}
		}
		return &lpCharClass{ch}
	case '[':
		if allowset {
			return lpParseClassSet(sc)
		}
		return &lpCharClass{ch}
	//case '^' '$', '(', ')', ']', '*', '+', '-', '?':
	//	panic(lpNewError(sc.CurrentPos(), "invalid %c", ch))
	case lpEOS:
		panic(lpNewError(sc.CurrentPos(), "unexpected EOS"))
	default:
		return &lpCharClass{ch}
	}
}

func lpParseClassSet(sc *lpScanner) lpClass {
	set := &lpSetClass{false, []lpClass{}}
	if sc.Peek() == '^' {
		set.IsNot = true
		sc.Next()
	}
	isrange := false
	for {
		ch := sc.Peek()
		switch ch {
		// case '[':
		// 	panic(lpNewError(sc.CurrentPos(), "'[' can not be nested"))
		case lpEOS:
			panic(lpNewError(sc.CurrentPos(), "unexpected EOS"))
		case ']':
			if len(set.Classes) > 0 {
				sc.Next()
				goto exit
			}
			fallthrough
		case '-':
			if len(set.Classes) > 0 {
				sc.Next()
				isrange = true
				continue
			}
			fallthrough
		default:
			set.Classes = append(set.Classes, lpParseClass(sc, false))
		}
		if isrange {
			begin := set.Classes[len(set.Classes)-2]
			end := set.Classes[len(set.Classes)-1]
			set.Classes = set.Classes[0 : len(set.Classes)-2]
			set.Classes = append(set.Classes, &lpRangeClass{begin, end})
			isrange = false
		}
	}
exit:
	if isrange {
		set.Classes = append(set.Classes, &lpCharClass{'-'})
	}

	return set
}

func lpParsePattern(sc *lpScanner, toplevel bool) *lpSeqPattern {
	pat := &lpSeqPattern{}
	if toplevel {
		if sc.Peek() == '^' {
			sc.Next()
			pat.MustHead = true
		}
	}
	for {
		ch := sc.Peek()
		switch ch {
		case '%':
			sc.Save()
			sc.Next()
			switch sc.Peek() {
			case '0':
				panic(lpNewError(sc.CurrentPos(), "invalid capture index"))
			case '1', '2', '3', '4', '5', '6', '7', '8', '9':
				pat.Patterns = append(pat.Patterns, &lpNumberPattern{sc.Next() - 48})
			case 'b':
				sc.Next()
				pat.Patterns = append(pat.Patterns, &lpBracePattern{sc.Next(), sc.Next()})
			default:
				sc.Restore()
				pat.Patterns = append(pat.Patterns, &lpSinglePattern{lpParseClass(sc, true)})
			}
		case '.', '[', ']':
			pat.Patterns = append(pat.Patterns, &lpSinglePattern{lpParseClass(sc, true)})
		//case ']':
		//	panic(lpNewError(sc.CurrentPos(), "invalid ']'"))
		case ')':
			if toplevel {
				panic(lpNewError(sc.CurrentPos(), "invalid ')'"))
			}
			return pat
		case '(':
			sc.Next()
			if sc.Peek() == ')' {
				sc.Next()
				pat.Patterns = append(pat.Patterns, &lpPosCapPattern{})
			} else {
				ret := &lpCapPattern{lpParsePattern(sc, false)}
				if sc.Peek() != ')' {
					panic(lpNewError(sc.CurrentPos(), "unfinished capture"))
				}
				sc.Next()
				pat.Patterns = append(pat.Patterns, ret)
			}
		case '*', '+', '-', '?':
			sc.Next()
			if len(pat.Patterns) > 0 {
				spat, ok := pat.Patterns[len(pat.Patterns)-1].(*lpSinglePattern)
				if ok {
					pat.Patterns = pat.Patterns[0 : len(pat.Patterns)-1]
					pat.Patterns = append(pat.Patterns, &lpRepeatPattern{ch, spat.Class})
					continue
				}
			}
			pat.Patterns = append(pat.Patterns, &lpSinglePattern{&lpCharClass{ch}})
		case '$':
			if toplevel && (sc.NextPos() == sc.Length()-1 || sc.NextPos() == lpEOS) {
				pat.MustTail = true
			} else {
				pat.Patterns = append(pat.Patterns, &lpSinglePattern{&lpCharClass{ch}})
			}
			sc.Next()
		case lpEOS:
			sc.Next()
			goto exit
		default:
			sc.Next()
			pat.Patterns = append(pat.Patterns, &lpSinglePattern{&lpCharClass{ch}})
		}
	}
exit:
	return pat
}

type lpIptr struct {
	insts   []lpInst
	capture int
}

func lpCompilePattern(p lpPattern, ps ...*lpIptr) []lpInst {
	var ptr *lpIptr
	toplevel := false
	if len(ps) == 0 {
		toplevel = true
		ptr = &lpIptr{[]lpInst{lpInst{lpOpSave, nil, 0, -1}}, 2}
	} else {
		ptr = ps[0]
	}
	switch pat := p.(type) {
	case *lpSinglePattern:
		ptr.insts = append(ptr.insts, lpInst{lpOpChar, pat.Class, -1, -1})
	case *lpSeqPattern:
		for _, cp := range pat.Patterns {
			lpCompilePattern(cp, ptr)
		}
	case *lpRepeatPattern:
		idx := len(ptr.insts)
		switch pat.Type {
		case '*':
			ptr.insts = append(ptr.insts,
				lpInst{lpOpSplit, nil, idx + 1, idx + 3},
				lpInst{lpOpChar, pat.Class, -1, -1},
				lpInst{lpOpJmp, nil, idx, -1})
		case '+':
			ptr.insts = append(ptr.insts,
				lpInst{lpOpChar, pat.Class, -1, -1},
				lpInst{lpOpSplit, nil, idx, idx + 2})
		case '-':
			ptr.insts = append(ptr.insts,
				lpInst{lpOpSplit, nil, idx + 3, idx + 1},
				lpInst{lpOpChar, pat.Class, -1, -1},
				lpInst{lpOpJmp, nil, idx, -1})
		case '?':
			ptr.insts = append(ptr.insts,
				lpInst{lpOpSplit, nil, idx + 1, idx + 2},
				lpInst{lpOpChar, pat.Class, -1, -1})
		}
	case *lpPosCapPattern:
		ptr.insts = append(ptr.insts, lpInst{lpOpPSave, nil, ptr.capture, -1})
		ptr.capture += 2
	case *lpCapPattern:
		c0, c1 := ptr.capture, ptr.capture+1
		ptr.capture += 2
		ptr.insts = append(ptr.insts, lpInst{lpOpSave, nil, c0, -1})
		lpCompilePattern(pat.Pattern, ptr)
		ptr.insts = append(ptr.insts, lpInst{lpOpSave, nil, c1, -1})
	case *lpBracePattern:
		ptr.insts = append(ptr.insts, lpInst{lpOpBrace, nil, pat.Begin, pat.End})
	case *lpNumberPattern:
		ptr.insts = append(ptr.insts, lpInst{lpOpNumber, nil, pat.N, -1})
	}
	if toplevel {
		if p.(*lpSeqPattern).MustTail {
			ptr.insts = append(ptr.insts, lpInst{lpOpSave, nil, 1, -1}, lpInst{lpOpTailMatch, nil, -1, -1})
		}
		ptr.insts = append(ptr.insts, lpInst{lpOpSave, nil, 1, -1}, lpInst{lpOpMatch, nil, -1, -1})
	}
	return ptr.insts
}

/* }}} parse */

/* VM {{{ */

// Simple recursive virtual machine based on the
// "Regular Expression Matching: the Virtual Machine Approach" (https://swtch.com/~rsc/regexp/regexp2.html)
func lpRecursiveVM(st *lpSteps, src []byte, insts []lpInst, pc, sp, recLevel int, m *lpMatchData) (bool, int, *lpMatchData) {
	st.step()
	recLevel++
	if recLevel > lpMaxRecursionLevel {
		panic(lpNewError(lpUNKNOWN, lpTooComplex))
	}
	if m == nil { // the variadic parameter upstream: one allocation a call
		m = lpNewMatchState()
	}
redo:
	lpInst := insts[pc]
	switch lpInst.OpCode {
	case lpOpChar:
		st.step()
		if sp >= len(src) || !lpInst.Class.Matches(int(src[sp])) {
			return false, sp, m
		}
		pc++
		sp++
		goto redo
	case lpOpMatch:
		return true, sp, m
	case lpOpTailMatch:
		return sp >= len(src), sp, m
	case lpOpJmp:
		pc = lpInst.Operand1
		goto redo
	case lpOpSplit:
		if ok, nsp, _ := lpRecursiveVM(st, src, insts, lpInst.Operand1, sp, recLevel, m); ok {
			return true, nsp, m
		}
		pc = lpInst.Operand2
		goto redo
	case lpOpSave:
		s := m.setCapture(lpInst.Operand1, sp)
		if ok, nsp, _ := lpRecursiveVM(st, src, insts, pc+1, sp, recLevel, m); ok {
			return true, nsp, m
		}
		m.restoreCapture(lpInst.Operand1, s)
		return false, sp, m
	case lpOpPSave:
		m.addPosCapture(lpInst.Operand1, sp+1)
		pc++
		goto redo
	case lpOpBrace:
		if sp >= len(src) || int(src[sp]) != lpInst.Operand1 {
			return false, sp, m
		}
		count := 1
		for sp = sp + 1; sp < len(src); sp++ {
			if int(src[sp]) == lpInst.Operand2 {
				count--
			}
			if count == 0 {
				pc++
				sp++
				goto redo
			}
			if int(src[sp]) == lpInst.Operand1 {
				count++
			}
		}
		return false, sp, m
	case lpOpNumber:
		idx := lpInst.Operand1 * 2
		if idx >= m.CaptureLength()-1 {
			panic(lpNewError(lpUNKNOWN, "invalid capture index"))
		}
		capture := src[m.Capture(idx):m.Capture(idx+1)]
		for i := 0; i < len(capture); i++ {
			if i+sp >= len(src) || capture[i] != src[i+sp] {
				return false, sp, m
			}
		}
		pc++
		sp += len(capture)
		goto redo
	}
	panic("should not reach here")
}

/* }}} */

/* API {{{ */

func lpFind(st *lpSteps, p string, src []byte, offset, limit int) (matches int, err error) {
	defer func() {
		if v := recover(); v != nil {
			if perr, ok := v.(*lpError); ok {
				err = perr
			} else {
				panic(v)
			}
		}
	}()
	pat := lpParsePattern(lpNewScanner([]byte(p)), true)
	insts := lpCompilePattern(pat)
	for sp := offset; sp <= len(src); {
		ok, nsp, _ := lpRecursiveVM(st, src, insts, 0, sp, 0, nil)
		sp++
		if ok {
			if sp < nsp {
				sp = nsp
			}
			matches++ // counted, not kept: only whether the match ends matters here
		}
		if matches == limit || pat.MustHead {
			break
		}
	}
	return
}

/* }}} */
