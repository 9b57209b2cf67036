package resp

// globMatch reports whether s matches the glob pattern p as Redis 7's
// stringmatchlen matches it (KEYS, SCAN's MATCH): '*', '?', '[...]' with
// '^', ranges (reversed ones swapped) and '\' escapes inside, '\' escaping
// outside. A pattern byte past the end reads as NUL, as in C, and bytes
// compare as C's signed char in ranges.
func globMatch(p, s []byte) bool {
	skipLonger := false
	return globMatchAt(p, s, &skipLonger)
}

func globMatchAt(p, s []byte, skipLonger *bool) bool {
	at := func(i int) byte {
		if i < len(p) {
			return p[i]
		}
		return 0
	}
	for len(p) > 0 && len(s) > 0 {
		switch p[0] {
		case '*':
			for len(p) > 0 && at(1) == '*' {
				p = p[1:]
			}
			if len(p) == 1 {
				return true
			}
			for len(s) > 0 {
				if globMatchAt(p[1:], s, skipLonger) {
					return true
				}
				if *skipLonger {
					return false
				}
				s = s[1:]
			}
			// No match of the rest from anywhere in s: a longer match of
			// an earlier '*' cannot help either.
			*skipLonger = true
			return false
		case '?':
			s = s[1:]
		case '[':
			p = p[1:]
			not := at(0) == '^'
			if not {
				p = p[1:]
			}
			match := false
			for {
				if at(0) == '\\' && len(p) >= 2 {
					p = p[1:]
					if p[0] == s[0] {
						match = true
					}
				} else if at(0) == ']' {
					break
				} else if len(p) == 0 {
					p = append([]byte{0}, p...) // C steps back onto the byte before; the loop's end steps past it
					break
				} else if len(p) >= 3 && p[1] == '-' {
					start, end, c := int8(p[0]), int8(p[2]), int8(s[0])
					if start > end {
						start, end = end, start
					}
					p = p[2:]
					if c >= start && c <= end {
						match = true
					}
				} else if p[0] == s[0] {
					match = true
				}
				p = p[1:]
			}
			if not {
				match = !match
			}
			if !match {
				return false
			}
			s = s[1:]
		case '\\':
			if len(p) >= 2 {
				p = p[1:]
			}
			fallthrough
		default:
			if p[0] != s[0] {
				return false
			}
			s = s[1:]
		}
		p = p[1:]
		if len(s) == 0 {
			for len(p) > 0 && p[0] == '*' {
				p = p[1:]
			}
			break
		}
	}
	return len(p) == 0 && len(s) == 0
}
