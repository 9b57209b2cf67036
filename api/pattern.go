package api

// A resource's path as a pattern: literal runs and parameters, read once
// when the table is built (parsePath) and matched against each request's
// path (match).

import "strings"

// segment is a literal run of a path, or (name set) a parameter.
type segment struct {
	lit  string
	name string
	rest bool
}

// parsePath splits a resource's path into literal runs and parameters.
func parsePath(path string) []segment {
	var out []segment
	for rest := path; rest != ""; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			out = append(out, segment{lit: rest})
			break
		}
		if i > 0 {
			out = append(out, segment{lit: rest[:i]})
		}
		j := strings.IndexByte(rest, '}')
		if j < i+2 || (i > 0 && rest[i-1] != '/') {
			panic("api: bad path " + path)
		}
		name, greedy := strings.CutSuffix(rest[i+1:j], "...")
		out = append(out, segment{name: name, rest: greedy})
		rest = rest[j+1:]
		if greedy && strings.Contains(rest, "{") {
			panic("api: a parameter after {" + name + "...}: " + path)
		}
	}
	return out
}

func literalLen(pat []segment) int {
	n := 0
	for _, s := range pat {
		n += len(s.lit)
	}
	return n
}

// match reads path's parameters by pat; false when pat does not take path.
func match(pat []segment, path string) ([]string, bool) {
	var p []string
	for k, s := range pat {
		switch {
		case s.name == "":
			if !strings.HasPrefix(path, s.lit) {
				return nil, false
			}
			path = path[len(s.lit):]
		case s.rest:
			suffix := ""
			if k+1 < len(pat) {
				suffix = pat[k+1].lit
			}
			if len(path) < len(suffix) || !strings.HasSuffix(path, suffix) {
				return nil, false
			}
			p = append(p, path[:len(path)-len(suffix)])
			path = path[len(path)-len(suffix):]
		default:
			i := strings.IndexByte(path, '/')
			if i < 0 {
				i = len(path)
			}
			p = append(p, path[:i])
			path = path[i:]
		}
	}
	return p, path == ""
}
