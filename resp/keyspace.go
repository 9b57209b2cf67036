package resp

import (
	"bytes"
	"context"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// Keyspaces (SELECT 0-15). A connection begins in keyspace 0, the HTTP
// API's; SELECT moves it. The listener names every key to the store as
// command.KeyspaceKey stores it, in one place for each path a key takes: a
// write's plan (inKeyspace, before it is proposed, queued in a transaction
// or applied in a script's sandbox), a read (conn.local), a watch
// (cmdWatch) and a walk of the keyspace (eachKey). The client's key is
// checked (storeapi.CheckKVKey) before it is mapped, so no client key can
// reach another keyspace's, or idemgate's own, stored keys.

// key is where the connection's keyspace stores the client's key k.
func (c *conn) key(k []byte) []byte { return command.KeyspaceKey(c.db, k) }

// inKeyspace maps a plan's KV commands and watches to the connection's
// keyspace; a reserved client key refuses the plan whole (none of its keys
// is written). A list move's destination (Value) is mapped here; a
// rename's by its planner, which knows its keyspace (COPY ... DB n, MOVE).
func (c *conn) inKeyspace(p plan) plan {
	if p.err != "" || (len(p.ops) == 0 && len(p.watches) == 0 && p.block == nil) || c.storedAsNamed(p) {
		return p
	}
	ops := make([]*command.Command, len(p.ops))
	for i, op := range p.ops {
		ops[i] = op
		if !command.InTx(op.Type) { // not a command of the KV keyspace (a form token)
			continue
		}
		if err := storeapi.CheckKVKey(op.Key); err != nil {
			return plan{err: errorReply(err)}
		}
		m := *op
		m.Key = c.key(op.Key)
		if op.Type.MoreKeys() && len(op.Value) > 0 { // BLPOP's further keys, a set algebra's: a list's encoding
			more, err := command.DecodeList(op.Value)
			if err != nil {
				return plan{err: errorReply(err)}
			}
			stored := make([][]byte, len(more))
			for j, k := range more {
				if err := storeapi.CheckKVKey(k); err != nil {
					return plan{err: errorReply(err)}
				}
				stored[j] = c.key(k)
			}
			m.Value = command.EncodeList(stored)
		}
		if op.Type == command.TypeListMove { // a move's destination
			if err := storeapi.CheckKVKey(op.Value); err != nil {
				return plan{err: errorReply(err)}
			}
			m.Value = c.key(op.Value)
		}
		ops[i] = &m
	}
	p.ops = ops
	if p.block != nil { // a blocking pop waits on its keys as stored
		b := *p.block
		b.keys = make([][]byte, len(p.block.keys))
		for i, k := range p.block.keys {
			if err := storeapi.CheckKVKey(k); err != nil {
				return plan{err: errorReply(err)}
			}
			b.keys[i] = c.key(k)
		}
		p.block = &b
	}
	if len(p.watches) > 0 {
		ws := make([]command.Watch, len(p.watches))
		for i, w := range p.watches {
			if err := storeapi.CheckKVKey(w.Key); err != nil {
				return plan{err: errorReply(err)}
			}
			w.Key = c.key(w.Key)
			ws[i] = w
		}
		p.watches = ws
	}
	return p
}

// storedAsNamed reports whether every key of p is stored as the client
// named it, so inKeyspace has nothing to map or copy: keyspace 0, no empty
// key (stored under the keyspace prefix), no reserved key (refused), no
// blocking pop (its further keys are in its value), no move whose
// destination is not. Most writes take it.
func (c *conn) storedAsNamed(p plan) bool {
	if c.db != 0 || p.block != nil {
		return false
	}
	for _, op := range p.ops {
		if command.InTx(op.Type) && (op.Type.MoreKeys() || len(op.Key) == 0 || storeapi.CheckKVKey(op.Key) != nil) {
			return false
		}
		if op.Type == command.TypeListMove && (len(op.Value) == 0 || storeapi.CheckKVKey(op.Value) != nil) {
			return false
		}
	}
	for _, w := range p.watches {
		if len(w.Key) == 0 || storeapi.CheckKVKey(w.Key) != nil {
			return false
		}
	}
	return true
}

// eachKey calls fn with every live key of the connection's keyspace (the
// client's key), in stored order, from this node's applied state, until fn
// returns false.
func (c *conn) eachKey(ctx context.Context, fn func(key []byte) bool) error {
	prefix := command.KeyspacePrefix(c.db)
	if c.db == 0 {
		// Keyspace 0's keys are stored as named, after every reserved
		// key; its empty key alone is under the prefix.
		if _, ok, err := c.localStored(ctx, prefix); err != nil || (ok && !fn(nil)) {
			return err
		}
		return c.s.store.EachKV(ctx, true, storeapi.FirstKVKey, fn)
	}
	return c.s.store.EachKV(ctx, true, prefix, func(k []byte) bool {
		if !bytes.HasPrefix(k, prefix) {
			return false
		}
		return fn(k[len(prefix):])
	})
}
