package fsm

// Transactions (package command's tx.go: MULTI/EXEC with WATCH) are one
// command, applied here whole in the entry's bbolt transaction: either
// its watches all hold and every command applies, or none does.

import (
	"fmt"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// applySub is a command's apply, for a transaction's own commands: set
// in init, since the table's row for a transaction names kvTx, which
// calls it.
var applySub func(a *applier, tx *bolt.Tx, c *Command, rev uint64) *Result

func init() {
	applySub = func(a *applier, tx *bolt.Tx, c *Command, rev uint64) *Result {
		return commands[c.Type].apply(a, tx, c, rev)
	}
}

// kvRead is a read in the log: it changes nothing (but the lazy removal of
// the key, if it expired).
func (a *applier) kvRead(tx *bolt.Tx, c *Command, _ uint64) *Result {
	e, ok, err := a.liveKV(boltKV{a, tx}, c.Key)
	switch {
	case err != nil:
		return &Result{Code: CodeStorage}
	case !ok:
		return &Result{Code: CodeNotFound}
	}
	r := &Result{Code: CodeOK, Version: e.Version, ExpiresAt: e.ExpiresAt, Fence: uint64(e.Kind)}
	if c.Flags&FlagReadValue != 0 {
		r.Value = e.Clone().Value
	}
	return r
}

// kvTx applies a transaction (see package command's tx.go). Its first command
// has the transaction's revision, each later one the next (nextRev), so
// every write keeps a revision of its own.
func (a *applier) kvTx(tx *bolt.Tx, c *Command, rev uint64) *Result {
	t, err := command.DecodeTx(c.Value)
	if err != nil {
		return &Result{Code: CodeBadCommand}
	}
	for _, w := range t.Watches {
		e, ok, err := a.liveKV(boltKV{a, tx}, w.Key)
		if err != nil {
			return &Result{Code: CodeStorage}
		}
		if ok != (w.Version != 0) || (ok && (e.Version != w.Version || e.ExpiresAt != w.ExpiresAt)) {
			return &Result{Code: CodeVersionMismatch}
		}
	}
	budget := c.Version
	out := make(Results, len(t.Cmds))
	var sub Command
	for i, b := range t.Cmds {
		if err := Decode(b, &sub); err != nil {
			out[i] = &Result{Code: CodeBadCommand}
			continue
		}
		if i > 0 {
			rev = a.nextRev(0)
		}
		if n := a.replyBytes(tx, &sub); n > budget {
			out[i] = &Result{Code: CodeReplyTooLarge}
			continue
		} else {
			budget -= n
		}
		r := applySub(a, tx, &sub, rev)
		if r.Code == CodeStorage {
			return r
		}
		if sub.Type == TypeKVSet && sub.Flags&FlagReturnOld == 0 {
			r.Value = nil // SET NX's current value: not asked for
		}
		out[i] = r
	}
	return EncodeTxResults(out)
}

// replyBytes is what command c's value would add to a transaction's
// results: the key's value, for the commands that answer it.
func (a *applier) replyBytes(tx *bolt.Tx, c *Command) uint64 {
	switch {
	case c.Type == TypeKVRead && c.Flags&FlagReadValue != 0, c.Type == TypeKVGetDel,
		c.Type == TypeKVSet && c.Flags&FlagReturnOld != 0, c.Type == TypeKVExpire && c.Flags&FlagExpireGet != 0:
	default:
		return 0
	}
	e, ok := decodeKV(tx.Bucket(bucketKV).Get(c.Key))
	if !ok || (e.ExpiresAt != 0 && e.ExpiresAt <= a.now) {
		return 0
	}
	return uint64(len(e.Value))
}

// ReadTx answers a transaction of reads only (KVReadCommand) from this
// replica's applied state, as the state machine would apply it there, in
// one read transaction: its watches and reads see one state. Expiry is
// decided at max(now, the state machine's clock), as every read does. The
// caller makes it linearizable (a barrier first), as for every read.
func (f *FSM) ReadTx(r TxRequest, now time.Time) (*Result, error) {
	for _, c := range r.Commands {
		if c.Type != TypeKVRead {
			return nil, fmt.Errorf("%w: a %s in a transaction of reads", ErrBadCommand, c.Type)
		}
	}
	c := KVTxCommand(r)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	var res *Result
	err := f.view(func(tx *bolt.Tx) error {
		var expired [8]int64
		a := applier{f: f, now: f.readNow(now), rev: f.rev.Load(), readOnly: true, expiredDelta: &expired}
		res = a.kvTx(tx, c, a.nextRev(0))
		if res.Code == CodeStorage {
			return ErrStorage
		}
		return nil // the results are copies (kvRead, EncodeTxResults)
	})
	return res, err
}

// The applier's rows of this file's commands (commands.go joins them).
var txApplies = applies{
	TypeKVRead: {apply: (*applier).kvRead},
	TypeKVTx:   {remembered: true, apply: (*applier).kvTx},
}
