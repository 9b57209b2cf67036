package resp

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/httpx"
	"github.com/idemgate/idemgate/script"
)

// Config configures the listener.
type Config struct {
	// Addr is the address to listen on (host:port).
	Addr string
	// NodeID names this node in INFO.
	NodeID string
	// MaxBulk bounds one argument (a value), as Redis's proto-max-bulk-len;
	// larger gets "-ERR Protocol error: invalid bulk length". Keep it below
	// what the store accepts in one command.
	MaxBulk int
	// MaxArgs bounds the arguments of one command (Redis: 1024*1024).
	MaxArgs int
	// MaxRequest bounds the bytes of one command's arguments together,
	// as Redis's client-query-buffer-limit (1 GiB there); larger gets
	// "-ERR Protocol error: too big request: ..." and the connection
	// closed as soon as the lengths it announces pass it, before those
	// bytes are read. At least MaxBulk.
	MaxRequest int
	// MaxClientBuffer bounds the bytes the listener holds for its
	// clients, all connections together (budget.go): arguments read and
	// not yet answered, queued transactions, values read for replies not
	// yet written, tracking invalidations waiting. A connection past it
	// gets msgBudget and is closed, as Redis closes a client past
	// maxmemory-clients. Each connection's first connAllowance bytes are
	// its own, outside it.
	MaxClientBuffer int
	// MaxInline bounds an inline command's line (Redis: 64 KiB).
	MaxInline int
	// MaxPipeline bounds the commands one connection may have read and
	// not yet answered; beyond it the rest wait in the socket, so a
	// connection holds at most MaxPipeline commands (and MaxPipelineBytes
	// of their arguments, but always at least one command) at once.
	MaxPipeline      int
	MaxPipelineBytes int
	// IdleTimeout closes a connection that sends nothing for this long
	// (0: never, as Redis's timeout 0). ReadTimeout bounds the rest of a
	// request once its first byte came; WriteTimeout a reply's write.
	IdleTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	// MaxTxCommands and MaxTxBytes bound what one connection may queue
	// between MULTI and EXEC (commands, and bytes of their arguments);
	// past either the command is refused and EXEC answers EXECABORT.
	// MaxWatches bounds the keys one connection watches.
	MaxTxCommands int
	MaxTxBytes    int
	MaxWatches    int
	// MaxConnsPerIP bounds the connections from one client address; more
	// get "-ERR max number of clients reached" and are closed.
	MaxConnsPerIP int
	// OpTimeout bounds one pipeline step's wait for the store.
	OpTimeout time.Duration
	// TrackingMaxKeys bounds the keys CLIENT TRACKING remembers for the
	// whole node (Redis's tracking-table-max-keys): past it a remembered
	// key is dropped, and its readers told to invalidate it.
	// TrackingMaxPending bounds the invalidations waiting to be written
	// to one connection: past it they become one "invalidate everything".
	TrackingMaxKeys    int
	TrackingMaxPending int
	// Auth, when set, makes clients authenticate (AUTH, HELLO ... AUTH)
	// before any other command; see AuthFunc. SetAuth replaces it, and
	// closes the connections whose token it revokes.
	Auth AuthFunc
	// Script bounds one run of a script on this node (EVAL): its time, the
	// heap it may grow, its call depth. A script stopped by them applies
	// nothing.
	Script script.Config
	// ScriptRuns bounds the scripts this node runs or compiles at once,
	// read-only ones included, so that raft's heartbeats always have a
	// core; a script past it waits up to ScriptQueueWait for its turn,
	// then is refused with TRYAGAIN, nothing run (script_slots.go).
	ScriptRuns      int
	ScriptQueueWait time.Duration
	// ScriptCache bounds the scripts this node keeps for EVALSHA, counted
	// at their estimated compiled size: past it the least recently used
	// are dropped (and answer NOSCRIPT). MaxScriptSize bounds one script's
	// estimate: a larger one is refused before it is compiled
	// (script_cache.go).
	ScriptCache   int64
	MaxScriptSize int64
	// MaxScriptKeys bounds the keys a script that writes may touch (read
	// or write) in one run, which its effects, one log entry, carry: every
	// node applies them in one go, holding its apply loop meanwhile
	// (script_call.go, overKeys). A script that only reads has no bound.
	MaxScriptKeys int
	Logger        *slog.Logger
	// Tracer makes the spans of the writes (trace.go); nil: tracing off.
	Tracer trace.Tracer
}

// Grant is what an authenticated client may do.
type Grant struct {
	Name  string // the token's name, for CLIENT INFO and NOPERM errors
	Write bool   // may write KV keys and spend and issue form tokens; else reads only
	Admin bool   // may also flush keyspaces (FLUSHDB, FLUSHALL): the admin role's
}

// AuthFunc tells what the secret whose SHA-256 is sum grants (AUTH
// carries the secret); an error for a secret it does not know. The
// listener hashes the secret at once and keeps only the hash, so that a
// reload (SetAuth) can check an open connection's credential again.
type AuthFunc func(sum [sha256.Size]byte) (Grant, error)

// DefaultScriptQueueWait is how long a script waits for its turn by
// default: below go-redis's 3 s read timeout, so that a client is told
// TRYAGAIN (nothing was run) rather than left not knowing.
const DefaultScriptQueueWait = 2 * time.Second

// DefaultMaxScriptKeys is MaxScriptKeys's default: a state machine applies
// the effects of 4,096 keys in 29 ms on a shared 2-core machine, 107 ms
// when its load was 22 (BenchmarkScriptEffectsApply), a tenth of raft's
// default election timeout; 10,000 took 91 ms and 0.6 s, 50,000 0.7 s
// and 3.8 s.
const DefaultMaxScriptKeys = 4096

// MinScriptSize is the least MaxScriptSize: a one-line script's estimate
// is about 65 KiB (scriptCost).
const MinScriptSize = 1 << 20

// DefaultConfig is the listener's defaults; Addr is left to the caller.
// The limits every listener shares (a value as large as a request body,
// the timeouts, the connections per address) are theirs.
func DefaultConfig() Config {
	l := httpx.DefaultLimits()
	return Config{
		MaxBulk:            l.MaxRequestBody,
		MaxArgs:            64 << 10,
		MaxRequest:         2 * l.MaxRequestBody,
		MaxClientBuffer:    16 * l.MaxRequestBody,
		MaxInline:          64 << 10,
		MaxPipeline:        1024,
		MaxPipelineBytes:   1 << 20,
		IdleTimeout:        l.IdleTimeout,
		ReadTimeout:        l.ReadTimeout,
		WriteTimeout:       l.WriteTimeout,
		MaxTxCommands:      10000,
		MaxTxBytes:         8 << 20,
		MaxWatches:         10000,
		MaxConnsPerIP:      l.MaxConnsPerIP,
		OpTimeout:          5 * time.Second,
		TrackingMaxKeys:    1_000_000,
		TrackingMaxPending: 10_000,
		Script:             script.DefaultConfig(),
		ScriptRuns:         DefaultScriptRuns(),
		ScriptQueueWait:    DefaultScriptQueueWait,
		ScriptCache:        64 << 20,
		MaxScriptSize:      16 << 20,
		MaxScriptKeys:      DefaultMaxScriptKeys,
	}
}

// Validate checks the config; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.Addr == "":
		return errors.New("resp: Addr is empty")
	case c.MaxBulk <= 0 || c.MaxArgs <= 0 || c.MaxInline <= 0 || c.MaxPipeline <= 0 || c.MaxPipelineBytes <= 0:
		return fmt.Errorf("resp: MaxBulk, MaxArgs, MaxInline, MaxPipeline and MaxPipelineBytes must be positive")
	case c.IdleTimeout < 0 || c.ReadTimeout <= 0 || c.WriteTimeout <= 0 || c.OpTimeout <= 0:
		return fmt.Errorf("resp: ReadTimeout, WriteTimeout and OpTimeout must be positive, IdleTimeout not negative")
	case c.MaxConnsPerIP <= 0:
		return fmt.Errorf("resp: MaxConnsPerIP must be positive")
	case c.MaxTxCommands <= 0 || c.MaxTxCommands > command.MaxTxCommands:
		return fmt.Errorf("resp: MaxTxCommands must be 1 to %d", command.MaxTxCommands)
	case c.MaxWatches <= 0 || c.MaxWatches > command.MaxTxWatches:
		return fmt.Errorf("resp: MaxWatches must be 1 to %d", command.MaxTxWatches)
	case c.MaxRequest < c.MaxBulk:
		return fmt.Errorf("resp: MaxRequest %d is less than MaxBulk %d: a largest value could not be sent", c.MaxRequest, c.MaxBulk)
	case c.MaxClientBuffer < c.MaxRequest:
		return fmt.Errorf("resp: MaxClientBuffer %d is less than MaxRequest %d: a largest request could not be held", c.MaxClientBuffer, c.MaxRequest)
	case c.MaxTxBytes <= 0:
		return fmt.Errorf("resp: MaxTxBytes must be positive")
	case c.TrackingMaxKeys <= 0 || c.TrackingMaxPending <= 0:
		return fmt.Errorf("resp: TrackingMaxKeys and TrackingMaxPending must be positive")
	case c.ScriptRuns <= 0 || c.ScriptQueueWait <= 0 || c.MaxScriptKeys <= 0:
		return fmt.Errorf("resp: ScriptRuns, ScriptQueueWait and MaxScriptKeys must be positive")
	case c.MaxScriptSize < MinScriptSize || c.ScriptCache < c.MaxScriptSize:
		return fmt.Errorf("resp: MaxScriptSize %d, ScriptCache %d: want MaxScriptSize at least %d and ScriptCache at least MaxScriptSize", c.MaxScriptSize, c.ScriptCache, MinScriptSize)
	}
	if err := c.Script.Validate(); err != nil {
		return fmt.Errorf("resp: Script: %w", err)
	}
	return nil
}
