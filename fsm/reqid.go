package fsm

import (
	"encoding/binary"
	"strconv"
	"time"

	bolt "go.etcd.io/bbolt"
)

// RequestIDRetention is the least time the state machine remembers a
// request id (by its clock); it remembers each for under twice that.
// Proposers stop retrying a request id well before it (raftstore bounds
// retries by its apply timeout, 5 s by default), so a retry always finds the
// first attempt's result. A constant, not a setting: every replica must
// forget the same ids at the same log index.
const RequestIDRetention = 2 * time.Minute

// Request ids live in generations: child buckets of "reqids" named by
// now / RequestIDRetention. A lookup checks the current and the previous
// generation; the first command of a new generation drops every older one.
// Which generation a command falls in depends only on the state machine's
// clock, so all replicas drop the same ids at the same index, however they
// batch. This costs one bucket and no per-command pruning.
//
//	reqids/<generation>: request id -> stamp (8) | encoded result

// codeReread marks a remembered result that must be recomputed on a retry
// (a begin that found an existing record: storing the record's body twice
// would double the write for nothing).
const codeReread = Code(0xff)

func generationName(g int64) []byte { return strconv.AppendInt(nil, g, 10) }

// recall returns the result remembered for id, or nil.
func (a *applier) recall(tx *bolt.Tx, id ReqID) *Result {
	g := a.now / int64(RequestIDRetention)
	if a.gens == nil {
		a.gens = tx.Bucket(bucketReqIDs)
	}
	for _, gen := range []int64{g, g - 1} {
		b := a.gens.Bucket(generationName(gen))
		if b == nil {
			continue
		}
		v := b.Get(id[:])
		if len(v) < 8 {
			continue
		}
		r, err := DecodeResult(v[8:])
		if err != nil || r.Code == codeReread {
			// The first attempt found an existing record; the current
			// one is the right answer for the retry too.
			return nil
		}
		// r is answered after this batch commits, and the commit may
		// remap the file: it must not alias the transaction's memory.
		return r.Clone()
	}
	return nil
}

// remember stores id's result in the current generation, opening it (and
// dropping older generations) when this is its first command.
func (a *applier) remember(tx *bolt.Tx, id ReqID, r *Result) error {
	g := a.now / int64(RequestIDRetention)
	if a.gen == nil || a.genNo != g {
		if a.gens == nil {
			a.gens = tx.Bucket(bucketReqIDs)
		}
		name := generationName(g)
		b := a.gens.Bucket(name)
		if b == nil {
			if err := a.dropGenerationsBefore(g - 1); err != nil {
				return err
			}
			var err error
			if b, err = a.gens.CreateBucket(name); err != nil {
				return err
			}
		}
		a.gen, a.genNo = b, g
	}
	stored := r
	if r.Code == CodeExists && r.Record != nil {
		stored = &Result{Code: codeReread}
	}
	// A fresh buffer each time: bbolt keeps referring to a value until the
	// transaction commits.
	buf := binary.BigEndian.AppendUint64(make([]byte, 0, 32), uint64(a.now))
	return a.gen.Put(id[:], stored.Encode(buf))
}

func (a *applier) dropGenerationsBefore(g int64) error {
	var old [][]byte
	err := a.gens.ForEach(func(k, v []byte) error {
		if n, err := strconv.ParseInt(string(k), 10, 64); err == nil && n < g && v == nil {
			old = append(old, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range old {
		if err := a.gens.DeleteBucket(k); err != nil {
			return err
		}
	}
	return nil
}

// LookupRequest returns the result the state machine remembers for a
// request id, and whether it has applied that request at all (within
// RequestIDRetention). Tests settle operations whose answer was lost with
// it: a command that is not remembered never applied.
func (f *FSM) LookupRequest(id ReqID) (*Result, bool, error) {
	var out *Result
	err := f.view(func(tx *bolt.Tx) error {
		a := applier{f: f, now: f.now.Load()}
		g := a.now / int64(RequestIDRetention)
		gens := tx.Bucket(bucketReqIDs)
		for _, gen := range []int64{g, g - 1} {
			b := gens.Bucket(generationName(gen))
			if b == nil {
				continue
			}
			if v := b.Get(id[:]); len(v) >= 8 {
				r, err := DecodeResult(v[8:])
				if err != nil {
					return err
				}
				out = r.Clone()
				return nil
			}
		}
		return nil
	})
	return out, out != nil, err
}
