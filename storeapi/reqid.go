package storeapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/idemgate/idemgate/fsm"
)

// A caller that may retry a write after losing its answer (a client whose
// connection broke, a 503 after a timeout) names the write with a request
// id of its own. Every attempt under that id is applied at most once, and a
// retry within fsm.RequestIDRetention is answered with the first attempt's
// result: the lost answer is recovered, not guessed.

type reqIDKey struct{}

// WithRequestID returns a context under which the store proposes its
// command with request id id instead of a fresh one.
func WithRequestID(ctx context.Context, id fsm.ReqID) context.Context {
	return context.WithValue(ctx, reqIDKey{}, id)
}

// RequestIDFor derives a request id from a client's retry key and the
// request it names. The parts are length-prefixed, so no two different
// part lists give the same input; a different request under the same
// client key is a different id (it never recalls another request's answer).
func RequestIDFor(parts ...[]byte) fsm.ReqID {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var id fsm.ReqID
	copy(id[:], h.Sum(nil))
	return id
}

// TimeOrdered returns id with its first 6 bytes replaced by the
// millisecond time of key when key is a UUIDv7 in its text form (RFC
// 9562: 8-4-4-4-12 hex digits, version 7, variant 10); any other key
// leaves id as it is. A request id derived from a key lands anywhere in
// the state machine's memory of ids (a B+tree): one insert, one page
// written, per write. Ids of v7 keys, as the Go client makes them, follow
// their keys' times instead, so a batch's ids go in near the end, on a few
// pages. The other 10 bytes are still the hash's: two requests under one
// key, or two keys of one millisecond, still differ.
func TimeOrdered(key []byte, id fsm.ReqID) fsm.ReqID {
	if len(key) != 36 || key[8] != '-' || key[13] != '-' || key[18] != '-' || key[23] != '-' ||
		key[14] != '7' || !variant10(key[19]) {
		return id
	}
	var ms uint64
	for i, c := range key {
		if i == 8 || i == 13 || i == 18 || i == 23 {
			continue
		}
		v, ok := hexDigit(c)
		if !ok {
			return id
		}
		if i < 13 { // the first 12 digits: unix_ts_ms
			ms = ms<<4 | uint64(v)
		}
	}
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], ms)
	copy(id[:6], b[2:])
	return id
}

func hexDigit(c byte) (byte, bool) {
	switch {
	case '0' <= c && c <= '9':
		return c - '0', true
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10, true
	case 'A' <= c && c <= 'F':
		return c - 'A' + 10, true
	}
	return 0, false
}

// variant10 reports whether a UUID's 17th hex digit has the RFC 9562
// variant (its top bits 10).
func variant10(c byte) bool {
	switch c {
	case '8', '9', 'a', 'b', 'A', 'B':
		return true
	}
	return false
}

// RequestID is the request id a command proposed under ctx carries: the
// one ctx names (WithRequestID), or a fresh one.
func RequestID(ctx context.Context) fsm.ReqID {
	if id, ok := RequestIDFrom(ctx); ok {
		return id
	}
	return NewRequestID()
}

// fresh is the process's one source of fresh request ids: a random prefix
// drawn once and a counter, so ids never repeat across the stores of one
// process (a node's, or a test's several), nor, but for a 64-bit prefix
// collision, across processes; and no command pays a random read.
var fresh struct {
	once   sync.Once
	prefix [8]byte
	seq    atomic.Uint64
}

// NewRequestID is a fresh request id, never one a context names: each
// command of a pipeline gets its own (one id would make them one request).
func NewRequestID() fsm.ReqID {
	fresh.once.Do(func() { rand.Read(fresh.prefix[:]) })
	var id fsm.ReqID
	copy(id[:8], fresh.prefix[:])
	binary.BigEndian.PutUint64(id[8:], fresh.seq.Add(1))
	return id
}

// RequestIDFrom returns the request id ctx carries (WithRequestID).
func RequestIDFrom(ctx context.Context) (fsm.ReqID, bool) {
	id, ok := ctx.Value(reqIDKey{}).(fsm.ReqID)
	return id, ok && !id.IsZero()
}
