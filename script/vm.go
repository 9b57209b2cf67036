package script

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Config bounds what one script may take of the node that runs it. The
// bounds are the node's own (another node may stop the same script at
// another point): the caller keeps nothing of a stopped script.
type Config struct {
	// Timeout is the wall-clock time a script may run. Redis lets a
	// script run on (answering BUSY to everyone else); a node that runs
	// one script per connection stops it instead.
	Timeout time.Duration
	// MaxMemory is how far the Go heap may grow while a script runs
	// before it is stopped; the heap is sampled every millisecond, so a
	// script can briefly hold a few times this (a string that doubles).
	// Builtins that make one large value at once (string.rep,
	// table.concat, string.format) refuse to make one larger than it.
	MaxMemory int64
	// CallDepth bounds nested Lua calls (Redis's Lua allows 200 C calls).
	CallDepth int
}

// DefaultConfig is Redis's busy-script time and a heap of 128 MiB.
func DefaultConfig() Config {
	return Config{Timeout: 5 * time.Second, MaxMemory: 128 << 20, CallDepth: 200}
}

// Validate checks the config, naming the field.
func (c Config) Validate() error {
	switch {
	case c.Timeout <= 0:
		return errors.New("script: Timeout must be positive")
	case c.MaxMemory < 1<<20:
		return errors.New("script: MaxMemory must be at least 1 MiB")
	case c.CallDepth < 10 || c.CallDepth > 10000:
		return errors.New("script: CallDepth must be within [10, 10000]")
	}
	return nil
}

// Errors of a run the caller must not keep: the script was stopped.
var (
	// ErrTimeout: the script ran longer than Config.Timeout.
	ErrTimeout = errors.New("script ran longer than its time limit")
	// ErrMemory: the heap grew by more than Config.MaxMemory while it ran,
	// or a value it was about to make would have grown it past that.
	ErrMemory = errors.New("script grew the heap past its memory limit")
	// ErrFailed: the Lua state panicked (a fault of gopher-lua's that a
	// script reached); the state is dropped.
	ErrFailed = errors.New("the Lua state failed")
)

// Script is a compiled script.
type Script struct {
	SHA   string // SHA-1 of the body, lowercase hex: EVALSHA's name
	Body  []byte
	Flags Flags // what its shebang declares (shebang.go)
	fn    *lua.FunctionProto
	// stores: some function of it stores into a table or a global; its
	// runs' states are compared before reuse (pristine.go).
	stores bool
}

// SHA1 is the name EVALSHA knows a body by.
func SHA1(body []byte) string {
	h := sha1.Sum(body)
	return hex.EncodeToString(h[:])
}

// Caller runs one command for a script (redis.call, redis.pcall): args[0]
// is its name. It answers the command's reply, an Error reply for a
// refusal (Redis's text: "ERR Unknown Redis command called from script"),
// in the protocol resp the script set with redis.setresp: 2 (RESP2's
// kinds only, the default) or 3.
type Caller interface {
	Call(args [][]byte, resp int) Reply
}

// Run runs the script with KEYS and ARGV and answers its reply: what it
// returned, or the error it raised, in Redis's words. A non-nil error
// (ErrTimeout, ErrMemory, ErrFailed, or ctx's) means it was stopped: the
// reply is then the error to answer, and what it did must not be kept.
// Nothing a script does panics out of Run: a panic of the Lua state is
// ErrFailed, and that state is never used again.
func (s *Script) Run(ctx context.Context, cfg Config, keys, argv [][]byte, c Caller) (reply Reply, stopped error) {
	v := getVM(cfg)
	L := v.L
	b := newBudget(ctx, cfg)
	defer b.stop()
	defer func() {
		if p := recover(); p != nil {
			// v is dropped: not closed (its state is whatever the panic
			// left), not pooled.
			stopped = b.reason()
			if stopped == nil {
				stopped = ErrFailed
			}
			reply = killed(stopped, b, panicText(p))
		}
	}()
	L.SetContext(b)
	r := &run{s: s, cfg: cfg, c: c, b: b, resp: 2}
	v.cur = r
	v.json = defaultJSONConfig
	// The globals are read-only to the script (protect.go), not to Run.
	L.G.Global.RawSetString("KEYS", stringTable(L, keys))
	L.G.Global.RawSetString("ARGV", stringTable(L, argv))

	L.Push(L.NewFunctionFromProto(s.fn))
	err := L.PCall(0, 1, L.NewFunction(r.errorHandler))
	if stopped := b.reason(); stopped != nil {
		L.Close() // stopped anywhere: not reused
		return killed(stopped, b, ""), stopped
	}
	if err != nil {
		var ae *lua.ApiError
		if errors.As(err, &ae) {
			reply = r.errorReply(ae.Object)
		} else {
			reply = ErrorReply("ERR " + err.Error())
		}
	} else if reply, stopped = r.reply(L.Get(-1)); stopped != nil {
		L.Close()
		return reply, stopped
	}
	putVM(v, s.stores)
	return reply, nil
}

// killed is the reply of a run stopped by err.
func killed(err error, b *budget, detail string) Reply {
	why := b.limit(err)
	if detail != "" {
		why = detail
	}
	return ErrorReply(fmt.Sprintf("ERR Script killed: %v (%s); nothing it wrote was applied", err, why))
}

// panicText is a panic's value on one line.
func panicText(p any) string {
	var s string
	if ae, ok := p.(*lua.ApiError); ok {
		s = lua.LVAsString(ae.Object)
	} else {
		s = fmt.Sprint(p)
	}
	s, _, _ = strings.Cut(s, "\n")
	return strings.ReplaceAll(s, "\r", "")
}

// vm is a Lua state with Redis's environment. Opening the libraries is
// most of a short script's cost, so a state is reused, but only while no
// run has changed its environment (a global set, a library function
// replaced, a metatable or environment changed): after each run the
// environment's tables are compared with what they held when opened, and
// a state that differs is dropped. So no run sees another's doing, as
// Redis's read-only globals ensure there.
type vm struct {
	L     *lua.LState
	pcg   *rand.PCG
	cur   *run
	depth int
	snap  []tableSnap
	// changed: the run called a builtin that may change the environment
	// (pristine.go).
	changed bool
	// jsonNull is cjson.null; json the cjson table's settings, as opened
	// at each run's start.
	jsonNull *lua.LUserData
	json     jsonConfig
}

// tableSnap is one of the environment's tables as opened.
type tableSnap struct {
	t       *lua.LTable
	meta    lua.LValue
	entries map[lua.LValue]lua.LValue
}

// perRun are the globals each run sets anew.
var perRun = map[lua.LValue]bool{lua.LString("KEYS"): true, lua.LString("ARGV"): true}

var vms sync.Pool

func getVM(cfg Config) *vm {
	if v, ok := vms.Get().(*vm); ok && v.depth == cfg.CallDepth {
		return v
	}
	// The registry grows by RegistryGrowStep values at a time, each time
	// copied whole: 32 (the default) made filling it quadratic.
	L := lua.NewState(lua.Options{SkipOpenLibs: true, CallStackSize: cfg.CallDepth,
		RegistrySize: 1024, RegistryMaxSize: 256 * 1024, RegistryGrowStep: 8192, MinimizeStackMemory: true})
	// Each state's generator starts where the process's random source
	// says: math.random differs from run to run, as on Redis 7, unless
	// the script seeds it (math.randomseed).
	v := &vm{L: L, pcg: rand.NewPCG(rand.Uint64(), rand.Uint64()), depth: cfg.CallDepth}
	openLibs(L, v)
	watchChangingBuiltins(L, v)
	protectEnv(L)
	g := L.G.Global
	tables := []*lua.LTable{g}
	g.ForEach(func(_, val lua.LValue) {
		if t, ok := val.(*lua.LTable); ok && t != g {
			tables = append(tables, t)
		}
	})
	if mt, ok := L.GetMetatable(lua.LString("")).(*lua.LTable); ok {
		tables = append(tables, mt)
	}
	for _, t := range tables {
		v.snap = append(v.snap, snapshot(L, t))
	}
	return v
}

func snapshot(L *lua.LState, t *lua.LTable) tableSnap {
	s := tableSnap{t: t, meta: L.GetMetatable(t), entries: map[lua.LValue]lua.LValue{}}
	t.ForEach(func(k, val lua.LValue) {
		if t != L.G.Global || !perRun[k] {
			s.entries[k] = val
		}
	})
	return s
}

// putVM keeps v for another run if its environment is as opened: known
// without a look when the run could not change it (pristine.go), else
// compared.
func putVM(v *vm, stores bool) {
	L := v.L
	L.RemoveContext()
	L.SetTop(0)
	v.cur = nil
	if !stores && !v.changed {
		vms.Put(v)
		return
	}
	v.changed = false
	pristine := L.Env == L.G.Global && len(v.snap) > 0 && L.GetMetatable(lua.LString("")) == v.snap[len(v.snap)-1].t &&
		v.jsonNull.Metatable == lua.LNil
	for _, s := range v.snap {
		if !pristine {
			break
		}
		n := 0
		s.t.ForEach(func(k, val lua.LValue) {
			if s.t == L.G.Global && perRun[k] {
				return
			}
			n++
			if old, ok := s.entries[k]; !ok || old != val {
				pristine = false
			}
		})
		pristine = pristine && n == len(s.entries) && L.GetMetatable(s.t) == s.meta
	}
	if !pristine {
		L.Close()
		return
	}
	vms.Put(v)
}

// run is one run's state, which the redis library's functions share.
type run struct {
	s   *Script
	cfg Config
	c   Caller
	b   *budget
	// resp is the protocol redis.setresp set: 2 or 3.
	resp int
}

// errorHandler runs where an error was raised (Redis's error handler): it
// makes the error a table {err, source, line}, prefixing a string error
// with ERR.
func (r *run) errorHandler(L *lua.LState) int {
	v := L.Get(1)
	t, ok := v.(*lua.LTable)
	if !ok {
		t = L.CreateTable(0, 3)
		t.RawSetString("err", lua.LString("ERR "+lua.LVAsString(v)))
		if v.Type() != lua.LTString && v.Type() != lua.LTNumber {
			t.RawSetString("err", lua.LString("ERR "+v.String()))
		}
	}
	for level := 1; ; level++ {
		dbg, ok := L.GetStack(level)
		if !ok {
			break
		}
		if _, err := L.GetInfo("Sl", dbg, lua.LNil); err == nil && dbg.CurrentLine > 0 {
			t.RawSetString("source", lua.LString("@"+chunkName))
			t.RawSetString("line", lua.LNumber(dbg.CurrentLine))
			break
		}
	}
	L.Push(t)
	return 1
}

// errorReply is the reply for what the error handler made: the message,
// and where it was raised, as Redis 7 words it.
func (r *run) errorReply(v lua.LValue) Reply {
	t, ok := v.(*lua.LTable)
	if !ok {
		return ErrorReply("ERR " + v.String())
	}
	msg := lua.LVAsString(t.RawGetString("err"))
	if msg == "" {
		msg = "ERR unknown error"
	}
	src, line := t.RawGetString("source"), t.RawGetString("line")
	if src != lua.LNil && line != lua.LNil {
		msg = fmt.Sprintf("%s script: %s, on %s:%s.", msg, r.s.SHA, lua.LVAsString(src), lua.LVAsString(line))
	}
	return ErrorReply(msg)
}

func stringTable(L *lua.LState, vals [][]byte) *lua.LTable {
	t := L.CreateTable(len(vals), 0)
	for i, v := range vals {
		t.RawSetInt(i+1, lua.LString(v))
	}
	return t
}
