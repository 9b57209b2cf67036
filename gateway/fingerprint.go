package gateway

import (
	"crypto/sha256"
	"encoding/json"
	"hash"
	"slices"
	"strconv"
	"sync"
)

// A request's fingerprint: what it hashes (the method, path, query and
// body; for a route with fingerprint: json:, the body's canonical JSON)
// and the hash.

// hashScratch keeps everything handed to the hash.Hash interface on the
// heap already, so a fingerprint allocates nothing (arguments of interface
// calls escape).
type hashScratch struct {
	h     hash.Hash
	sum   [32]byte
	sep   [1]byte  // 0
	space [1]byte  // ' '
	word  [32]byte // an Authorization scheme, capitalized
}

var hashers = sync.Pool{New: func() any { return &hashScratch{h: sha256.New(), space: [1]byte{' '}} }}

// fingerprint returns SHA-256(method \0 path \0 query \0 SHA-256(body)) and
// the body digest (suspect detection keys on it). The path comes in two
// pieces, hashed as one: a route's own spelling of its prefix and what
// follows it, so an alias the route accepts needs no copy.
func fingerprint(method, pathHead, pathTail, query, body []byte) (fp, digest [32]byte) {
	s := hashers.Get().(*hashScratch)
	s.h.Reset()
	s.h.Write(body)
	s.h.Sum(s.sum[:0])
	digest = s.sum
	s.h.Reset()
	s.h.Write(method)
	s.h.Write(s.sep[:])
	s.h.Write(pathHead)
	s.h.Write(pathTail)
	s.h.Write(s.sep[:])
	s.h.Write(query)
	s.h.Write(s.sep[:])
	s.h.Write(s.sum[:])
	s.h.Sum(s.sum[:0])
	fp = s.sum
	hashers.Put(s)
	return fp, digest
}

// canonicalJSON writes n in one canonical form, for a route with
// fingerprint: json: object members sorted by name, no whitespace, strings
// minimally escaped, numbers as written. The values ignore
// points at (split JSON pointers) are left out: an ignored member is
// omitted, an ignored array element written as null (its neighbours keep
// their places). Two bodies that differ only in member order, whitespace,
// string escapes or ignored members have one canonical form, so a retry
// that re-serializes its body, or stamps a new request time, is still a
// retry.
func canonicalJSON(dst []byte, n *jsonNode, ignore [][]string) []byte {
	return appendCanonical(dst, n, ignore, 0)
}

func appendCanonical(dst []byte, n *jsonNode, ignore [][]string, depth int) []byte {
	switch n.kind {
	case '{':
		order := make([]int, len(n.names))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int {
			switch {
			case n.names[a] < n.names[b]:
				return -1
			case n.names[a] > n.names[b]:
				return 1
			}
			return 0
		})
		dst = append(dst, '{')
		first := true
		for _, i := range order {
			sub := ignoredBelow(ignore, depth, n.names[i])
			if sub == nil {
				continue // this member is ignored
			}
			if !first {
				dst = append(dst, ',')
			}
			first = false
			dst = appendJSONString(dst, n.names[i])
			dst = append(dst, ':')
			dst = appendCanonical(dst, n.members[i], *sub, depth+1)
		}
		return append(dst, '}')
	case '[':
		dst = append(dst, '[')
		for i, m := range n.members {
			if i > 0 {
				dst = append(dst, ',')
			}
			sub := ignoredBelow(ignore, depth, indexToken(i))
			if sub == nil {
				dst = append(dst, "null"...)
				continue
			}
			dst = appendCanonical(dst, m, *sub, depth+1)
		}
		return append(dst, ']')
	}
	switch v := n.scalar.(type) {
	case string:
		return appendJSONString(dst, v)
	case json.Number:
		return append(dst, v...)
	case bool:
		if v {
			return append(dst, "true"...)
		}
		return append(dst, "false"...)
	}
	return append(dst, "null"...)
}

// ignoredBelow narrows the ignore pointers to those that go through tok at
// depth. It returns nil when one of them ends at tok (the value is
// ignored), else a pointer to the pointers that continue below it.
func ignoredBelow(ignore [][]string, depth int, tok string) *[][]string {
	if len(ignore) == 0 {
		return &noIgnore
	}
	var below [][]string
	for _, p := range ignore {
		if p[depth] != tok {
			continue
		}
		if len(p) == depth+1 {
			return nil
		}
		below = append(below, p)
	}
	return &below
}

// noIgnore is the empty list of ignore pointers, shared.
var noIgnore [][]string

func indexToken(i int) string { return strconv.Itoa(i) }

// appendJSONString writes s as a JSON string: '"', '\\' and control
// characters escaped, everything else as it is (the decoder has made s
// valid UTF-8 already), so one string has one spelling.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			dst = append(dst, '\\', c)
		case c < 0x20:
			dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			dst = append(dst, c)
		}
	}
	return append(dst, '"')
}
