package storeapi

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"sync"
	"sync/atomic"
	"time"

	"github.com/idemgate/idemgate/command"
)

// A caller that may retry a write after losing its answer (a client whose
// connection broke, a 503 after a timeout) names the write with a request
// id of its own. Every attempt under that id is applied at most once, and a
// retry within fsm.RequestIDRetention is answered with the first attempt's
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

// fresh is the process's one source of fresh request ids: the time it
// makes one (8 bytes of Unix nanoseconds, read through the monotonic clock
// so a process's ids never go back), a random prefix drawn once (4 bytes)
// and a counter (4 bytes). Ids never repeat across the stores of one
// process, nor, but for two processes drawing one prefix and making an id
// at the same nanosecond with the same counter, across processes; and no
// command pays a random read. Time first puts the ids of every node of a
// cluster in the order they are applied, give or take a forwarding's
// delay, so the state machine's memory of them (fsm's reqid.go) appends
// its inserts at the end of its B-tree instead of at one place per node.
// A fresh id is never derived again, only carried by its retries, so two
// builds that make fresh ids differently never disagree on a retry; an id
// derived from a caller's key (RequestIDFor) must be, and is unchanged.
var fresh struct {
	once   sync.Once
	base   time.Time // its wall reading is the time of the first id
	prefix [4]byte
	seq    atomic.Uint32
}

// NewRequestID is a fresh request id, never one a context names: each
// command of a pipeline gets its own (one id would make them one request).
func NewRequestID() command.ReqID {
	fresh.once.Do(func() {
		fresh.base = time.Now()
		rand.Read(fresh.prefix[:])
	})
	var id command.ReqID
	binary.BigEndian.PutUint64(id[:8], uint64(fresh.base.UnixNano()+int64(time.Since(fresh.base))))
	copy(id[8:12], fresh.prefix[:])
	binary.BigEndian.PutUint32(id[12:], fresh.seq.Add(1))
	return id
}

// RequestIDFrom returns the request id ctx carries (WithRequestID).
func RequestIDFrom(ctx context.Context) (command.ReqID, bool) {
	id, ok := ctx.Value(reqIDKey{}).(command.ReqID)
	return id, ok && !id.IsZero()
}
