package gateway

import (
	"crypto/sha256"
	"hash"
	"sync"
)

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
