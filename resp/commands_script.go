package resp

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/script"
)

// Scripts: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD|EXISTS|FLUSH.
//
// A script runs on the node the client is connected to, never in the
// state machine: against this node's applied state (after a barrier on a
// follower, so it starts from every acknowledged write; the leader's
// holds them), in a sandbox that records
// the version of every key it touches and computes its writes with the
// state machine's own code (storeapi.Sandbox, which the store makes). What it wrote becomes one log
// entry, applied whole on every node, and only while every key it
// touched is as it saw it: that check in the state machine is what makes
// the script atomic and the reply it computed true. If another write got
// in between, the entry applies nothing and the script runs again on the
// newer state, up to maxScriptRuns times. A script that wrote nothing
// needs no entry: its reads are checked again once it is done, after a
// barrier, instead.
// This is Redis 7's effects replication, with optimistic concurrency in
// place of Redis's single thread; a script that never ends or allocates
// without bound is stopped here, by this node's limits (script.Config),
// before anything reaches the log.
//
// Like Redis, the writes a script made before it raised an error are
// kept (in its entry), and its reply is the error. A script stopped by a
// limit keeps nothing.
//
// The scripts EVAL and SCRIPT LOAD were given are kept by this node only,
// in memory (scriptCache): another node, or this one after a restart,
// answers NOSCRIPT, and client libraries then send the body with EVAL, as
// they do after a Redis restart or failover.

// maxScriptRuns bounds the runs of one script whose keys keep changing
// under it.
const maxScriptRuns = 8

const (
	msgNoScript     = "NOSCRIPT No matching script. Please use EVAL."
	msgScriptsRaced = "ERR the keys this script read kept changing under it (%d runs); nothing it wrote was applied; retry"
)

func init() {
	ev := func(name string, bySHA, readOnly bool) *redisCommand {
		flags := []string{"noscript", "stale", "skip_monitor", "may_replicate", "no_mandatory_keys", "movablekeys"}
		if readOnly {
			flags = []string{"noscript", "stale", "skip_monitor", "no_mandatory_keys", "readonly", "movablekeys"}
		}
		return &redisCommand{name: name, arity: -3, kind: kindWrite, flags: flags,
			plan: func(c *conn, a [][]byte) plan { return planEval(c, a, bySHA, readOnly) }}
	}
	register(
		ev("eval", false, false), ev("evalsha", true, false), ev("eval_ro", false, true), ev("evalsha_ro", true, true),
		&redisCommand{name: "script", arity: -2, kind: kindConn, flags: []string{"noscript"}, conn: cmdScript},
		&redisCommand{name: "time", arity: 1, kind: kindConn, script: true, flags: []string{"loading", "stale", "fast"}, conn: cmdTime},
	)
}

// planEval checks EVAL's arguments as Redis does (the number of keys
// first, then the script), and runs the script alone, in the pipeline's
// order.
func planEval(c *conn, a [][]byte, bySHA, readOnly bool) plan {
	s, keys, argv, refusal := evalArgs(context.Background(), c, a, bySHA) // a compile's wait for its turn is bounded by ScriptQueueWait
	if refusal != "" {
		return plan{err: refusal}
	}
	readOnly, refusal = scriptReadOnly(s, readOnly)
	if refusal != "" {
		return plan{err: refusal}
	}
	return plan{direct: func(ctx context.Context, w *writer) { c.runScript(ctx, w, s, keys, argv, readOnly) }}
}

// scriptReadOnly is whether s runs read-only: called by EVAL_RO or
// EVALSHA_RO (ro), or declaring no-writes in its shebang; or EVAL_RO's
// refusal of a script whose shebang lets it write.
func scriptReadOnly(s *script.Script, ro bool) (readOnly bool, refusal string) {
	if ro && s.Flags.Shebang && !s.Flags.NoWrites {
		return false, script.MsgWriteFlagRO
	}
	return ro || s.Flags.NoWrites, ""
}

// evalArgs is EVAL's script, keys and arguments, or the refusal (a
// script not compiled for want of a turn: msgScriptsBusy).
func evalArgs(ctx context.Context, c *conn, a [][]byte, bySHA bool) (s *script.Script, keys, argv [][]byte, refusal string) {
	if bySHA && len(a[1]) != 40 {
		return nil, nil, nil, msgNoScript // Redis looks no further
	}
	n, ok := parseInt64(a[2])
	switch {
	case !ok:
		return nil, nil, nil, msgNotInteger
	case n < 0:
		return nil, nil, nil, "ERR Number of keys can't be negative"
	case n > int64(len(a)-3):
		return nil, nil, nil, "ERR Number of keys can't be greater than number of args"
	}
	if bySHA {
		if s = c.s.scripts.get(strings.ToLower(string(a[1]))); s == nil {
			return nil, nil, nil, msgNoScript
		}
	} else {
		var err error
		if s, err = c.s.scripts.load(ctx, a[1]); err != nil {
			return nil, nil, nil, slotRefusal(err)
		}
	}
	return s, a[3 : 3+n], a[3+n:], ""
}

// runScript runs s until its effects apply (or it wrote nothing and what
// it read held), and answers its reply.
// parent is the pipeline step's context: the store's spans go under its
// span (the script's own, "resp eval"), its deadline is not the script's.
func (c *conn) runScript(parent context.Context, w *writer, s *script.Script, keys, argv [][]byte, readOnly bool) {
	c.runScriptWithin(parent, c.s.cfg.OpTimeout+c.s.cfg.Script.Timeout, w, s, keys, argv, readOnly)
}

// runScriptWithin is runScript given limit to run in.
func (c *conn) runScriptWithin(parent context.Context, limit time.Duration, w *writer, s *script.Script, keys, argv [][]byte, readOnly bool) {
	ctx, cancel := context.WithTimeout(c.s.spanOnly(parent), limit)
	defer cancel()
	// A follower's writing script runs on the leader (script_leader.go),
	// but on a READONLY connection, whose reads are this node's.
	if ls := c.s.leaders; ls != nil && !readOnly && !c.readonly && c.forwarded == nil {
		if id, _ := c.s.store.Leader(); id != c.s.cfg.NodeID && c.runOnLeader(ctx, w, ls, s.Body, keys, argv) {
			return
		}
	}
	barrier := func() bool {
		if c.readonly {
			return true
		}
		if err := c.s.store.Barrier(ctx); err != nil {
			w.errorLine(errorReply(err))
			return false
		}
		return true
	}
	// The turns of its keys on this node (script_turns.go): those it
	// names, then those its runs touched, held from each run until its
	// effects are applied or found stale.
	var held *turn
	defer func() { held.give() }()
	var want []int
	if !readOnly {
		stored := make([][]byte, len(keys))
		for i, k := range keys {
			stored[i] = c.key(k)
		}
		want = c.s.turns.stripesOf(stored)
	}
	redoHere := false
	for run := 1; ; run++ {
		if len(want) > 0 {
			var err error
			if held == nil {
				held, err = c.s.turns.take(ctx, want)
			} else {
				err = held.widen(ctx, want)
			}
			if err != nil {
				w.errorLine(errorReply(err))
				return
			}
		}
		if run == 1 && c.forwarded != nil && c.forwarded.settled(ctx, c, w) {
			return
		}
		// The leader's state holds every write it acknowledged: a run
		// there needs no barrier first (the state machine's check, or
		// the barrier before a read-only reply, catches what it missed).
		// A follower's may lag behind the client's own last write (it
		// learns a commit with the leader's next batch): its first run
		// reads the leader's state instead, as the leader's own would,
		// unless the script is read-only (its reply needs this node's
		// state after a barrier anyway) or the connection reads this
		// node's state (READONLY). Later runs, and a first one that
		// could not read the leader, start from a barrier here.
		id, _ := c.s.store.Leader()
		onLeader := id == c.s.cfg.NodeID
		fromLeader := run == 1 && !onLeader && !readOnly && !c.readonly && !redoHere
		barriered := (run > 1 || !onLeader) && !fromLeader
		if barriered && !barrier() {
			return
		}
		own := c.ownScriptRun(readOnly) // before its reads are remembered
		sc := newScriptCall(ctx, c, time.Now(), readOnly, fromLeader)
		reply, stopped, refused := sc.run(s, keys, argv)
		switch {
		case refused != nil:
			w.errorLine(slotRefusal(refused))
			return
		case sc.redoHere && stopped == nil:
			redoHere = true
			want = sc.touched.union(want)
			run-- // not counted: it was no race
			continue
		case sc.storeErr != nil:
			w.errorLine(errorReply(sc.storeErr))
			return
		case stopped != nil:
			w.scriptReply(reply)
			return
		}
		if refusal := sc.overKeys(msgScriptTooManyKeys); refusal != "" {
			w.errorLine(refusal)
			return
		}
		if eff := sc.sb.Effects(); eff != nil {
			eff.ReqID = own
			if f := c.forwarded; f != nil {
				eff.ReqID = f.runID(f.attempt, run)
			}
			res := c.s.store.ApplyInOrder(ctx, []*command.Command{eff})[0]
			switch {
			case res.Err != nil:
				w.errorLine(errorReply(res.Err))
				return
			case res.Res.Code == command.CodeOK:
				w.scriptReply(reply)
				return
			case res.Res.Code != command.CodeConflict:
				w.errorLine(errorReply(res.Res.Err()))
				return
			}
		} else {
			// What it read must hold after a barrier: then it is the
			// state of a moment after the call began.
			if !barriered && !barrier() {
				return
			}
			sc.fromLeader = false // checked against this node's state, which the barrier brought up to date
			held, err := sc.sb.Unchanged()
			switch {
			case err != nil:
				w.errorLine(errorReply(err))
				return
			case held || c.readonly: // READONLY: this node's state, as its reads
				w.scriptReply(reply)
				return
			}
		}
		if run == maxScriptRuns {
			w.errorLine(fmt.Sprintf(msgScriptsRaced, run))
			return
		}
		want = sc.touched.union(want)
	}
}

// cmdScript is SCRIPT LOAD, EXISTS, FLUSH and KILL, on this node's cache.
func cmdScript(c *conn, a [][]byte) {
	sub := strings.ToLower(string(a[1]))
	arity := map[string]int{"load": 3, "exists": -3, "flush": -2, "kill": 2, "help": 2}[sub]
	switch {
	case arity == 0:
		c.w.errorLine(fmt.Sprintf("ERR unknown subcommand '%s'. Try SCRIPT HELP.", clip(a[1])))
		return
	case (arity > 0 && len(a) != arity) || (arity < 0 && len(a) < -arity):
		c.w.errorLine(fmt.Sprintf("ERR wrong number of arguments for 'script|%s' command", sub))
		return
	}
	if sess := c.sess.Load(); sub == "flush" && sess != nil && !sess.grant.Admin {
		// Like FLUSHDB and FLUSHALL, it empties what every client of the
		// node shares (their EVALSHAs answer NOSCRIPT until they send
		// their scripts again): the admin role's, not a writer's.
		c.w.errorLine(fmt.Sprintf("NOPERM User %s has no permissions to run the 'script|flush' command", sess.grant.Name))
		return
	}
	switch sub {
	case "load":
		s, err := c.s.scripts.load(context.Background(), a[2])
		if err != nil {
			c.w.errorLine(slotRefusal(err))
			return
		}
		c.w.bulkString(s.SHA)
	case "exists":
		c.w.array(len(a) - 2)
		for _, sha := range a[2:] {
			c.w.integer(int64(boolInt(c.s.scripts.get(strings.ToLower(string(sha))) != nil)))
		}
	case "flush":
		if len(a) > 3 || (len(a) == 3 && !eq(string(a[2]), "sync") && !eq(string(a[2]), "async")) {
			c.w.errorLine("ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		c.s.scripts.flush()
		c.w.ok()
	case "kill":
		c.w.errorLine("NOTBUSY No scripts in execution right now.")
	case "help":
		help := []string{"SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
			"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache.",
			"KILL", "    Kill the currently executing Lua script.",
			"LOAD <script>", "    Load a script into the scripts cache without executing it.",
			"HELP", "    Print this help."}
		c.w.array(len(help))
		for _, h := range help {
			c.w.simple(h)
		}
	}
}

// cmdTime is TIME: seconds and microseconds, of the script's clock inside
// a script.
func cmdTime(c *conn, _ [][]byte) {
	now := c.now()
	c.w.array(2)
	c.w.bulkString(strconv.FormatInt(now.Unix(), 10))
	c.w.bulkString(strconv.FormatInt(int64(now.Nanosecond()/1000), 10))
}
