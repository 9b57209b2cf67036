package storeapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"

	"github.com/idemgate/idemgate/command"
)

// A caller that may retry a write after losing its answer (a client whose
// connection broke, a 503 after a timeout) names the write with a request
// id of its own. Every attempt under that id is applied at most once, and a
// retry within the state machine's RequestIDRetention (package fsm) is answered with the first attempt's
// result: the lost answer is recovered, not guessed.

type reqIDKey struct{}

// WithRequestID returns a context under which the store proposes its
// command with request id id instead of a fresh one.
func WithRequestID(ctx context.Context, id command.ReqID) context.Context {
	return context.WithValue(ctx, reqIDKey{}, id)
}

// RequestIDFor derives a request id from a client's retry key and the
// request it names. The parts are length-prefixed, so no two different
// part lists give the same input; a different request under the same
// client key is a different id (it never recalls another request's answer).
func RequestIDFor(parts ...[]byte) command.ReqID {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		binary.BigEndian.PutUint64(n[:], uint64(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	var id command.ReqID
	copy(id[:], h.Sum(nil))
	return id
}

// RequestID is the request id a command proposed under ctx carries: the
// one ctx names (WithRequestID), or a fresh one.
func RequestID(ctx context.Context) command.ReqID {
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
func NewRequestID() command.ReqID {
	fresh.once.Do(func() { rand.Read(fresh.prefix[:]) })
	var id command.ReqID
	copy(id[:8], fresh.prefix[:])
	binary.BigEndian.PutUint64(id[8:], fresh.seq.Add(1))
	return id
}

// RequestIDFrom returns the request id ctx carries (WithRequestID).
func RequestIDFrom(ctx context.Context) (command.ReqID, bool) {
	id, ok := ctx.Value(reqIDKey{}).(command.ReqID)
	return id, ok && !id.IsZero()
}
