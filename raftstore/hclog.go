package raftstore

// hashicorp/raft (and its NetworkTransport and FileSnapshotStore) logs
// through an hclog.Logger; idemgate logs through log/slog. hclogAdapter is
// an hclog.Logger over the node's *slog.Logger, so every line of a node,
// Raft's included, has one format (text or JSON) and one level setting.
//
// A peer that is down makes Raft log the same error for it every
// heartbeat (twice a second): "failed to heartbeat to", "failed to
// appendEntries to", "failed to contact". The adapter collapses repeats of
// one message for one peer: the first is logged, then at most one per
// peerRepeatWindow, carrying repeated=N (how many were held back since the
// last one logged). Distinct messages, and other peers, are never held back
// by each other.

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
)

// peerRepeatWindow is how often one peer error may be logged again.
const peerRepeatWindow = 30 * time.Second

// maxRepeatKeys bounds the (message, peer) pairs the limiter tracks: peers
// come and go over a year of membership changes.
const maxRepeatKeys = 1024

// hclogAdapter is an hclog.Logger writing to a *slog.Logger.
type hclogAdapter struct {
	sl      *slog.Logger
	name    string
	implied []any            // With's pairs, as hclog takes them
	floor   *atomic.Int32    // SetLevel's level (hclog.NoLevel: the handler decides); shared by derived loggers
	repeats *repeatLimiter   // shared by derived loggers
	now     func() time.Time // the clock of records and of the limiter
}

var _ hclog.Logger = (*hclogAdapter)(nil)

// newHclog returns an hclog.Logger named name over sl; now nil means
// time.Now.
func newHclog(sl *slog.Logger, name string, now func() time.Time) *hclogAdapter {
	if now == nil {
		now = time.Now
	}
	return &hclogAdapter{sl: sl, name: name, floor: new(atomic.Int32),
		repeats: newRepeatLimiter(peerRepeatWindow, maxRepeatKeys), now: now}
}

// slogLevel maps hclog's levels onto slog's; Trace is below Debug, so
// --log-level debug does not show it.
func slogLevel(l hclog.Level) slog.Level {
	switch l {
	case hclog.Trace:
		return slog.LevelDebug - 4
	case hclog.Debug:
		return slog.LevelDebug
	case hclog.NoLevel, hclog.Info:
		return slog.LevelInfo
	case hclog.Warn:
		return slog.LevelWarn
	default:
		return slog.LevelError
	}
}

func (a *hclogAdapter) enabled(l hclog.Level) bool {
	if l == hclog.Off {
		return false
	}
	if f := hclog.Level(a.floor.Load()); f != hclog.NoLevel && l < f {
		return false
	}
	return a.sl.Enabled(context.Background(), slogLevel(l))
}

// Log emits msg at level with hclog's alternating key/value args.
func (a *hclogAdapter) Log(level hclog.Level, msg string, args ...any) {
	if !a.enabled(level) {
		return
	}
	now := a.now()
	attrs := hclogAttrs(append(append([]any(nil), a.implied...), args...), a.name)
	if level >= hclog.Warn {
		if peer := peerOf(attrs); peer != "" {
			ok, repeated := a.repeats.allow(a.name+"\x00"+msg+"\x00"+peer, now)
			if !ok {
				return
			}
			if repeated > 0 {
				attrs = append(attrs, slog.Int("repeated", repeated))
			}
		}
	}
	r := slog.NewRecord(now, slogLevel(level), msg, 0)
	if a.name != "" {
		r.AddAttrs(slog.String("logger", a.name))
	}
	r.AddAttrs(attrs...)
	_ = a.sl.Handler().Handle(context.Background(), r)
}

func (a *hclogAdapter) Trace(msg string, args ...any) { a.Log(hclog.Trace, msg, args...) }
func (a *hclogAdapter) Debug(msg string, args ...any) { a.Log(hclog.Debug, msg, args...) }
func (a *hclogAdapter) Info(msg string, args ...any)  { a.Log(hclog.Info, msg, args...) }
func (a *hclogAdapter) Warn(msg string, args ...any)  { a.Log(hclog.Warn, msg, args...) }
func (a *hclogAdapter) Error(msg string, args ...any) { a.Log(hclog.Error, msg, args...) }

func (a *hclogAdapter) IsTrace() bool { return a.enabled(hclog.Trace) }
func (a *hclogAdapter) IsDebug() bool { return a.enabled(hclog.Debug) }
func (a *hclogAdapter) IsInfo() bool  { return a.enabled(hclog.Info) }
func (a *hclogAdapter) IsWarn() bool  { return a.enabled(hclog.Warn) }
func (a *hclogAdapter) IsError() bool { return a.enabled(hclog.Error) }

// ImpliedArgs returns the pairs With added.
func (a *hclogAdapter) ImpliedArgs() []any { return append([]any(nil), a.implied...) }

// With returns a logger that adds args to every line.
func (a *hclogAdapter) With(args ...any) hclog.Logger {
	b := *a
	b.implied = append(append([]any(nil), a.implied...), args...)
	return &b
}

// Name is the logger's name: the "logger" attribute of its lines.
func (a *hclogAdapter) Name() string { return a.name }

// Named appends name to the logger's name ("raft" becomes "raft.name").
func (a *hclogAdapter) Named(name string) hclog.Logger {
	if a.name != "" {
		name = a.name + "." + name
	}
	return a.ResetNamed(name)
}

// ResetNamed returns the logger under name alone.
func (a *hclogAdapter) ResetNamed(name string) hclog.Logger {
	b := *a
	b.name = name
	return &b
}

// SetLevel sets a floor for this logger and every logger derived from it;
// the slog handler's level still applies (a line shows only when both allow
// it). hclog.NoLevel removes the floor.
func (a *hclogAdapter) SetLevel(level hclog.Level) { a.floor.Store(int32(level)) }

// GetLevel is the lowest level that would be emitted (hclog.Off if none).
func (a *hclogAdapter) GetLevel() hclog.Level {
	for l := hclog.Trace; l <= hclog.Error; l++ {
		if a.enabled(l) {
			return l
		}
	}
	return hclog.Off
}

// StandardLogger is a *log.Logger whose lines go through this logger.
func (a *hclogAdapter) StandardLogger(opts *hclog.StandardLoggerOptions) *log.Logger {
	return log.New(a.StandardWriter(opts), "", 0)
}

// StandardWriter is an io.Writer whose writes are lines of this logger: at
// opts.ForceLevel, or at the level a "[WARN]"-style prefix names when
// opts.InferLevels, else at info.
func (a *hclogAdapter) StandardWriter(opts *hclog.StandardLoggerOptions) io.Writer {
	if opts == nil {
		opts = &hclog.StandardLoggerOptions{}
	}
	return &stdWriter{log: a, infer: opts.InferLevels, force: opts.ForceLevel}
}

type stdWriter struct {
	log   *hclogAdapter
	infer bool
	force hclog.Level
}

// stdPrefixes are the level prefixes hclog's standard writer recognizes.
var stdPrefixes = []struct {
	prefix string
	level  hclog.Level
}{{"[TRACE]", hclog.Trace}, {"[DEBUG]", hclog.Debug}, {"[INFO]", hclog.Info},
	{"[WARN]", hclog.Warn}, {"[ERROR]", hclog.Error}, {"[ERR]", hclog.Error}}

func (w *stdWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimRight(p, " \t\r\n"))
	level := hclog.Info
	if w.infer || w.force != hclog.NoLevel {
		for _, s := range stdPrefixes {
			if strings.HasPrefix(line, s.prefix) {
				level, line = s.level, strings.TrimSpace(line[len(s.prefix):])
				break
			}
		}
	}
	if w.force != hclog.NoLevel {
		level = w.force
	}
	w.log.Log(level, line)
	return len(p), nil
}

// reservedKeys are the keys idemgate's own attributes and slog's fields
// use: raft's "node" ("Node at 127.0.0.1:7001 [Candidate]") beside the
// node's id would make two attributes of one name.
var reservedKeys = map[string]bool{"node": true, "logger": true, "time": true, "level": true, "msg": true}

// hclogAttrs turns hclog's alternating key/value args into slog attributes;
// a value without a key goes under hclog's own EXTRA_VALUE_AT_END, and a
// reserved key is prefixed with the logger's name ("raft_node").
func hclogAttrs(args []any, name string) []slog.Attr {
	out := make([]slog.Attr, 0, len(args)/2+1)
	for i := 0; i < len(args); i += 2 {
		if i+1 == len(args) {
			out = append(out, slog.Attr{Key: hclog.MissingKey, Value: hclogValue(args[i])})
			break
		}
		key, ok := args[i].(string)
		if !ok {
			key = fmt.Sprint(args[i])
		}
		// "backoff time" is one of raft's keys: a key is one word in
		// the text format.
		key = strings.ReplaceAll(key, " ", "_")
		if reservedKeys[key] {
			key = strings.ReplaceAll(cmp.Or(name, "hclog"), ".", "_") + "_" + key
		}
		out = append(out, slog.Attr{Key: key, Value: hclogValue(args[i+1])})
	}
	return out
}

// hclogValue renders one hclog value: scalars as they are; hclog's
// formatting types as hclog renders them; errors, Stringers and structs
// (raft.Server) as text, so JSON lines read as the text ones do.
func hclogValue(v any) slog.Value {
	switch x := v.(type) {
	case hclog.Format:
		if len(x) > 0 {
			if f, ok := x[0].(string); ok {
				return slog.StringValue(fmt.Sprintf(f, x[1:]...))
			}
		}
		return slog.StringValue(fmt.Sprint(x...))
	case hclog.Hex:
		return slog.StringValue(fmt.Sprintf("0x%x", int(x)))
	case hclog.Octal:
		return slog.StringValue(fmt.Sprintf("0%o", int(x)))
	case hclog.Binary:
		return slog.StringValue(fmt.Sprintf("0b%b", int(x)))
	case hclog.Quote:
		return slog.StringValue(fmt.Sprintf("%q", string(x)))
	case time.Duration, time.Time:
		return slog.AnyValue(x) // as idemgate's own lines carry them
	case error, fmt.Stringer:
		return slog.StringValue(fmt.Sprint(x)) // fmt survives a String that panics
	}
	val := slog.AnyValue(v)
	if val.Kind() == slog.KindAny && v != nil {
		return slog.StringValue(fmt.Sprintf("%+v", v))
	}
	return val
}

// peerKeys are the keys under which raft names the peer of an error.
var peerKeys = []string{"peer", "server-id"}

func peerOf(attrs []slog.Attr) string {
	for _, a := range attrs {
		for _, k := range peerKeys {
			if a.Key == k {
				return a.Value.String()
			}
		}
	}
	return ""
}

// repeatLimiter decides which repeats of a line are logged: the first of a
// key, then at most one per window, which reports how many were held back.
type repeatLimiter struct {
	mu      sync.Mutex
	window  time.Duration
	maxKeys int
	seen    map[string]*repeatState
}

type repeatState struct {
	logged time.Time // when this key was last logged
	held   int       // repeats held back since
}

func newRepeatLimiter(window time.Duration, maxKeys int) *repeatLimiter {
	return &repeatLimiter{window: window, maxKeys: maxKeys, seen: map[string]*repeatState{}}
}

// allow reports whether the line under key is logged at now, and how many
// repeats of it were held back since the last one logged.
func (l *repeatLimiter) allow(key string, now time.Time) (ok bool, repeated int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	st := l.seen[key]
	if st == nil {
		if len(l.seen) >= l.maxKeys {
			l.prune(now)
		}
		if len(l.seen) < l.maxKeys { // else: untracked, never held back
			l.seen[key] = &repeatState{logged: now}
		}
		return true, 0
	}
	if now.Sub(st.logged) < l.window {
		st.held++
		return false, 0
	}
	repeated = st.held
	st.logged, st.held = now, 0
	return true, repeated
}

// prune forgets the keys not logged within the window: their next line is
// logged anyway (only its count of held-back repeats is lost).
func (l *repeatLimiter) prune(now time.Time) {
	for k, st := range l.seen {
		if now.Sub(st.logged) >= l.window {
			delete(l.seen, k)
		}
	}
}
