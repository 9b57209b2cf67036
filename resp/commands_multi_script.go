package resp

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
)

// A transaction with a script in it (EVAL, EVALSHA, EVAL_RO, EVALSHA_RO
// queued after MULTI, as Redis queues them) runs the way a script does
// (commands_script.go): every queued command, the scripts' own commands
// with them, runs in order in one sandbox on this node's applied state,
// at one clock, each seeing the writes before it; what they all wrote
// becomes one log entry that applies only while every key any of them
// touched is as they saw it (the watched keys among them), else the whole
// transaction runs again. So the transaction is atomic with its scripts
// in it, as in Redis, and a client told EXEC failed had nothing applied.

const (
	msgTxScriptOnly   = "EXECABORT Transaction discarded because of: %s cannot run in a transaction that runs a script in idemgate; nothing was applied"
	msgTxScriptKilled = "EXECABORT Transaction discarded because of: a script of the transaction was stopped (%s); nothing was applied"
)

// isEval reports whether a command is one of the script commands.
func isEval(name string) bool {
	return name == "eval" || name == "evalsha" || name == "eval_ro" || name == "evalsha_ro"
}

// hasScript reports whether a transaction's commands hold a script.
func hasScript(cmds []*redisCommand) bool {
	for _, cmd := range cmds {
		if isEval(cmd.name) {
			return true
		}
	}
	return false
}

// execScripted is exec for a transaction with a script (m is taken,
// the watches given).
func (c *conn) execScripted(m *multiState, watches []command.Watch) {
	for _, cmd := range m.cmds {
		if cmd.kind != kindConn && !isEval(cmd.name) && !cmd.script {
			c.w.errorLine(fmt.Sprintf(msgTxScriptOnly, strings.ToUpper(cmd.name)))
			return
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.s.cfg.OpTimeout+c.s.cfg.Script.Timeout)
	defer cancel()
	ctx, span := c.s.traceRun(ctx, "exec", len(m.cmds))
	defer endTrace(span)
	for run := 1; ; run++ {
		id, _ := c.s.store.Leader()
		barriered := run > 1 || id != c.s.cfg.NodeID
		if barriered && !c.readonly {
			if err := c.s.store.Barrier(ctx); err != nil {
				c.w.errorLine(errorReply(err))
				return
			}
		}
		own := c.ownScriptRun(false) // before its reads are remembered
		replies, sc, done := c.runTxSandboxed(ctx, m, watches)
		if done {
			return // answered: a watch failed, a script was stopped, or the store failed
		}
		if refusal := sc.overKeys(msgTxTooManyKeys); refusal != "" {
			c.w.errorLine(refusal)
			return
		}
		if eff := sc.sb.Effects(); eff != nil {
			eff.ReqID = own
			res := c.s.store.ApplyInOrder(ctx, []*command.Command{eff})[0]
			switch {
			case res.Err != nil:
				c.w.errorLine(errorReply(res.Err))
				return
			case res.Res.Code == command.CodeOK:
				c.answerTx(m, replies)
				return
			case res.Res.Code != command.CodeConflict:
				c.w.errorLine(errorReply(res.Res.Err()))
				return
			}
		} else {
			if !barriered && !c.readonly {
				if err := c.s.store.Barrier(ctx); err != nil {
					c.w.errorLine(errorReply(err))
					return
				}
			}
			held, err := sc.sb.Unchanged()
			switch {
			case err != nil:
				c.w.errorLine(errorReply(err))
				return
			case held || c.readonly:
				c.answerTx(m, replies)
				return
			}
		}
		if run == maxScriptRuns {
			c.w.errorLine(fmt.Sprintf(msgScriptsRaced, run))
			return
		}
	}
}

// runTxSandboxed runs the transaction's commands once in a sandbox and
// returns each one's reply (nil for the connection's own commands, which
// run when EXEC answers); done when it answered EXEC itself instead.
func (c *conn) runTxSandboxed(ctx context.Context, m *multiState, watches []command.Watch) (replies [][]byte, sc *scriptCall, done bool) {
	sc = newScriptCall(ctx, c, time.Now(), false, false)
	for _, w := range watches {
		e, ok, err := sc.sb.KV(w.Key)
		if err != nil {
			c.w.errorLine(errorReply(err))
			return nil, nil, true
		}
		if ok != (w.Version != 0) || (ok && (e.Version != w.Version || e.ExpiresAt != w.ExpiresAt)) {
			c.w.nullArray()
			return nil, nil, true
		}
	}
	// The commands run on a connection of the client's protocol whose
	// reads and writes are the sandbox's.
	var buf bytes.Buffer
	sub := &conn{s: c.s, proto: c.proto, readonly: c.readonly, db: c.db, script: sc}
	sub.w = writer{bw: bufio.NewWriter(&buf), proto: c.proto}
	sub.sess.Store(c.sess.Load())
	replies = make([][]byte, len(m.queued))
	for i, r := range m.queued {
		cmd, args := m.cmds[i], r.args
		buf.Reset()
		switch {
		case cmd.kind == kindConn:
			// A SELECT moves the keyspace of the commands after it; it
			// runs on the connection in its place when EXEC answers.
			if cmd.name == "select" {
				if n, refusal := parseDB(args[1]); refusal == "" {
					sub.db = n
				}
			}
			continue
		case isEval(cmd.name):
			sc.sub.db = sub.db // the script runs in the keyspace it was queued in
			if abort := c.txScript(sub, sc, cmd, args); abort != "" {
				c.w.errorLine(abort)
				return nil, nil, true
			}
		default:
			sc.exec(sub, cmd, args)
		}
		if sc.storeErr != nil {
			c.w.errorLine(errorReply(sc.storeErr))
			return nil, nil, true
		}
		sub.w.bw.Flush()
		replies[i] = bytes.Clone(buf.Bytes())
	}
	return replies, sc, false
}

// txScript runs one queued script in the transaction's sandbox and writes
// its reply on sub; abort is EXEC's reply instead when a limit stopped it,
// or it found no turn to run or compile in (TRYAGAIN: nothing applied).
func (c *conn) txScript(sub *conn, sc *scriptCall, cmd *redisCommand, args [][]byte) (abort string) {
	bySHA := cmd.name == "evalsha" || cmd.name == "evalsha_ro"
	readOnly := strings.HasSuffix(cmd.name, "_ro")
	s, keys, argv, refusal := evalArgs(sc.ctx, c, args, bySHA)
	switch {
	case isBusy(refusal):
		return refusal
	case refusal != "":
		sub.w.errorLine(refusal)
		return ""
	}
	readOnly, refusal = scriptReadOnly(s, readOnly)
	if refusal != "" {
		sub.w.errorLine(refusal)
		return ""
	}
	sc.readOnly = readOnly
	reply, stop, refused := sc.run(s, keys, argv)
	sc.readOnly = false
	switch {
	case refused != nil:
		return slotRefusal(refused)
	case stop != nil:
		return fmt.Sprintf(msgTxScriptKilled, stop.Error())
	}
	sub.w.scriptReply(reply)
	return ""
}

// answerTx writes EXEC's array: each command's reply in its place, the
// connection's own commands run now.
func (c *conn) answerTx(m *multiState, replies [][]byte) {
	c.w.array(len(m.queued))
	for i, r := range m.queued {
		if m.cmds[i].kind == kindConn {
			m.cmds[i].conn(c, r.args)
			continue
		}
		c.w.rawReply(replies[i])
	}
}
