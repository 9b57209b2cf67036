package resp

// A script's cost is what the node's script cache counts it at: an
// estimate, made from the source before it is compiled, of the heap its
// compiled form holds. The source is a poor measure: gopher-lua's
// compiled code holds an instruction (4 bytes) and its line (8 bytes) for
// every few tokens, in slices that grow by doubling, and every function
// prototype (the main chunk and each `function`) starts with about 17 KiB
// of slices made at their initial capacity (1024 instructions and lines,
// 128 call records, 32 constants, ...). Measured on gopher-lua v1.1.2
// (heap held after a collection, per source byte, the source's copy
// included), dense code of one shape repeated to 1 MiB takes 4 to 17
// times its source, a long string literal 2 times, and `f=function()
// end` repeated 1000 times: one compile of such a megabyte took a GiB
// and minutes. TestScriptCostEstimate holds the estimate between the
// measured growth and 4 times it for each of those shapes.
//
// So the estimate counts, in one pass of a minimal Lua lexer: the source
// (the cache keeps it, for SCRIPT's SHA), each token at costPerToken
// (none for comments, whitespace, ';', ',' and closing brackets, which
// compile to nothing of their own), the
// bytes of string literals once more (their constants), and each function
// prototype at costPerFunction. Code that compiles to nothing (`do end`
// repeated) is overestimated; no shape measured is underestimated.

const (
	costPerToken    = 40
	costPerConstant = 48 // a string literal's, beyond its token and bytes: its value, its entry in two tables
	costPerFunction = 18 << 10
	costPerChunk    = 64 << 10 // the main chunk's prototype and what one compile keeps beside it (25 KiB measured)
)

// scriptCost estimates the heap body holds once compiled; it never fails
// (a source the compiler refuses is estimated as far as it goes).
func scriptCost(body []byte) int64 {
	cost := int64(len(body)) + costPerChunk // the source, the main chunk
	for i := 0; i < len(body); {
		c := body[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' || c == ';':
			i++
			continue
		case c == '-' && i+1 < len(body) && body[i+1] == '-': // a comment: a long one, or to the end of the line
			if end, ok := longBracket(body, i+2); ok {
				i = end
				continue
			}
			for i < len(body) && body[i] != '\n' {
				i++
			}
			continue
		case c == '[':
			end, ok := longBracket(body, i)
			if !ok {
				i++ // an index: no code of its own beyond its key's
				continue
			}
			cost += costPerConstant + int64(end-i)
			i = end
		case c == '"' || c == '\'':
			start := i
			for i++; i < len(body) && body[i] != c && body[i] != '\n'; i++ {
				if body[i] == '\\' {
					i++
				}
			}
			i++
			cost += costPerConstant + int64(min(i, len(body))-start)
		case isNameByte(c):
			start := i
			for i < len(body) && (isNameByte(body[i]) || (body[i] == '.' && c >= '0' && c <= '9') ||
				((body[i] == '+' || body[i] == '-') && c >= '0' && c <= '9' && (body[i-1] == 'e' || body[i-1] == 'E'))) {
				i++
			}
			if string(body[start:i]) == "function" {
				cost += costPerFunction
			}
		case c == ')' || c == ']' || c == '}' || c == ',':
			i++ // closes or separates: no code of its own
			continue
		default: // an operator: "..", "...", "==", "<=", ">=", "~=" are one
			i++
			for i < len(body) && (body[i] == '=' && (c == '=' || c == '<' || c == '>' || c == '~') || body[i] == '.' && c == '.') {
				i++
			}
		}
		cost += costPerToken
	}
	return cost
}

func isNameByte(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
}

// longBracket: if body[i:] opens a long bracket ("[[", "[==["), the index
// just past its close (or the end of body), and true.
func longBracket(body []byte, i int) (int, bool) {
	if i >= len(body) || body[i] != '[' {
		return 0, false
	}
	j := i + 1
	for j < len(body) && body[j] == '=' {
		j++
	}
	if j >= len(body) || body[j] != '[' {
		return 0, false
	}
	level := j - i - 1
	for k := j + 1; k < len(body); k++ {
		if body[k] != ']' {
			continue
		}
		e := k + 1
		for e < len(body) && body[e] == '=' {
			e++
		}
		if e < len(body) && body[e] == ']' && e-k-1 == level {
			return e + 1, true
		}
	}
	return len(body), true
}
