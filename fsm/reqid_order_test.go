package fsm

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// idSource makes request ids as a cluster's proposers do, by kind:
//
//   - "timed": storeapi.NewRequestID's, the time each node made the id
//     (up to a millisecond before the batch that carries it: a follower's
//     forwarded write arrives late), its prefix, a counter; three nodes;
//   - "one": a build before it, one proposer's prefix and sequence;
//   - "three": a build before it, three proposers interleaved;
//   - "hashed": the HTTP API's, a SHA-256 of an Idempotency-Key;
//   - "none": no request id.
type idSource struct {
	kind string
	seq  uint64
	rng  *rand.Rand
}

func newIDSource(kind string) *idSource {
	return &idSource{kind: kind, rng: rand.New(rand.NewPCG(1, 2))}
}

// next is the id of a command proposed for a batch stamped clock.
func (s *idSource) next(clock int64) command.ReqID {
	s.seq++
	var r command.ReqID
	switch s.kind {
	case "none":
	case "timed":
		binary.BigEndian.PutUint64(r[:8], uint64(clock-s.rng.Int64N(int64(time.Millisecond))))
		copy(r[8:12], "nod0")
		r[11] += byte(s.seq % 3)
		binary.BigEndian.PutUint32(r[12:], uint32(s.seq))
	case "hashed":
		h := sha256.Sum256(binary.BigEndian.AppendUint64(nil, s.seq))
		copy(r[:], h[:])
	case "one", "three":
		copy(r[:8], "proposer")
		if s.kind == "three" {
			r[7] = byte('0' + s.seq%3)
		}
		binary.BigEndian.PutUint64(r[8:], s.seq)
	default:
		panic("idSource: kind " + s.kind)
	}
	return r
}

// TestMemoryOfOrderedIDs: the request-id memory takes every kind of id a
// cluster proposes (a file written across a rolling upgrade holds several)
// and answers a retry of each, within the retention, with the first
// attempt's result, without applying it again; and ids that arrive about
// in order (the time-ordered ids of three nodes, a forwarded one late by
// up to a millisecond) leave the memory's leaves as full as one
// proposer's sequence does, where a split at bbolt's default would leave
// them half empty.
func TestMemoryOfOrderedIDs(t *testing.T) {
	for _, tc := range []struct {
		kind    string
		maxLeaf float64 // leaf bytes per remembered id; 0: not checked
	}{
		{"timed", 60}, {"one", 60}, {"three", 60}, {"hashed", 0},
	} {
		t.Run(tc.kind, func(t *testing.T) {
			h := newHarness(t)
			src := newIDSource(tc.kind)
			type sent struct {
				id    command.ReqID
				key   []byte
				value []byte
			}
			var first []sent
			const batches, batch = 300, 32
			for b := range batches {
				h.advance(batch * 50 * time.Microsecond)
				cs := make([]command.Command, batch)
				for i := range cs {
					k := fmt.Appendf(nil, "k:%06d", b*batch+i)
					cs[i] = command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("first"), Mode: command.SetNX, ReqID: src.next(h.clock)}
					if i%31 == 0 {
						first = append(first, sent{cs[i].ReqID, k, cs[i].Value})
					}
				}
				for i, r := range h.applyBatch(cs...) {
					if r.Code != command.CodeCreated {
						t.Fatalf("batch %d command %d: %+v", b, i, r)
					}
				}
			}
			if tc.maxLeaf > 0 {
				if got := memoryLeafBytes(t, h.f); got > tc.maxLeaf {
					t.Errorf("the memory's leaves take %.1f bytes an id, want at most %.0f (filled as appended)", got, tc.maxLeaf)
				}
			}
			// Retries a minute later, which would overwrite the value and
			// bump its version if applied again.
			h.advance(time.Minute)
			for _, s := range first {
				del := h.apply(command.Command{Type: command.TypeKVDelete, Key: s.key, ReqID: src.next(h.clock)})
				if del.Code != command.CodeOK {
					t.Fatalf("delete %s: %+v", s.key, del)
				}
				r := h.apply(command.Command{Type: command.TypeKVSet, Key: s.key, Value: []byte("retry"), Mode: command.SetNX, ReqID: s.id})
				if r.Code != command.CodeCreated {
					t.Fatalf("retry of %x = %+v, want the first attempt's Created", s.id, r)
				}
				if e, err := h.f.KV(s.key, h.now()); err != command.ErrNotFound {
					t.Fatalf("retry of %x applied again: %s = %q, %v", s.id, s.key, e.Value, err)
				}
			}
		})
	}
}
