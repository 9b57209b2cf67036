package command

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// A transaction (Redis's MULTI/EXEC, with WATCH) is one command: the KV
// commands queued between MULTI and EXEC, in order, and the keys the
// client watched with what it saw of each. It is one log entry (or one
// command of a batch entry), so every replica applies it whole, in the
// entry's bbolt transaction, at one point of the log: nothing else runs
// between its commands, and either its watches all hold and every command
// applies, or none does. A command that fails (an INCR of a word) fails
// alone, as in Redis; the others apply.
//
// Its encoding, in Command.Value:
//
//	watches (uvarint) | watches × (key | version (uvarint) | expiry (varint))
//	commands (uvarint) | commands × (encoded command, length-prefixed)
//
// A watch holds when the key is as seen: absent (version 0) and still
// absent, or present at that version with that expiry. Any write of a
// key gives it a new version, and a change of its lifetime a new expiry,
// so a watched key written, deleted, given or stripped of a lifetime, or
// expired since is seen changed. A key absent at WATCH that is created
// and deleted again before EXEC is seen unchanged (Redis sees it
// touched): the state machine keeps no trace of deleted keys.
//
// Reads queued in the transaction (GET, EXISTS, TTL) are TypeKVRead
// commands among the others, so they see the state at that point of the
// transaction. The values the transaction's results carry (reads, GETDEL,
// SET ... GET) are bounded by Command.Version, the reply budget the
// proposer gives: a command whose value would take the results past it is
// not applied and answers CodeReplyTooLarge; so the results always fit in
// what the proposer can carry back. The result of the transaction is
// CodeVersionMismatch (a watch failed: nothing applied) or CodeOK with
// the commands' results, in order, in Value (TxResults).

// Bounds of a transaction.
const (
	// MaxTxCommands bounds the commands of one transaction.
	MaxTxCommands = 1 << 14
	// MaxTxWatches bounds the keys one transaction watches.
	MaxTxWatches = 1 << 14
)

// Watch is a watched key and what the client saw of it.
type Watch struct {
	Key       []byte
	Version   uint64 // 0: absent
	ExpiresAt int64
}

// TxRequest is a transaction: its watches, its commands (built by the KV
// constructors and KVReadCommand), and the bytes of values its results
// may carry.
type TxRequest struct {
	Watches     []Watch
	Commands    []*Command
	ReplyBudget int
}

// decodeSub is Decode, for a transaction's own commands: set in init,
// since Decode reads the command table, whose row names the check that
// calls it.
var decodeSub func([]byte, *Command) error

func init() {
	for t := range commands {
		if commands[t].Tx {
			txTypes[Type(t)] = true
		}
	}
	decodeSub = Decode
}

// txTypes are the commands a transaction may hold: the table's rows
// marked tx (filled in init).
var txTypes = map[Type]bool{}

// InTx reports whether a transaction may hold a command of type t.
func InTx(t Type) bool { return txTypes[t] }

// KVTxCommand is a transaction (see above).
func KVTxCommand(r TxRequest) *Command {
	var v []byte
	v = binary.AppendUvarint(v, uint64(len(r.Watches)))
	for _, w := range r.Watches {
		v = appendBytes(v, w.Key)
		v = binary.AppendUvarint(v, w.Version)
		v = binary.AppendVarint(v, w.ExpiresAt)
	}
	v = binary.AppendUvarint(v, uint64(len(r.Commands)))
	for _, c := range r.Commands {
		v = appendBytes(v, c.Encode(nil))
	}
	return &Command{Type: TypeKVTx, Value: v, Version: uint64(max(r.ReplyBudget, 0))}
}

// KVReadCommand reads a key inside a transaction: CodeOK with its
// version, expiry and kind (in Result.Fence: a read has no fence) and,
// with value, its value; or CodeNotFound.
func KVReadCommand(key []byte, value bool) *Command {
	c := &Command{Type: TypeKVRead, Key: key}
	if value {
		c.Flags = FlagReadValue
	}
	return c
}

// KVRead flags.
const (
	// FlagReadValue: the result carries the key's value.
	FlagReadValue byte = 1 << 0
)

// TxBody is a decoded transaction; its slices alias the command.
type TxBody struct {
	Watches []Watch
	Cmds    [][]byte // encoded commands
}

// DecodeTx parses a transaction (Command.Value; its layout above).
func DecodeTx(v []byte) (TxBody, error) {
	var t TxBody
	r := reader{b: v}
	n := r.uvarint()
	if n > MaxTxWatches || n > uint64(len(r.b)) {
		return t, fmt.Errorf("%d watches, over %d", n, MaxTxWatches)
	}
	t.Watches = make([]Watch, 0, n)
	for i := uint64(0); i < n && r.err == nil; i++ {
		w := Watch{Key: r.bytes(), Version: r.uvarint(), ExpiresAt: r.varint()}
		t.Watches = append(t.Watches, w)
	}
	m := r.uvarint()
	if m > MaxTxCommands || m > uint64(len(r.b)) {
		return t, fmt.Errorf("%d commands, over %d", m, MaxTxCommands)
	}
	t.Cmds = make([][]byte, 0, m)
	for i := uint64(0); i < m && r.err == nil; i++ {
		t.Cmds = append(t.Cmds, r.bytes())
	}
	if r.err != nil {
		return t, r.err
	}
	if len(r.b) != 0 {
		return t, fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return t, nil
}

// checkKVTx: the transaction decodes, its watched keys are keys, and each
// of its commands is a valid command of a type a transaction may hold
// (never a transaction).
func checkKVTx(c *Command) error {
	t, err := DecodeTx(c.Value)
	if err != nil {
		return err
	}
	for _, w := range t.Watches {
		if len(w.Key) == 0 || len(w.Key) > MaxStoredKeyLen {
			return errors.New("a watched key is empty or too long")
		}
	}
	var sub Command
	for i, b := range t.Cmds {
		typ, err := PeekType(b)
		if err != nil || !txTypes[typ] {
			return fmt.Errorf("command %d: not a command a transaction may hold", i)
		}
		if err := decodeSub(b, &sub); err != nil {
			return fmt.Errorf("command %d: %w", i, err)
		}
		if !sub.ReqID.IsZero() || sub.Stamp != 0 {
			return fmt.Errorf("command %d: a request id or stamp of its own", i)
		}
	}
	return nil
}

func checkKVRead(c *Command) error {
	if c.Flags&^FlagReadValue != 0 {
		return errors.New("unknown read flags")
	}
	return nil
}

// EncodeTxResults is a transaction's result (CodeOK) carrying rs, the
// results of its commands (TxResults reads them).
func EncodeTxResults(rs []*Result) *Result {
	var b []byte
	b = binary.AppendUvarint(b, uint64(len(rs)))
	for _, r := range rs {
		b = appendBytes(b, r.Encode(nil))
	}
	return &Result{Code: CodeOK, Value: b}
}

// TxResults is the results of a transaction's commands, in order, from
// the transaction's result (CodeOK). Their slices alias r's.
func TxResults(r *Result) ([]*Result, error) {
	if r.Code != CodeOK {
		return nil, fmt.Errorf("%w: a transaction's result of code %d has no results", ErrBadCommand, r.Code)
	}
	rd := reader{b: r.Value}
	n := rd.count()
	out := make([]*Result, 0, n)
	for i := 0; i < n && rd.err == nil; i++ {
		sub, err := DecodeResult(rd.bytes())
		if err != nil {
			return nil, err
		}
		out = append(out, sub)
	}
	if rd.err != nil || len(rd.b) != 0 {
		return nil, fmt.Errorf("%w: a transaction's results", ErrBadCommand)
	}
	return out, nil
}
