package fsm

// Transactions (package command's tx.go: MULTI/EXEC with WATCH) are one
// command, applied here whole in the entry's bbolt transaction: either
// its watches all hold and every command applies, or none does.

import (
	"encoding/binary"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// applySub is a command's apply, for a transaction's own commands: set
// in init, since the table's row for a transaction names kvTx, which
// calls it.
var applySub func(a *applier, tx *bolt.Tx, c *command.Command, rev uint64) *command.Result

func init() {
	applySub = func(a *applier, tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
		return commands[c.Type].apply(a, tx, c, rev)
	}
}

// kvRead is a read in the log: it changes nothing (but the lazy removal of
// the key, if it expired).
func (a *applier) kvRead(tx *bolt.Tx, c *command.Command, _ uint64) *command.Result {
	e, ok, err := a.liveKV(boltKV{a, tx}, c.Key)
	switch {
	case err != nil:
		return &command.Result{Code: command.CodeStorage}
	case !ok:
		return &command.Result{Code: command.CodeNotFound}
	}
	r := &command.Result{Code: command.CodeOK, Version: e.Version, ExpiresAt: e.ExpiresAt, Fence: uint64(e.Kind)}
	if c.Flags&command.FlagReadValue != 0 {
		r.Value = e.Clone().Value
	}
	return r
}

// kvTx applies a transaction (see package command's tx.go). Its first command
// has the transaction's revision, each later one the next (nextRev), so
// every write keeps a revision of its own.
func (a *applier) kvTx(tx *bolt.Tx, c *command.Command, rev uint64) *command.Result {
	t, err := command.DecodeTx(c.Value)
	if err != nil {
		return &command.Result{Code: command.CodeBadCommand}
	}
	for _, w := range t.Watches {
		e, ok, err := a.liveKV(boltKV{a, tx}, w.Key)
		if err != nil {
			return &command.Result{Code: command.CodeStorage}
		}
		if ok != (w.Version != 0) || (ok && (e.Version != w.Version || e.ExpiresAt != w.ExpiresAt)) {
			return &command.Result{Code: command.CodeVersionMismatch}
		}
	}
	budget := c.Version
	out := make(Results, len(t.Cmds))
	var sub command.Command
	for i, b := range t.Cmds {
		if err := command.Decode(b, &sub); err != nil {
			out[i] = &command.Result{Code: command.CodeBadCommand}
			continue
		}
		if i > 0 {
			rev = a.nextRev(0)
		}
		if n := a.replyBytes(tx, &sub); n > budget {
			out[i] = &command.Result{Code: command.CodeReplyTooLarge}
			continue
		} else {
			budget -= n
		}
		r := applySub(a, tx, &sub, rev)
		if r.Code == command.CodeStorage {
			return r
		}
		if sub.Type == command.TypeCollRead {
			// A read changes nothing: its answer, once known, is
			// counted against the budget, or dropped.
			if n := uint64(len(r.Value)); n > budget {
				r = &command.Result{Code: command.CodeReplyTooLarge}
			} else {
				budget -= n
			}
		}
		if sub.Type == command.TypeKVSet && sub.Flags&command.FlagReturnOld == 0 {
			r.Value = nil // SET NX's current value: not asked for
		}
		out[i] = r
	}
	return command.EncodeTxResults(out)
}

// replyBytes is what command c's value would add to a transaction's
// results: the key's value, for the commands that answer it.
func (a *applier) replyBytes(tx *bolt.Tx, c *command.Command) uint64 {
	switch {
	case c.Type == command.TypeSetPop:
		// At most its count of members, each at most MaxFieldLen.
		h, ok := liveColl(tx, c.Key, a.now)
		if !ok {
			return 0
		}
		n := binary.BigEndian.Uint64(c.Body[8:])
		if c.Flags&command.FlagCollCount == 0 {
			n = 1
		}
		return min(n, h.Count) * (command.MaxFieldLen + binary.MaxVarintLen32)
	case c.Type == command.TypeKVRead && c.Flags&command.FlagReadValue != 0, c.Type == command.TypeKVGetDel,
		c.Type == command.TypeKVSet && c.Flags&command.FlagReturnOld != 0, c.Type == command.TypeKVExpire && c.Flags&command.FlagExpireGet != 0:
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
func (f *FSM) ReadTx(r command.TxRequest, now time.Time) (*command.Result, error) {
	for _, c := range r.Commands {
		if c.Type.Op().Write || !command.InTx(c.Type) {
			return nil, fmt.Errorf("%w: a %s in a transaction of reads", command.ErrBadCommand, c.Type)
		}
	}
	c := command.KVTxCommand(r)
	if err := c.Validate(); err != nil {
		return nil, err
	}
	// One read and no watch (a hash's or a set's read outside a
	// transaction) is a point read, as KV's: served from the open
	// transaction, if one is, rather than committing it (commit.go).
	view := f.view
	if len(r.Commands) == 1 && len(r.Watches) == 0 {
		view = f.pointView
	}
	var res *command.Result
	err := view(func(tx *bolt.Tx) error {
		var expired [8]int64
		a := applier{f: f, now: f.readNow(now), rev: f.rev.Load(), readOnly: true, expiredDelta: &expired}
		res = a.kvTx(tx, c, a.nextRev(0))
		if res.Code == command.CodeStorage {
			return command.ErrStorage
		}
		return nil // the results are copies (kvRead, EncodeTxResults)
	})
	return res, err
}

// The applier's rows of this file's commands (commands.go joins them).
var txApplies = applies{
	command.TypeKVRead: {apply: (*applier).kvRead},
	command.TypeKVTx:   {remembered: true, apply: (*applier).kvTx},
}

// liveColl is the header of the collection under key, if it is one that
// lives at now.
func liveColl(tx *bolt.Tx, key []byte, now int64) (command.CollHeader, bool) {
	e, ok := decodeKV(tx.Bucket(bucketKV).Get(key))
	if !ok || !e.Kind.IsColl() || (e.ExpiresAt != 0 && e.ExpiresAt <= now) {
		return command.CollHeader{}, false
	}
	return command.DecodeCollHeader(e.Value)
}
