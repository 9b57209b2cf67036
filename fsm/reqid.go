package fsm

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strconv"
	"time"

	"github.com/idemgate/idemgate/command"
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
//	reqids/<generation>: request id -> remembered answer
//
// What a retry needs, and no more. A retry (the same request id again)
// must be answered with what the first attempt got, or with an answer that
// is linearizable for the same operation: its caller is still waiting, so
// any point between its first proposal and this retry is a valid point for
// the operation to take effect — once.
//
//   - A command that changed nothing is not remembered: its retry is
//     applied again, as if the first attempt had never been. That is the
//     operation taking effect at the retry's point. These are the outcomes
//     every command returns before it writes anything (noEffect): a
//     SETNX, SET XX or compare-and-set whose condition failed (Exists,
//     NotFound, VersionMismatch), a GETDEL or DEL of a missing key or of
//     another version, an INCR of a non-integer or past the range, an
//     EXPIRE of a missing key or whose condition failed (Unchanged), a
//     begin that found a record (Exists: re-reading it also shows the
//     record's progress since), a complete, release or mark-unknown of a
//     record that is gone, fenced by another owner or in the wrong state,
//     a token issued twice or consumed when absent, and a command that
//     did not decode. Their only write is the lazy removal of an expired
//     entry the command looked at, which a re-run finds already done.
//     Each command has a revision of its own (applier.nextRev) whether it
//     is answered from memory or applied again, so a re-run spends no
//     extra revision; a re-run that now takes effect writes its own.
//   - A command that changed state (OK, Created, Suspect: a refused
//     suspect logged one; Storage: unknown) is remembered with the fields
//     its answer carries: code, fence, version, expiry, the value a GETDEL
//     removed or a SET GET replaced or an INCR made (gone or changed
//     since, so it cannot be re-read), the suspect's key. Applying it again
//     would apply it twice.
//
// No-ops, sweeps (TypeExpire) and the cluster's own facts are never
// remembered (the command table says so; applyOne does not look their ids
// up): each may be applied any number of times. Nor is a command whose
// row's settled says the state it leaves answers its retry as the first
// attempt was, for longer than this memory would: a once begin or complete
// whose claim is kept at least 2 × RequestIDRetention (the claim records
// its begin's request id).
//
// The remembered answer's encoding, one flag bit per present field:
//
//	0x80|fields (1) | code (1) | [fence uvarint] [version uvarint]
//	[expiry varint] [value (len-prefixed)] [suspect (len-prefixed)] [record]
//
// Entries written before it (stamp (8) | Result.Encode) are still read: a
// file upgraded in place holds them for up to 2 × RequestIDRetention. Their
// first byte is the top byte of a non-negative clock, below 0x80. Such an
// entry of a no-effect outcome is ignored exactly like a missing one, so a
// replica that replays the entry with this build (and never stored it)
// answers the retry as one that applied it with the previous build.

// codeReread marks, in entries of the previous encoding, a begin that
// found an existing record (re-read on a retry, as now every no-effect
// outcome is).
const codeReread = command.Code(0xff)

// Fields of a remembered answer.
const (
	rememberedMark    = 0x80
	rememberedFence   = 1 << 0
	rememberedVersion = 1 << 1
	rememberedExpiry  = 1 << 2
	rememberedValue   = 1 << 3
	rememberedSuspect = 1 << 4
	rememberedRecord  = 1 << 5
)

// noEffect reports whether a command that answered with code changed no
// state (see above).
func noEffect(code command.Code) bool {
	switch code {
	case command.CodeExists, command.CodeNotFound, command.CodeVersionMismatch, command.CodeFenceMismatch, command.CodeWrongState,
		command.CodeBadCommand, command.CodeNotInteger, command.CodeOverflow, command.CodeUnchanged, command.CodeReplyTooLarge, command.CodeOutOfRange, codeReread:
		return true
	}
	return false
}

func generationName(g int64) []byte { return strconv.AppendInt(nil, g, 10) }

// lookup returns the answer remembered for id in the current or the
// previous generation at now, or nil, reading with get (a bucket's Get).
// Its slices alias the transaction.
func lookup(gens *bolt.Bucket, get func(*bolt.Bucket, []byte) []byte, now int64, id command.ReqID) (*command.Result, error) {
	g := now / int64(RequestIDRetention)
	for _, gen := range []int64{g, g - 1} {
		b := gens.Bucket(generationName(gen))
		if b == nil {
			continue
		}
		if v := get(b, id[:]); v != nil {
			r, err := decodeRemembered(v)
			if err != nil || noEffect(r.Code) {
				return nil, err
			}
			return r, nil
		}
	}
	return nil, nil
}

// recall returns the result remembered for id, or nil.
func (a *applier) recall(tx *bolt.Tx, id command.ReqID) *command.Result {
	if a.gens == nil {
		a.gens = tx.Bucket(bucketReqIDs)
	}
	// An entry that does not decode is damage of this replica's file; the
	// command is applied again rather than answered with garbage.
	r, _ := lookup(a.gens, a.get, a.now, id)
	// r is answered after this batch commits, and the commit may remap
	// the file: it must not alias the transaction's memory.
	return r.Clone()
}

// remember stores id's result in the current generation, opening it (and
// dropping older generations) when this is its first command. A result
// that changed nothing is not stored.
func (a *applier) remember(tx *bolt.Tx, id command.ReqID, r *command.Result) error {
	if noEffect(r.Code) {
		return nil
	}
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
	if wantsOrder(a.gen) {
		// A fresh id starts with the time its node made it
		// (storeapi.NewRequestID): near the end of the generation, give or
		// take a forwarding's delay. A build before that made a prefix and
		// a sequence: in order when the id before it has its prefix. Ids
		// derived from a client's key (RequestIDFor) land anywhere.
		c := a.cursor(a.gen)
		inOrder := nearEnd(c, id[:])
		if !inOrder {
			k := predecessor(c, id[:])
			inOrder = len(k) == len(id) && bytes.Equal(k[:8], id[:8])
		}
		noteOrder(a.gen, inOrder)
	}
	// A fresh buffer each time: bbolt keeps referring to a value until the
	// transaction commits.
	return a.gen.Put(id[:], appendRemembered(make([]byte, 0, 16+len(r.Value)+len(r.Suspect)), r))
}

// nearEndKeys is how many of a generation's ids may follow an insert that
// still counts as in order: fewer than half a leaf's (a leaf filled to
// appendFill holds about 80), so the insert lands in the last leaf or the
// one before it, which appendFill leaves a tenth free for such late ids.
const nearEndKeys = 32

// nearEnd reports whether fewer than nearEndKeys keys of c's bucket
// follow key.
func nearEnd(c *bolt.Cursor, key []byte) bool {
	k, _ := c.Seek(key)
	for range nearEndKeys {
		if k == nil {
			return true
		}
		k, _ = c.Next()
	}
	return false
}

// appendRemembered appends the remembered form of r to dst.
func appendRemembered(dst []byte, r *command.Result) []byte {
	fields := byte(0)
	set := func(bit byte, present bool) {
		if present {
			fields |= bit
		}
	}
	set(rememberedFence, r.Fence != 0)
	set(rememberedVersion, r.Version != 0)
	set(rememberedExpiry, r.ExpiresAt != 0)
	set(rememberedValue, len(r.Value) > 0) // the wire, too, reads an empty value as nil
	set(rememberedSuspect, len(r.Suspect) > 0)
	set(rememberedRecord, r.Record != nil)
	dst = append(dst, rememberedMark|fields, byte(r.Code))
	if fields&rememberedFence != 0 {
		dst = binary.AppendUvarint(dst, r.Fence)
	}
	if fields&rememberedVersion != 0 {
		dst = binary.AppendUvarint(dst, r.Version)
	}
	if fields&rememberedExpiry != 0 {
		dst = binary.AppendVarint(dst, r.ExpiresAt)
	}
	if fields&rememberedValue != 0 {
		dst = appendBytes(dst, r.Value)
	}
	if fields&rememberedSuspect != 0 {
		dst = appendBytes(dst, r.Suspect)
	}
	if fields&rememberedRecord != 0 {
		dst = r.Record.Encode(dst)
	}
	return dst
}

// decodeRemembered parses a remembered answer of either encoding. Its
// slices alias v. A begin's reread marker of the previous encoding comes
// back as a result of code codeReread.
func decodeRemembered(v []byte) (*command.Result, error) {
	if len(v) > 0 && v[0]&rememberedMark == 0 { // stamp (8) | Result.Encode
		if len(v) < 9 {
			return nil, fmt.Errorf("%w: remembered result: %d bytes", command.ErrBadCommand, len(v))
		}
		if command.Code(v[8]) == codeReread {
			return &command.Result{Code: codeReread}, nil
		}
		return command.DecodeResult(v[8:])
	}
	rd := reader{b: v}
	fields := rd.byte()
	r := &command.Result{Code: command.Code(rd.byte())}
	if fields&rememberedFence != 0 {
		r.Fence = rd.uvarint()
	}
	if fields&rememberedVersion != 0 {
		r.Version = rd.uvarint()
	}
	if fields&rememberedExpiry != 0 {
		r.ExpiresAt = rd.varint()
	}
	if fields&rememberedValue != 0 {
		r.Value = rd.bytes()
	}
	if fields&rememberedSuspect != 0 {
		r.Suspect = rd.bytes()
	}
	if rd.err != nil {
		return nil, fmt.Errorf("%w: remembered result: %v", command.ErrBadCommand, rd.err)
	}
	if !r.Code.Known() || fields&^(rememberedMark|rememberedFence|rememberedVersion|rememberedExpiry|
		rememberedValue|rememberedSuspect|rememberedRecord) != 0 {
		return nil, fmt.Errorf("%w: remembered result: code %d, fields %#x", command.ErrBadCommand, r.Code, fields)
	}
	if fields&rememberedRecord != 0 {
		rec, err := command.DecodeRecord(rd.b)
		if err != nil {
			return nil, err
		}
		r.Record = rec
	} else if len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: remembered result: trailing bytes", command.ErrBadCommand)
	}
	return r, nil
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
// request id (within RequestIDRetention), and whether it remembers one.
// Only commands that changed state are remembered: false means the request
// was never applied, or was applied and changed nothing (a refused SETNX,
// a GETDEL of a missing key: see noEffect). Either way the state holds no
// trace of it, and a retry applies it afresh. A leader settles with it a
// follower's script sent again after its answer was lost (raftstore's
// RequestApplied); tests settle operations whose answer was lost: a
// remembered one took effect with its result; one that is not may be
// left out of the history, which stays linearizable without an operation
// that changed nothing.
func (f *FSM) LookupRequest(id command.ReqID) (*command.Result, bool, error) {
	var out *command.Result
	err := f.view(func(tx *bolt.Tx) error {
		r, err := lookup(tx.Bucket(bucketReqIDs), (*bolt.Bucket).Get, f.now.Load(), id)
		out = r.Clone()
		return err
	})
	return out, out != nil, err
}
