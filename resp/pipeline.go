package resp

import (
	"context"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// The order of a pipeline. Redis runs a connection's commands one after
// the other: each sees the effects of those before it, and the replies come
// back in request order. So does this listener, with fewer round trips:
//
//   - consecutive reads share one linearizable barrier (one read index),
//     then read this node's applied state, which the barrier made current
//     for every read in the run (each was sent before the barrier began);
//   - consecutive writes go to the store together (Store.ApplyInOrder),
//     which hands them to the leader in order, so they commit in order and
//     usually share log entries;
//   - a run ends at a command of another kind, which waits for it: a read
//     after a write sees the write, a write after a read does not change
//     what the read saw.
//
// Replies are buffered in order and written when the batch is done.

// run executes a batch of requests in order and buffers their replies.
func (c *conn) run(batch []request) {
	for i := 0; i < len(batch) && !c.quit; {
		if c.reply.silenced() {
			// One command, its replies dropped (reply_mode.go).
			c.w.mute()
			c.run1(batch[:i+1], i)
			c.w.unmute()
			i++
			continue
		}
		i = c.run1(batch, i)
	}
}

// run1 runs the command at i (and, for a read or a write, those of its
// kind after it in batch: a run) and returns the index after them.
func (c *conn) run1(batch []request, i int) int {
	if c.multi != nil {
		// Only MULTI opens one, and it is a command of its own:
		// the runs below never reach past it.
		c.inMulti(batch[i])
		return i + 1
	}
	cmd, refusal := c.check(batch[i].args)
	if refusal != "" {
		c.w.errorLine(refusal)
		c.done(batch[i], c.lastCmd, true)
		return i + 1
	}
	switch cmd.kind {
	case kindConn:
		errs := c.w.errors
		cmd.conn(c, batch[i].args)
		c.done(batch[i], cmd.name, c.w.errors != errs)
		return i + 1
	case kindRead:
		return c.runReads(batch, i)
	default:
		return c.runWrites(batch, i)
	}
}

// done counts an answered request, and gives back what its reply held:
// the reply is in the write buffer, and what did not fit is written.
func (c *conn) done(r request, name string, failed bool) {
	c.acct.release(c.replyHeld)
	c.replyHeld = 0
	c.commandDone(name)
	c.s.m.observe(name, failed, r.start)
}

// runReads runs the reads that start at i, and returns the index after
// them.
func (c *conn) runReads(batch []request, i int) int {
	j := i
	var cmds []*redisCommand
	for ; j < len(batch); j++ {
		cmd, refusal := c.check(batch[j].args)
		if refusal != "" || cmd.kind != kindRead {
			break
		}
		cmds = append(cmds, cmd)
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
	defer cancel()
	var err error
	if !c.readonly && !mutantNoReadBarrier {
		err = c.s.store.Barrier(ctx) // concurrent readers share barriers (raftstore)
	}
	for k, cmd := range cmds {
		errs := c.w.errors
		if err != nil {
			c.w.errorLine(errorReply(err))
		} else {
			// A tracked key is remembered before it is read: a change
			// applied after the read began is then invalidated
			// (tracking.go).
			c.trackRead(cmd, batch[i+k].args)
			cmd.read(c, ctx, batch[i+k].args)
		}
		c.done(batch[i+k], cmd.name, c.w.errors != errs)
	}
	return j
}

// plan is a write command made ready: its ops (commands built by package
// command's constructors), and how to answer from their results. A plan with direct
// instead runs on its own (it needs more than ops: a form token).
type plan struct {
	ops    []*command.Command
	answer func(w *writer, res []storeapi.OpResult)
	direct func(ctx context.Context, w *writer)
	err    string // a refusal found while planning (syntax): the reply, no ops
	// atomic: the ops apply as one transaction of the state machine
	// (command.KVTxCommand), alone, under watches (conflict answers when one
	// failed and nothing applied). Inside MULTI its ops are the
	// transaction's; one with watches cannot be queued.
	atomic   bool
	watches  []command.Watch
	conflict func(w *writer)
	// block: the command waits, when its ops found nothing, for a push
	// (BLPOP, blocking.go); it runs alone. Inside MULTI its ops run as
	// they are.
	block *blockSpec
}

// runWrites runs the writes that start at i, and returns the index after
// them.
func (c *conn) runWrites(batch []request, i int) int {
	j := i
	var (
		cmds  []*redisCommand
		plans []plan
		ops   []*command.Command
	)
	for ; j < len(batch); j++ {
		cmd, refusal := c.check(batch[j].args)
		if refusal != "" || cmd.kind != kindWrite {
			break
		}
		p := c.inKeyspace(cmd.plan(c, batch[j].args))
		if p.atomic && p.err == "" {
			p = c.atomically(p)
		}
		alone := p.direct != nil || (p.block != nil && p.err == "")
		if alone && j > i {
			break // it runs alone, after these
		}
		cmds, plans = append(cmds, cmd), append(plans, p)
		ops = append(ops, p.ops...)
		if alone {
			j++
			break
		}
	}
	if len(plans) == 1 && plans[0].block != nil && plans[0].err == "" {
		errs := c.w.errors
		c.blockingPop(plans[0])
		c.done(batch[i], cmds[0].name, c.w.errors != errs)
		return j
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout)
	defer cancel()
	ctx, span := c.s.traceWrites(ctx, cmds)
	defer endTrace(span)
	if len(plans) == 1 && plans[0].direct != nil {
		errs := c.w.errors
		plans[0].direct(ctx, &c.w)
		c.done(batch[i], cmds[0].name, c.w.errors != errs)
		return j
	}
	var res []storeapi.OpResult
	if len(ops) > 0 {
		c.ownWrites(ops)
		res = c.s.store.ApplyInOrder(ctx, ops)
	}
	for k, p := range plans {
		errs := c.w.errors
		if p.err != "" {
			c.w.errorLine(p.err)
		} else {
			p.answer(&c.w, res[:len(p.ops)])
			res = res[len(p.ops):]
		}
		c.done(batch[i+k], cmds[k].name, c.w.errors != errs)
	}
	return j
}
