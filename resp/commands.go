package resp

import (
	"context"
	"fmt"
	"strings"

	"github.com/idemgate/idemgate/command"
)

// kind says how a command runs in a pipeline (pipeline.go).
type kind int

const (
	kindConn  kind = iota // the connection's own state or the node's; no store
	kindRead              // reads the store: after a barrier, unless READONLY
	kindWrite             // writes through Raft
)

// redisCommand is one command of the table.
type redisCommand struct {
	name string
	// op, for a command that runs a store operation, is its command's
	// type: the command takes from the operation's row (command.Op)
	// whether it reads or writes (kind), the grant it needs (write,
	// admin) and whether a script may call it (script), set by register.
	// The connection's own commands, and the store's reads that are no
	// command of the log (KEYS, SCAN), declare them here.
	op command.Type
	// arity as Redis gives it: n exactly n arguments with the name, -n at
	// least n.
	arity int
	kind  kind
	// flags as COMMAND lists them; keys as first, last and step.
	flags                   []string
	firstKey, lastKey, step int
	write                   bool // needs a grant that may write
	admin                   bool // needs the admin role's grant (FLUSHDB, FLUSHALL)
	preAuth                 bool // allowed before AUTH
	// script: a script may call it (and a transaction that runs one
	// hold it); noScript keeps a command of an operation a script may
	// make out of scripts all the same (notInScripts).
	script, noScript bool
	conn             func(c *conn, args [][]byte)
	read             func(c *conn, ctx context.Context, args [][]byte)
	plan             func(c *conn, args [][]byte) plan
	// txRead is a read's plan inside a transaction: reads in the log
	// (commands_multi.go). A read without one cannot be queued.
	txRead func(args [][]byte) plan
	// sub, for a command of subcommands, refuses an unknown one or one of
	// the wrong arity, as Redis does when it looks the command up (so
	// MULTI refuses to queue it); nil: none.
	sub func(args [][]byte) string
}

// commands is the table, by lowercase name; filled in init (commands_*.go
// add theirs) because COMMAND reads it.
var commands = map[string]*redisCommand{}

func register(cmds ...*redisCommand) {
	for _, c := range cmds {
		if c.op != command.TypeUnknown {
			op := c.op.Op()
			c.kind, c.write, c.admin = kindRead, op.Role >= command.RoleWrite, op.Role == command.RoleAdmin
			if op.Write {
				c.kind = kindWrite
			}
			c.script = op.Script && !c.noScript
		}
		commands[c.name] = c
	}
}

// notInScripts keeps c out of scripts though its operation may be in one.
func notInScripts(c *redisCommand) *redisCommand {
	c.noScript = true
	return c
}

// unsupported are Redis commands a client may expect that idemgate does not
// run: a clear error, never partial support.
var unsupported = []string{"fcall", "fcall_ro", "function", "swapdb", "wait", "save", "shutdown"}

// unsupportedWhy are the unsupported commands refused for a reason of
// their own, not for want of an atomic step. Redis refuses them inside
// MULTI (msgNotInTx): so does idemgate, before it says why.
var unsupportedWhy = map[string]string{
	"save":     "ERR SAVE is not supported by idemgate: every acknowledged write is already on the disks of a majority of the nodes; POST /v1/snapshot takes a node's snapshot",
	"shutdown": "ERR SHUTDOWN is not supported by idemgate: stop a node as its service manager does (SIGTERM)",
}

// msgNotInTx is Redis's refusal of a command it never queues (SAVE,
// SHUTDOWN); the transaction is then discarded at EXEC.
const msgNotInTx = "ERR Command not allowed inside a transaction"

// isUnsupported reports whether name is a Redis command idemgate does
// not run.
func isUnsupported(name string) bool {
	for _, u := range unsupported {
		if name == u {
			return true
		}
	}
	return false
}

// check finds the command of a request and says whether this connection
// may run it now; refusal is the error reply when not. c.lastCmd is set
// to the name the metrics count it under.
func (c *conn) check(args [][]byte) (cmd *redisCommand, refusal string) {
	if c.revoked.Load() {
		c.quit = true // its token was revoked: the connection is closed
		return nil, msgNoAuth
	}
	name := strings.ToLower(string(args[0]))
	cmd, ok := commands[name]
	if !ok {
		c.lastCmd = "unknown"
		if isUnsupported(name) {
			c.lastCmd = name
		}
		switch {
		case c.preAuth(): // before AUTH, nothing is said of commands
			return nil, msgNoAuth
		case c.lastCmd != "unknown" && c.multi != nil && unsupportedWhy[name] != "":
			return nil, msgNotInTx
		case c.lastCmd != "unknown" && unsupportedWhy[name] != "":
			return nil, unsupportedWhy[name]
		case c.lastCmd != "unknown":
			return nil, fmt.Sprintf(msgNotSupported, strings.ToUpper(name))
		}
		return nil, unknownCommand(args)
	}
	c.lastCmd = cmd.name
	if !cmd.preAuth && c.preAuth() {
		return nil, msgNoAuth
	}
	if (cmd.arity > 0 && len(args) != cmd.arity) || (cmd.arity < 0 && len(args) < -cmd.arity) {
		return nil, fmt.Sprintf("ERR wrong number of arguments for '%s' command", cmd.name)
	}
	if cmd.sub != nil {
		if refusal := cmd.sub(args); refusal != "" {
			return nil, refusal
		}
	}
	if sess := c.sess.Load(); sess != nil && ((cmd.write && !sess.grant.Write) || (cmd.admin && !sess.grant.Admin)) {
		return nil, fmt.Sprintf("NOPERM User %s has no permissions to run the '%s' command", sess.grant.Name, cmd.name)
	}
	if refusal := c.subscribeRefusal(cmd.name, args); refusal != "" {
		return nil, refusal
	}
	return cmd, ""
}

// unknownCommand is Redis 7's reply, quoting up to 128 bytes of the name
// and of each of its first arguments.
func unknownCommand(args [][]byte) string {
	var b strings.Builder
	fmt.Fprintf(&b, "ERR unknown command '%s', with args beginning with: ", clip(args[0]))
	for _, a := range args[1:] {
		if b.Len() > 512 {
			break
		}
		fmt.Fprintf(&b, "'%s' ", clip(a))
	}
	return b.String()
}

func clip(b []byte) string {
	if len(b) > 128 {
		b = b[:128]
	}
	return string(b)
}
