package resp

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH, with Redis 7's
// semantics. After MULTI each command is checked as it arrives (the
// command exists, its arity, the grant may run it: Redis's queue-time
// errors) and answered +QUEUED, or its error, which makes EXEC answer
// EXECABORT. At EXEC the queued commands are planned (their syntax
// errors are then errors inside EXEC's reply, as in Redis) and their KV
// commands, reads included, go to the store as ONE state machine command
// (command.KVTxCommand), with the keys WATCH saw: every replica applies it
// whole at one point of the log, or, when a watched key changed since
// WATCH, not at all (EXEC answers a null array). A command that fails
// when applied (INCR of a word) fails alone; the others apply. The
// connection's own commands (PING, CLIENT SETNAME, ...) queued among them
// run at EXEC, in their place. So a client that was told EXEC failed has
// had none of its writes applied; one told it timed out does not know, as
// for any write.
const (
	msgExecAbort   = "EXECABORT Transaction discarded because of previous errors."
	msgNestedMulti = "ERR MULTI calls can not be nested"
	msgWatchInside = "ERR WATCH inside MULTI is not allowed"
	msgNoTx        = "ERR %s cannot run inside a transaction in idemgate: it is not a command of the KV keyspace; run it before MULTI or after EXEC"
	msgNoTxOwn     = "ERR %s cannot run inside a transaction in idemgate: it is a transaction of its own; run it before MULTI or after EXEC"
	msgTxCommands  = "ERR transaction too large: at most %d commands may be queued; EXEC will discard it"
	msgTxBytes     = "ERR transaction too large: at most %d bytes of arguments may be queued; EXEC will discard it"
	msgTooMany     = "ERR too many watched keys: at most %d; EXEC, DISCARD or UNWATCH first"
)

// multiState is an open MULTI's.
type multiState struct {
	queued []request
	cmds   []*redisCommand
	bytes  int
	// held is what the queued arguments hold against the listener's
	// budget: their bytes and each one's slice (budget.go).
	held  int64
	dirty bool // a command was refused when queued: EXEC aborts
}

func init() {
	flags := []string{"noscript", "loading", "stale", "fast", "allow_busy"}
	register(
		&redisCommand{name: "multi", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.multi = &multiState{}; c.w.ok() }},
		&redisCommand{name: "exec", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.w.errorLine("ERR EXEC without MULTI") }},
		&redisCommand{name: "discard", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.w.errorLine("ERR DISCARD without MULTI") }},
		&redisCommand{name: "watch", arity: -2, kind: kindConn, flags: flags, firstKey: 1, lastKey: -1, step: 1, conn: cmdWatch},
		&redisCommand{name: "unwatch", arity: 1, kind: kindConn, flags: flags,
			conn: func(c *conn, _ [][]byte) { c.unwatch(); c.w.ok() }},
	)
}

// watched is a connection's watches, in the order given, and their keys.
type watched struct {
	list []command.Watch
	keys map[string]struct{}
}

// cmdWatch reads what it watches after a barrier (unless READONLY), so
// what it saw is no older than any write acknowledged before it. (Not a
// read of the pipeline's: COMMAND would list it readonly, which it is not
// in Redis.)
func cmdWatch(c *conn, a [][]byte) {
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
	defer cancel()
	if !c.readonly && !mutantNoReadBarrier {
		if err := c.s.store.Barrier(ctx); err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
	}
	var add []command.Watch
	for _, k := range a[1:] {
		if err := storeapi.CheckKVKey(k); err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
		if _, dup := c.watches.keys[string(c.key(k))]; dup {
			continue // the first WATCH of a key is the one that counts, as in Redis
		}
		e, ok, err := c.local(ctx, k)
		if err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
		// Watched in the keyspace it is watched in, whatever SELECT
		// follows, as in Redis.
		w := command.Watch{Key: c.key(k)}
		if ok {
			w.Version, w.ExpiresAt = e.Version, e.ExpiresAt
		}
		add = append(add, w)
	}
	if len(c.watches.list)+len(add) > c.s.cfg.MaxWatches {
		c.w.errorLine(fmt.Sprintf(msgTooMany, c.s.cfg.MaxWatches))
		return
	}
	if c.watches.keys == nil {
		c.watches.keys = map[string]struct{}{}
	}
	for _, w := range add {
		if _, dup := c.watches.keys[string(w.Key)]; !dup { // WATCH k k
			c.watches.keys[string(w.Key)] = struct{}{}
			c.watches.list = append(c.watches.list, w)
		}
	}
	c.w.ok()
}

func (c *conn) unwatch() { c.watches = watched{} }

// inMulti answers a request made while a MULTI is open: EXEC and DISCARD
// end the transaction, QUIT the connection, a nested MULTI and a WATCH
// are refused without spoiling it (as in Redis); every other command is
// queued, or refused and the transaction spoiled.
func (c *conn) inMulti(r request) {
	errs := c.w.errors
	cmd, refusal := c.check(r.args)
	name := c.lastCmd
	switch {
	case name == "exec":
		if refusal != "" {
			c.w.errorLine("EXECABORT Transaction discarded because of: " + strings.TrimPrefix(refusal, "ERR "))
			c.multi = nil
			c.unwatch()
			break
		}
		c.exec()
	case refusal == "" && name == "discard":
		c.w.ok()
		c.multi = nil
		c.unwatch()
	case refusal == "" && name == "quit":
		cmd.conn(c, r.args)
	case refusal == "" && name == "multi":
		c.w.errorLine(msgNestedMulti)
	case name == "watch":
		c.w.errorLine(msgWatchInside)
	default:
		if refusal == "" {
			refusal = c.queue(cmd, r)
		}
		if refusal != "" {
			c.w.errorLine(refusal)
			c.multi.dirty = true
			break
		}
		c.w.simple("QUEUED")
	}
	c.done(r, name, c.w.errors != errs)
}

// queue adds a checked command to the transaction; the refusal when it
// cannot run in one or the transaction is full. A write is planned here
// once to learn whether its commands are the state machine's KV commands
// a transaction may hold (a form token is not), and again at EXEC, where
// its syntax error, if any, is answered as Redis answers it.
func (c *conn) queue(cmd *redisCommand, r request) string {
	m := c.multi
	if refusal := c.queueable(cmd, r.args); refusal != "" {
		return fmt.Sprintf(refusal, strings.ToUpper(cmd.name))
	}
	size := 0
	for _, a := range r.args {
		size += len(a)
	}
	switch {
	case len(m.queued) >= c.s.cfg.MaxTxCommands:
		return fmt.Sprintf(msgTxCommands, c.s.cfg.MaxTxCommands)
	case m.bytes+size > c.s.cfg.MaxTxBytes:
		return fmt.Sprintf(msgTxBytes, c.s.cfg.MaxTxBytes)
	}
	m.queued, m.cmds, m.bytes = append(m.queued, r), append(m.cmds, cmd), m.bytes+size
	m.held += int64(size + sliceOverhead*len(r.args))
	return ""
}

// queueable says whether a command can run inside a transaction: "", or
// the refusal (a format taking the command's name).
func (c *conn) queueable(cmd *redisCommand, args [][]byte) string {
	if isSubscribe(cmd.name) {
		return msgNoTx // its replies would not be one per command
	}
	switch cmd.kind {
	case kindRead:
		if cmd.txRead == nil {
			return msgNoTx
		}
	case kindWrite:
		if isEval(cmd.name) {
			return "" // the transaction runs as a script does (commands_multi_script.go)
		}
		p := cmd.plan(c, args)
		if len(p.watches) > 0 {
			return msgNoTxOwn
		}
		if p.direct != nil {
			return msgNoTx
		}
		for _, op := range p.ops {
			if !command.InTx(op.Type) {
				return msgNoTx
			}
		}
	}
	return ""
}

// step is one queued command made ready at EXEC.
type step struct {
	cmd  *redisCommand
	args [][]byte
	p    plan // a KV command's: its ops are the transaction's
}

// exec ends the transaction: it aborts one spoiled when queued, or
// applies it as one command and answers each queued command in its place.
// Every KV command is planned before the connection's commands among them
// run (they run while the replies are written, and not at all when a
// watch fails): none of those changes how a KV command is planned.
func (c *conn) exec() {
	m := c.multi
	c.multi = nil
	watches := c.watches.list
	c.unwatch()
	if m.dirty {
		c.w.errorLine(msgExecAbort)
		return
	}
	if hasScript(m.cmds) {
		c.execScripted(m, watches)
		return
	}
	steps := make([]step, len(m.queued))
	var ops []*command.Command
	// A SELECT among them moves the keyspace the commands after it are
	// planned in; it runs (and moves the connection) in its place below,
	// once the transaction applied.
	db := c.db
	for i, r := range m.queued {
		s := step{cmd: m.cmds[i], args: r.args}
		switch s.cmd.kind {
		case kindConn:
			if s.cmd.name == "select" {
				if n, refusal := parseDB(r.args[1]); refusal == "" {
					c.db = n
				}
			}
		case kindRead:
			s.p = s.cmd.txRead(r.args)
		case kindWrite:
			s.p = s.cmd.plan(c, r.args)
		}
		s.p = c.inKeyspace(s.p) // a reserved key refuses it whole, as outside a transaction
		ops = append(ops, s.p.ops...)
		steps[i] = s
	}
	c.db = db
	// The keys a tracking client reads are remembered before the reads
	// run (tracking.go): after the barrier of a transaction of reads only.
	track := func() {
		for _, s := range steps {
			if s.cmd.kind == kindRead {
				c.trackRead(s.cmd, s.args)
			}
		}
	}
	var results []*command.Result
	if len(ops) > 0 || len(watches) > 0 {
		res, err := c.applyTx(context.Background(), "exec", command.TxRequest{Watches: watches, Commands: ops,
			ReplyBudget: c.s.cfg.MaxBulk - txResultOverhead*len(ops)}, track)
		switch {
		case errors.Is(err, storeapi.ErrTooLarge):
			c.w.errorLine("EXECABORT Transaction discarded because of: the transaction is too large for the store (" + err.Error() + "); nothing was applied")
			return
		case err != nil:
			c.w.errorLine(errorReply(err))
			return
		case res.Code == command.CodeVersionMismatch: // a watched key changed
			c.w.nullArray()
			return
		}
		// Its results are held until the replies are written. Past the
		// budget, a transaction of reads is refused; one that wrote is
		// answered (it applied), and the connection closed after.
		if err := c.hold(len(res.Value)); err != nil && readsOnly(ops) {
			c.w.errorLine(msgBudget)
			return
		}
		if results, err = command.TxResults(res); err == nil && len(results) != len(ops) {
			err = fmt.Errorf("%w: %d results for %d commands", command.ErrBadCommand, len(results), len(ops))
		}
		if err != nil {
			c.w.errorLine(errorReply(err))
			return
		}
	}
	c.w.array(len(steps))
	for _, s := range steps {
		switch {
		case s.cmd.kind == kindConn:
			s.cmd.conn(c, s.args)
		case s.p.err != "":
			c.w.errorLine(s.p.err)
		default:
			rs := make([]storeapi.OpResult, len(s.p.ops))
			for i := range rs {
				rs[i].Res = results[i]
			}
			results = results[len(rs):]
			s.p.answer(&c.w, rs)
		}
	}
}

// applyTx applies a transaction as one command through the log; one of
// reads only (watches included) is answered from this node's state in one
// read after a barrier (none after READONLY, as for every read), as the log
// would answer it: it changes nothing, so it needs no entry. track runs
// just before the reads do.
//
// name is the span's (tracing on, a transaction that writes): "exec"; ""
// for a command whose plan runs as one transaction, whose pipeline step's
// span stands for it. parent is that step's context: the store's spans go
// under its span (if any), the deadline is applyTx's own.
func (c *conn) applyTx(parent context.Context, name string, r command.TxRequest, track func()) (*command.Result, error) {
	ctx, cancel := context.WithTimeout(c.s.spanOnly(parent), c.s.cfg.OpTimeout)
	defer cancel()
	if mutantTxOneByOne {
		c.ownWrites(r.Commands)
		track()
		return oneByOne(c.s.store.ApplyInOrder(ctx, r.Commands))
	}
	if !readsOnly(r.Commands) {
		ctx, span := c.s.traceRun(ctx, name, len(r.Commands))
		defer endTrace(span)
		ctx = c.ownTx(ctx) // before its reads are remembered
		track()
		return c.s.store.ApplyTx(ctx, r)
	}
	if !c.readonly && !mutantNoReadBarrier {
		if err := c.s.store.Barrier(ctx); err != nil {
			return nil, err
		}
	}
	track()
	return c.s.store.LocalTx(r)
}

func readsOnly(ops []*command.Command) bool {
	for _, op := range ops {
		if op.Type.Op().Write {
			return false
		}
	}
	return true
}

// oneByOne is the planted bug's transaction result (mutants.go): the
// results of commands applied one by one.
func oneByOne(rs []storeapi.OpResult) (*command.Result, error) {
	out := make([]*command.Result, len(rs))
	for i, r := range rs {
		if r.Err != nil {
			return nil, r.Err
		}
		out[i] = r.Res
	}
	return command.EncodeTxResults(out), nil
}

// txResultOverhead bounds the bytes of a transaction's result per command
// beside its value (command.Result.Encode, and its length): the reply budget
// leaves room for them, so a result fits in what forwarding carries back.
const txResultOverhead = 48
