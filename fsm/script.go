package fsm

import (
	"encoding/binary"
	"errors"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// A script's effects. A Lua script is not run by the state machine: the
// node a client sent it to runs it once, against its applied state, in a
// sandbox (sandbox.go) that records what it read and computes what it
// writes with the KV commands' own apply functions; its log entry is the
// effects, as Redis 7 replicates a script's effects rather than the
// script. Applying them is optimistic concurrency: every key the script
// touched must still be as the script saw it (live with the same version
// and expiry, or not live), else nothing is applied and the result is
// CodeConflict (the node runs the script again on newer state). When the
// check passes, the commands are applied in order in the entry's
// transaction, at the clock the script ran at, so each answers on every
// replica what it answered in the sandbox: the script's reply, computed
// there, is true of the state the entry produced. A script never runs
// here, so none can stall or diverge the log, however long it runs or
// whatever it allocates.
//
// Body layout:
//
//	now (varint) | reads (uvarint) | reads × (key | live (1) | version (uvarint) | expires (varint))
//	| writes (uvarint) | writes × encoded command (length-prefixed)

// ScriptRead is what a script saw of one key: live, at that version and
// expiry, or not live.
type ScriptRead struct {
	Key       []byte
	Live      bool
	Version   uint64
	ExpiresAt int64
}

// scriptEffects is a decoded effects body.
type scriptEffects struct {
	now    int64
	reads  []ScriptRead
	writes []Command
}

func encodeEffects(now int64, reads []ScriptRead, writes [][]byte) []byte {
	n := 16
	for _, r := range reads {
		n += len(r.Key) + 24
	}
	for _, w := range writes {
		n += len(w) + 4
	}
	b := make([]byte, 0, n)
	b = binary.AppendVarint(b, now)
	b = binary.AppendUvarint(b, uint64(len(reads)))
	for _, r := range reads {
		b = appendBytes(b, r.Key)
		live := byte(0)
		if r.Live {
			live = 1
		}
		b = append(b, live)
		b = binary.AppendUvarint(b, r.Version)
		b = binary.AppendVarint(b, r.ExpiresAt)
	}
	b = binary.AppendUvarint(b, uint64(len(writes)))
	for _, w := range writes {
		b = appendBytes(b, w)
	}
	return b
}

// decodeEffects parses an effects body; every write must be a valid KV
// command a script may make. Slices alias b.
func decodeEffects(b []byte) (*scriptEffects, error) {
	r := reader{b: b}
	e := &scriptEffects{now: r.varint()}
	if n := r.count(); n > 0 {
		e.reads = make([]ScriptRead, n)
		for i := range e.reads {
			e.reads[i].Key = r.bytes()
			switch live := r.byte(); live {
			case 0, 1:
				e.reads[i].Live = live == 1
			default:
				r.fail("liveness")
			}
			e.reads[i].Version = r.uvarint()
			e.reads[i].ExpiresAt = r.varint()
		}
	}
	if n := r.count(); n > 0 {
		e.writes = make([]Command, n)
		for i := range e.writes {
			w := r.bytes()
			if r.err != nil {
				break
			}
			if err := Decode(w, &e.writes[i]); err != nil {
				return nil, fmt.Errorf("write %d: %w", i, err)
			}
			if commands[e.writes[i].Type].kv == nil {
				return nil, fmt.Errorf("write %d: a script cannot make a %s", i, e.writes[i].Type)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if e.now <= 0 {
		return nil, errors.New("no clock")
	}
	return e, nil
}

// The row's check and apply read the table (the nested commands' rows):
// set here, once it is built.
func init() {
	commands[TypeScriptEffects].check = checkScriptEffects
	commands[TypeScriptEffects].apply = (*applier).scriptEffects
}

func checkScriptEffects(c *Command) error {
	_, err := decodeEffects(c.Body)
	return err
}

// scriptEffects is TypeScriptEffects's apply (see the top of this file).
func (a *applier) scriptEffects(tx *bolt.Tx, c *Command, rev uint64) *Result {
	e, err := decodeEffects(c.Body)
	if err != nil {
		return &Result{Code: CodeBadCommand}
	}
	kv := boltKV{a, tx}
	// At the state machine's clock: a key the script saw live must be
	// live now (and so at the script's clock, which is not later than
	// the read it saw it live at); one it did not see live must not be,
	// and an expired entry of it is removed here, so the writes below
	// find it absent, as the sandbox did.
	for _, r := range e.reads {
		cur, live, err := a.liveKV(kv, r.Key)
		if err != nil {
			return &Result{Code: CodeStorage}
		}
		if (live != r.Live || (live && (cur.Version != r.Version || cur.ExpiresAt != r.ExpiresAt))) && !mutantScriptNoReadCheck {
			return &Result{Code: CodeConflict}
		}
	}
	now := a.now
	a.now = e.now // the writes answer as they did in the sandbox
	defer func() { a.now = now }()
	for i := range e.writes {
		if i > 0 {
			rev = a.nextRev(0)
		}
		w := &e.writes[i]
		if r := commands[w.Type].kv(a, kv, w, rev); r.Code == CodeStorage {
			return r
		}
	}
	return &Result{Code: CodeOK}
}
