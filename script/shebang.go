package script

import (
	"errors"
	"fmt"
	"strings"
)

// A script's shebang: Redis 7 reads a first line "#!lua flags=a,b" as
// what the script declares of itself (eval.c, evalExtractShebangFlags).
// A script with one is no longer run in the compatibility mode of older
// scripts: without the no-writes flag it may write, and so EVAL_RO
// refuses it; with no-writes, it may not (its writes answer what
// EVAL_RO's do). The line is not compiled, but its line feed is, so line
// numbers stay the body's.

// Flags are what a script declares in its shebang.
type Flags struct {
	// Shebang: the script has one (else every other field is false).
	Shebang bool
	// NoWrites: the script does not write (no-writes).
	NoWrites bool
	// AllowOOM, AllowStale, NoCluster and AllowCrossSlot are taken as
	// Redis takes them and change nothing here: a node refuses no write
	// for memory, serves no stale reads, and has no slots.
	AllowOOM, AllowStale, NoCluster, AllowCrossSlot bool
}

// MsgWriteFlagRO is EVAL_RO's refusal of a script with a shebang that may
// write.
const MsgWriteFlagRO = "ERR Can not execute a script with write flag using *_ro command."

// shebang reads body's shebang: its flags, and how many bytes of body
// the line takes before its line feed (0 for none). The error is Redis's
// reply.
func shebang(body []byte) (Flags, int, error) {
	if !strings.HasPrefix(string(body[:min(2, len(body))]), "#!") {
		return Flags{}, 0, nil
	}
	// Redis reads the body as a C string here: a NUL ends it.
	end := -1
	for i, c := range body {
		if c == '\n' || c == 0 {
			if c == '\n' {
				end = i
			}
			break
		}
	}
	if end < 0 {
		return Flags{}, 0, errors.New("ERR Invalid script shebang")
	}
	parts, ok := splitArgs(string(body[:end]))
	if !ok || len(parts) == 0 {
		return Flags{}, 0, errors.New("ERR Invalid engine in script shebang")
	}
	if parts[0] != "#!lua" {
		return Flags{}, 0, fmt.Errorf("ERR Unexpected engine in script shebang: %s", parts[0])
	}
	f := Flags{Shebang: true}
	for _, p := range parts[1:] {
		list, ok := strings.CutPrefix(p, "flags=")
		if !ok {
			return Flags{}, 0, fmt.Errorf("ERR Unknown lua shebang option: %s", p)
		}
		if list == "" {
			continue
		}
		for _, name := range strings.Split(list, ",") {
			flag := map[string]*bool{"no-writes": &f.NoWrites, "allow-oom": &f.AllowOOM, "allow-stale": &f.AllowStale,
				"no-cluster": &f.NoCluster, "allow-cross-slot-keys": &f.AllowCrossSlot}[name]
			if flag == nil {
				return Flags{}, 0, fmt.Errorf("ERR Unexpected flag in script shebang: %s", name)
			}
			*flag = true
		}
	}
	return f, end, nil
}

// splitArgs is Redis's sdssplitargs: words apart by spaces, in double
// quotes (with \n, \r, \t, \b, \a, \xHH and \<c> escapes) or single
// quotes (with \'); false for an unbalanced quote, or a closing quote
// not followed by a space.
func splitArgs(line string) ([]string, bool) {
	var out []string
	isSpace := func(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' }
	i := 0
	for {
		for i < len(line) && isSpace(line[i]) {
			i++
		}
		if i >= len(line) {
			return out, true
		}
		var cur []byte
		inq, insq := false, false
		for done := false; !done; {
			var c byte
			if i < len(line) {
				c = line[i]
			}
			switch {
			case inq:
				switch {
				case i >= len(line):
					return nil, false
				case c == '\\' && i+3 < len(line) && line[i+1] == 'x' && hexDigit(line[i+2]) >= 0 && hexDigit(line[i+3]) >= 0:
					cur = append(cur, byte(hexDigit(line[i+2])<<4|hexDigit(line[i+3])))
					i += 3
				case c == '\\' && i+1 < len(line):
					i++
					e := line[i]
					cur = append(cur, map[byte]byte{'n': '\n', 'r': '\r', 't': '\t', 'b': '\b', 'a': '\a'}[e])
					if cur[len(cur)-1] == 0 && e != 0 {
						cur[len(cur)-1] = e
					}
				case c == '"':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			case insq:
				switch {
				case i >= len(line):
					return nil, false
				case c == '\\' && i+1 < len(line) && line[i+1] == '\'':
					i++
					cur = append(cur, '\'')
				case c == '\'':
					if i+1 < len(line) && !isSpace(line[i+1]) {
						return nil, false
					}
					done = true
				default:
					cur = append(cur, c)
				}
			default:
				switch {
				case i >= len(line) || c == ' ' || c == '\n' || c == '\r' || c == '\t':
					done = true
				case c == '"':
					inq = true
				case c == '\'':
					insq = true
				default:
					cur = append(cur, c)
				}
			}
			if i < len(line) {
				i++
			}
		}
		out = append(out, string(cur))
	}
}
