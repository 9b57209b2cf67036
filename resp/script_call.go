package resp

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/script"
	"github.com/idemgate/idemgate/storeapi"
)

// scriptCall runs a script's redis.call and redis.pcall: each command is
// the listener's own (its parsing, its checks, its reply, word for word),
// run on a connection of its own whose reads and writes go to the
// script's sandbox (storeapi.Sandbox) at the script's clock; its RESP2 reply is
// read back into the script's value. It implements script.Caller.
type scriptCall struct {
	c        *conn // the client's connection
	sub      *conn // the one the commands run on
	buf      bytes.Buffer
	ctx      context.Context
	sb       storeapi.Sandbox
	now      time.Time
	readOnly bool  // EVAL_RO, EVALSHA_RO: no writes
	storeErr error // the store failed a read: nothing of the run is kept
	// fromLeader: the run reads the leader's state (Store.LeaderKV), not
	// this follower's, which may not yet hold the client's own last
	// write; its effects are checked in the log as any run's are.
	// redoHere: such a run could not be finished that way (the leader
	// read failed, or the script called KEYS, which lists this node's
	// keys): nothing of it is kept, and it runs again from this node's
	// state, after a barrier.
	fromLeader, redoHere bool
	leaderReads          int // keys read from the leader so far
	// slots: the node's script slots, while the script runs in one of
	// them (held); it lets its slot go while it waits on the store.
	slots *scriptSlots
	held  bool
	// keys: the keys the run touched (read or wrote), each of which its
	// effects carry (overKeys).
	keys int
	// touched: the turns of those keys (script_turns.go), which a next
	// run of a script that writes waits for.
	touched stripeSet
	// declared are the script's keys (KEYS, as the client named them);
	// readCalled: the run called a read command (tracking_script.go).
	declared   [][]byte
	readCalled bool
}

// The refusals of effects that touch more keys than MaxScriptKeys: a
// script's, a transaction's with a script.
const (
	msgScriptTooManyKeys = "ERR script wrote, and touched %d keys, more than one script that writes may (limit %d, scripts.max_keys); nothing it wrote was applied"
	msgTxTooManyKeys     = "EXECABORT Transaction discarded because of: it runs a script, writes, and touched %d keys, more than one script that writes may (limit %d, scripts.max_keys); nothing was applied"
)

// overKeys is the refusal of the run's effects when they carry more keys
// than one script's may: every node applies them in one go, holding its
// apply loop (and every write after) for a time that grows faster than
// the keys (BenchmarkScriptEffectsApply on a shared 2-core machine:
// 1,000 keys 4 ms, 4,096 29 ms, 10,000 91 ms, 50,000 0.7 s). A run that
// only read needs no entry, and no bound.
func (sc *scriptCall) overKeys(msg string) string {
	if max := sc.c.s.cfg.MaxScriptKeys; sc.keys > max && sc.sb.Wrote() {
		return fmt.Sprintf(msg, sc.keys, max)
	}
	return ""
}

// run runs s in one of the node's script slots (script_slots.go):
// refused when none came in time, and then nothing ran.
func (sc *scriptCall) run(s *script.Script, keys, argv [][]byte) (reply script.Reply, stopped, refused error) {
	slots := sc.c.s.runs
	if err := slots.take(sc.ctx); err != nil {
		return script.Reply{}, nil, err
	}
	sc.slots, sc.held = slots, true
	sc.declared = keys
	defer func() {
		if sc.held {
			slots.give()
		}
		sc.slots, sc.held = nil, false
	}()
	slots.onThread(func() { reply, stopped = s.Run(sc.ctx, sc.c.s.cfg.Script, keys, argv, sc) })
	return reply, stopped, nil
}

// storeWait runs wait (a read that waits on the store) with the script's
// slot let go, and takes it again after.
func (sc *scriptCall) storeWait(wait func() error) error {
	if !sc.held {
		return wait()
	}
	sc.slots.give()
	sc.held = false
	err := wait()
	if again := sc.slots.retake(sc.ctx); again != nil {
		return again
	}
	sc.held = true
	return err
}

// maxLeaderReads is how many keys a run reads from the leader, a round
// trip each, before it takes a barrier here (one round, however many keys
// follow) and reads the rest from this node's state: a script that reads
// many keys would wait longer for them than for the barrier. Mixing the
// two is safe: the log checks every key read, wherever it was read.
const maxLeaderReads = 4

func newScriptCall(ctx context.Context, c *conn, now time.Time, readOnly, fromLeader bool) *scriptCall {
	sc := &scriptCall{c: c, ctx: ctx, now: now, readOnly: readOnly, fromLeader: fromLeader}
	sc.sb = c.s.store.NewSandbox(now.UnixNano(), func(key []byte) (command.KVEntry, bool, error) {
		sc.keys++ // the sandbox asks once per key
		if !readOnly {
			sc.touched.add(c.s.turns.stripe(key))
		}
		if sc.fromLeader && sc.leaderReads == maxLeaderReads {
			if err := sc.storeWait(func() error { return c.s.store.Barrier(ctx) }); err != nil {
				sc.redoHere = true
				return command.KVEntry{}, false, err
			}
			sc.fromLeader = false
		}
		if sc.fromLeader {
			sc.leaderReads++
			var e command.KVEntry
			var ok bool
			err := sc.storeWait(func() (err error) {
				e, ok, err = c.s.store.LeaderKV(ctx, key, time.Now()) // judged as a local read would be: now, not earlier than the script's clock
				return err
			})
			if err != nil || (ok && e.Kind.IsColl()) {
				// A collection's elements are read from this node's state:
				// the run is redone here.
				sc.redoHere = true
				if err == nil {
					err = errRedoHere
				}
			}
			return e, ok, err
		}
		e, ok, err := c.localStored(ctx, key) // the sandbox's keys are as stored (inKeyspace); a collection's header alone, its elements read as asked (collElems)
		if err == nil && ok && e.Kind == command.KindStream {
			e, ok, err = c.wholeStream(key) // a stream is given whole
		}
		if err != nil && sc.storeErr == nil {
			sc.storeErr = err
		}
		return e, ok, err
	}, func(key []byte, kind command.Kind, fields [][]byte) (uint64, []byte, bool, error) {
		v, value, ok, err := c.collElems(key, kind, fields)
		if err != nil && sc.storeErr == nil {
			sc.storeErr = err
		}
		return v, value, ok, err
	})
	sc.sub = &conn{s: c.s, proto: 2, readonly: c.readonly, db: c.db, script: sc}
	sc.sub.w = writer{bw: bufio.NewWriterSize(&sc.buf, 256), proto: 2} // into buf: a reply larger than this goes there directly; the default 4 KiB was an allocation per run
	sc.sub.sess.Store(c.sess.Load())
	return sc
}

// errRedoHere: a run that read a follower's leader met a hash or a set,
// whose elements a sandbox reads from this node's state: it is redone
// from this node's state.
var errRedoHere = errors.New("a script reads a hash or a set from this node's state")

// collElems reads elements of the collection of kind under key (stored)
// for a sandbox (storeapi.SandboxElems): fields (nil: the whole, as
// command.WholeColl), in one read of this node's state, with the
// version the read found. The sandbox holds the run's reads to the
// version its header was read at, so the reads of one key need not be
// one.
func (c *conn) collElems(key []byte, kind command.Kind, fields [][]byte) (uint64, []byte, bool, error) {
	mode := command.ReadFields
	if fields == nil {
		mode = command.ReadAll
	}
	op := command.CollReadCommand(key, kind == command.KindSet, mode, fields, 0, 0, false)
	if kind == command.KindZSet {
		op.Flags = command.FlagCollZSet
	}
	r, ok, err := c.readForSandbox(op)
	if !ok {
		return 0, nil, false, err
	}
	return r.Version, r.Value, true, nil
}

// wholeStream reads the stream under key (stored) whole, as a sandbox is
// given one (command.StreamAllCommand): its entry as the read found it,
// in one read of this node's state. The script's effects apply only
// while it is still at that version, so the read and the script's others
// need not be one.
func (c *conn) wholeStream(key []byte) (command.KVEntry, bool, error) {
	r, ok, err := c.readForSandbox(command.WholeCommand(key, command.KindStream))
	if !ok {
		return command.KVEntry{}, false, err
	}
	return command.KVEntry{Version: r.Version, ExpiresAt: r.ExpiresAt, Kind: command.KindStream, Value: r.Value}, true, nil
}

// readForSandbox runs op, a read of one collection, on this node's state
// and holds its answer against the connection's budget; false when the
// key no longer holds that collection (the sandbox then refuses the run)
// or on an error.
func (c *conn) readForSandbox(op *command.Command) (*command.Result, bool, error) {
	r, err := c.s.store.LocalTx(command.TxRequest{Commands: []*command.Command{op}, ReplyBudget: maxReadReply})
	var rs []*command.Result
	if err == nil {
		if rs, err = command.TxResults(r); err == nil && len(rs) != 1 {
			err = command.ErrBadCommand
		}
	}
	switch {
	case err != nil:
		return nil, false, err
	case rs[0].Code == command.CodeNotFound || rs[0].Code == command.CodeWrongType:
		return nil, false, nil // no longer the collection the script read: the sandbox refuses the run
	case rs[0].Code != command.CodeOK:
		return nil, false, rs[0].Err()
	}
	if err := c.hold(len(rs[0].Value)); err != nil {
		return nil, false, err
	}
	return rs[0], true, nil
}

// exec runs one command on sub, a connection whose reads and writes are
// the sandbox's, and writes its reply there: the one command loop of a
// script's calls (Call) and of a transaction that runs a script
// (runTxSandboxed). A read reads through the sandbox; a write's plan is
// applied to it op by op and answered as the store's answer would be.
func (sc *scriptCall) exec(sub *conn, cmd *redisCommand, args [][]byte) {
	switch cmd.kind {
	case kindConn:
		cmd.conn(sub, args)
	case kindRead:
		cmd.read(sub, sc.ctx, args)
	case kindWrite:
		p := sub.inKeyspace(cmd.plan(sub, args)) // a reserved key refuses it whole
		if p.err != "" {
			sub.w.errorLine(p.err)
			return
		}
		res := make([]storeapi.OpResult, len(p.ops))
		for i, op := range p.ops {
			res[i].Res, res[i].Err = sc.sb.Apply(op)
		}
		p.answer(&sub.w, res)
	}
}

// Call runs one command of the script. A script may call the commands
// marked script (the KV keyspace's, which a sandbox can run, and TIME,
// PING, ECHO, KEYS); other commands idemgate has are Redis's "not
// allowed from script", commands it does not have "unknown".
func (sc *scriptCall) Call(args [][]byte, resp int) script.Reply {
	name := strings.ToLower(string(args[0]))
	cmd, ok := commands[name]
	switch {
	case !ok && !isUnsupported(name):
		return script.ErrorReply("ERR Unknown Redis command called from script")
	case !ok || !cmd.script:
		return script.ErrorReply("ERR This Redis command is not allowed from script")
	case (cmd.arity > 0 && len(args) != cmd.arity) || (cmd.arity < 0 && len(args) < -cmd.arity):
		return script.ErrorReply("ERR Wrong number of args calling Redis command from script")
	case cmd.sub != nil:
		// A subcommand Redis does not know is an unknown command to a
		// script; one of the wrong arity, a wrong number of arguments.
		switch refusal := cmd.sub(args); {
		case strings.HasPrefix(refusal, "ERR unknown subcommand"):
			return script.ErrorReply("ERR Unknown Redis command called from script")
		case refusal != "":
			return script.ErrorReply("ERR Wrong number of args calling Redis command from script")
		case name == "cluster" && clusterNoScript[strings.ToLower(string(args[1]))]:
			return script.ErrorReply("ERR This Redis command is not allowed from script")
		}
	}
	if cmd.kind == kindWrite {
		if sc.readOnly {
			return script.ErrorReply("ERR Write commands are not allowed from read-only scripts.")
		}
		if sess := sc.c.sess.Load(); sess != nil && !sess.grant.Write {
			return script.ErrorReply("NOPERM User " + sess.grant.Name + " has no permissions to run the '" + cmd.name + "' command")
		}
	}
	if cmd.firstKey > 0 {
		last := cmd.lastKey
		if last < 0 {
			last = len(args) + last
		}
		for i := cmd.firstKey; i <= last && i < len(args); i += cmd.step {
			if err := storeapi.CheckKVKey(args[i]); err != nil {
				return script.ErrorReply(errorReply(err))
			}
		}
	}
	if cmd.kind == kindRead {
		sc.calledRead()
	}
	if name == "keys" && sc.fromLeader {
		sc.redoHere = true // KEYS lists this node's keys: the run is redone from its state, after a barrier
		return script.ErrorReply("ERR KEYS runs from this node's state")
	}
	sc.buf.Reset()
	sub := sc.sub
	sub.proto, sub.w.proto = resp, resp // redis.setresp's: the reply is read back in it
	sc.exec(sub, cmd, args)
	sub.w.bw.Flush()
	r, _, ok := parseReply(sc.buf.Bytes())
	if !ok {
		return script.ErrorReply("ERR idemgate could not read its own reply to " + cmd.name)
	}
	return r
}

// parseReply reads one RESP2 or RESP3 reply (as the listener writes
// them) from b.
func parseReply(b []byte) (script.Reply, []byte, bool) {
	line, rest, found := bytes.Cut(b, []byte("\r\n"))
	if !found || len(line) == 0 {
		return script.Reply{}, nil, false
	}
	body := string(line[1:])
	switch line[0] {
	case '_':
		return script.Reply{Kind: script.Nil}, rest, true
	case '#':
		return script.Reply{Kind: script.Bool, Int: int64(boolInt(body == "t"))}, rest, body == "t" || body == "f"
	case ',':
		f, err := strconv.ParseFloat(body, 64)
		return script.Reply{Kind: script.Double, Float: f}, rest, err == nil
	case '(':
		return script.Reply{Kind: script.BigNumber, Str: body}, rest, true
	case '=':
		n, err := strconv.Atoi(body)
		if err != nil || n < 4 || n > len(rest)-2 {
			return script.Reply{}, nil, false
		}
		return script.Reply{Kind: script.Verbatim, Format: string(rest[:3]), Str: string(rest[4:n])}, rest[n+2:], true
	case '%', '~':
		n, err := strconv.Atoi(body)
		if err != nil || n < 0 {
			return script.Reply{}, nil, false
		}
		r := script.Reply{Kind: script.Set, Elems: make([]script.Reply, n)}
		if line[0] == '%' {
			r = script.Reply{Kind: script.Map, Elems: make([]script.Reply, 2*n)}
		}
		for i := range r.Elems {
			var ok bool
			if r.Elems[i], rest, ok = parseReply(rest); !ok {
				return script.Reply{}, nil, false
			}
		}
		return r, rest, true
	case '+':
		return script.Reply{Kind: script.Status, Str: body}, rest, true
	case '-':
		return script.Reply{Kind: script.Error, Str: body}, rest, true
	case ':':
		n, err := strconv.ParseInt(body, 10, 64)
		return script.Reply{Kind: script.Int, Int: n}, rest, err == nil
	case '$':
		n, err := strconv.Atoi(body)
		if err == nil && n == -1 {
			return script.Reply{Kind: script.Nil}, rest, true
		}
		if err != nil || n < 0 || n > len(rest)-2 {
			return script.Reply{}, nil, false
		}
		return script.Reply{Kind: script.Bulk, Str: string(rest[:n])}, rest[n+2:], true
	case '*':
		n, err := strconv.Atoi(body)
		if err != nil || n < -1 {
			return script.Reply{}, nil, false
		}
		if n < 0 {
			return script.Reply{Kind: script.Nil}, rest, true
		}
		r := script.Reply{Kind: script.Array, Elems: make([]script.Reply, n)}
		for i := range r.Elems {
			var ok bool
			if r.Elems[i], rest, ok = parseReply(rest); !ok {
				return script.Reply{}, nil, false
			}
		}
		return r, rest, true
	}
	return script.Reply{}, nil, false
}

// writeReply answers a script's reply in the connection's protocol: a
// null is RESP3's null to a RESP3 client, as Redis converts it.
func (w *writer) scriptReply(r script.Reply) {
	switch r.Kind {
	case script.Nil:
		w.null()
	case script.Int:
		w.integer(r.Int)
	case script.Bulk:
		w.bulkString(r.Str)
	case script.Status:
		w.simple(strings.NewReplacer("\r", " ", "\n", " ").Replace(r.Str))
	case script.Error:
		w.errorLine(r.Str)
	case script.Array, script.Set, script.Map:
		switch r.Kind {
		case script.Array:
			w.array(len(r.Elems))
		case script.Set:
			w.set(len(r.Elems))
		default:
			w.mapHeader(len(r.Elems) / 2)
		}
		for _, e := range r.Elems {
			w.scriptReply(e)
		}
	case script.Double:
		w.double(r.Float)
	case script.Bool:
		if w.proto >= 3 {
			w.bw.WriteString(map[bool]string{true: "#t\r\n", false: "#f\r\n"}[r.Int != 0])
		} else {
			w.integer(r.Int)
		}
	case script.BigNumber:
		if w.proto >= 3 {
			w.bw.WriteString("(" + r.Str + "\r\n")
		} else {
			w.bulkString(r.Str)
		}
	case script.Verbatim:
		if w.proto >= 3 {
			f := (r.Format + "\x00\x00\x00")[:3] // Redis copies three bytes of it
			w.prefixed('=', int64(len(r.Str)+4))
			w.bw.WriteString(f + ":" + r.Str + "\r\n")
		} else {
			w.bulkString(r.Str)
		}
	}
}

// double is a double as Redis answers one: ",<%.17g>" in RESP3, its text
// as a bulk string in RESP2 (C's inf, -inf and nan).
func (w *writer) double(f float64) {
	var s string
	switch {
	case math.IsInf(f, 1):
		s = "inf"
	case math.IsInf(f, -1):
		s = "-inf"
	case math.IsNaN(f) && math.Signbit(f):
		s = "-nan"
	case math.IsNaN(f):
		s = "nan"
	default:
		s = fmt.Sprintf("%.17g", f)
	}
	if w.proto >= 3 {
		w.bw.WriteString("," + s + "\r\n")
		return
	}
	w.bulkString(s)
}
