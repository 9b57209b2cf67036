package command

import (
	"encoding/binary"
	"errors"
	"fmt"
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

// Effects is a decoded effects body.
type Effects struct {
	Now    int64 // the clock the script ran at
	Reads  []ScriptRead
	Writes []Command
}

// EncodeEffects is the effects body of a script run at now (Body layout
// above).
func EncodeEffects(now int64, reads []ScriptRead, writes [][]byte) []byte {
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

// DecodeEffects parses an effects body; every write must be a valid KV
// command a script may make. Slices alias b.
func DecodeEffects(b []byte) (*Effects, error) {
	r := reader{b: b}
	e := &Effects{Now: r.varint()}
	if n := r.count(); n > 0 {
		e.Reads = make([]ScriptRead, n)
		for i := range e.Reads {
			e.Reads[i].Key = r.bytes()
			switch live := r.byte(); live {
			case 0, 1:
				e.Reads[i].Live = live == 1
			default:
				r.fail("liveness")
			}
			e.Reads[i].Version = r.uvarint()
			e.Reads[i].ExpiresAt = r.varint()
		}
	}
	if n := r.count(); n > 0 {
		e.Writes = make([]Command, n)
		for i := range e.Writes {
			w := r.bytes()
			if r.err != nil {
				break
			}
			if err := Decode(w, &e.Writes[i]); err != nil {
				return nil, fmt.Errorf("write %d: %w", i, err)
			}
			if op := e.Writes[i].Type.Op(); !op.Script || !op.Write {
				return nil, fmt.Errorf("write %d: a script cannot make a %s", i, e.Writes[i].Type)
			}
		}
	}
	if r.err != nil {
		return nil, r.err
	}
	if len(r.b) != 0 {
		return nil, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if e.Now <= 0 {
		return nil, errors.New("no clock")
	}
	return e, nil
}

// The row's check reads the table (the nested commands' rows): set here,
// once it is built.
func init() { commands[TypeScriptEffects].check = checkScriptEffects }

func checkScriptEffects(c *Command) error {
	_, err := DecodeEffects(c.Body)
	return err
}
