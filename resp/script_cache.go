package resp

import (
	"container/list"
	"context"
	"fmt"
	"sync"

	"github.com/idemgate/idemgate/script"
)

// scriptCache is this node's scripts by SHA-1, compiled once, for EVALSHA.
// It holds at most ScriptCache bytes of them, counted at their estimated
// compiled size (scriptCost: compiled code is 2 to 20 times its source,
// a function a thousand), and drops the least recently used to make room:
// a client whose script was dropped gets NOSCRIPT, as after a Redis
// restart, and its library sends the script again with EVAL. A script
// estimated over MaxScriptSize is refused before it is compiled (EVAL and
// SCRIPT LOAD alike): compiling it would take that much heap, and more
// for a moment.
type scriptCache struct {
	max, maxOne int64
	runs        *scriptSlots // a compile takes one, as a run does

	mu      sync.Mutex
	m       map[string]*list.Element // of *cachedScript
	lru     list.List                // the most recently used first
	bytes   int64                    // the cost of what it holds
	evicted int64                    // scripts dropped to make room, for tests and INFO
}

type cachedScript struct {
	s    *script.Script
	cost int64
	// given: a client of this node gave it (EVAL, SCRIPT LOAD), so
	// EVALSHA here finds it. A leader keeps the scripts its followers
	// forward compiled too, but each node answers EVALSHA only for the
	// scripts its own clients gave it, as a Redis Cluster node does.
	given bool
}

func newScriptCache(max, maxOne int64, runs *scriptSlots) *scriptCache {
	return &scriptCache{max: max, maxOne: maxOne, runs: runs, m: map[string]*list.Element{}}
}

// msgScriptTooLarge: a script whose compiled form would pass the
// per-script cap; the numbers are KiB.
const msgScriptTooLarge = "ERR script too large: about %d KiB once compiled, over this node's limit of %d KiB for one script (scripts.max_size)"

// get is the script of sha that this node's clients gave it (EVALSHA's,
// SCRIPT EXISTS's); nil for none.
func (sc *scriptCache) get(sha string) *script.Script {
	if s, given := sc.known(sha, false); given {
		return s
	}
	return nil
}

// known is the compiled script of sha (nil: none) and whether it is
// given to EVALSHA; give gives it from now on.
func (sc *scriptCache) known(sha string, give bool) (*script.Script, bool) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	e := sc.m[sha]
	if e == nil {
		return nil, false
	}
	c := sc.touch(e, give)
	return c.s, c.given
}

// touch marks e the most recently used, and given when give; sc.mu held.
func (sc *scriptCache) touch(e *list.Element, give bool) *cachedScript {
	sc.lru.MoveToFront(e)
	c := e.Value.(*cachedScript)
	c.given = c.given || give
	return c
}

// load compiles body (unless known) and keeps it, given to EVALSHA; the
// error is the reply.
// The compile waits for one of the node's script slots (ctx bounds the
// wait with the slots' own): compiling is a script's work too.
func (sc *scriptCache) load(ctx context.Context, body []byte) (*script.Script, error) {
	return sc.compile(ctx, body, true)
}

// loadForwarded is load for a script a follower forwarded
// (script_leader.go): kept compiled, but not given to this node's
// EVALSHA.
func (sc *scriptCache) loadForwarded(ctx context.Context, body []byte) (*script.Script, error) {
	return sc.compile(ctx, body, false)
}

func (sc *scriptCache) compile(ctx context.Context, body []byte, given bool) (*script.Script, error) {
	sha := script.SHA1(body)
	if s, _ := sc.known(sha, given); s != nil {
		return s, nil
	}
	// Lua's own refusals first (a script nested too deep answers as
	// in Redis), then the weight: both a pass of a lexer.
	if err := script.Check(body); err != nil {
		return nil, err
	}
	cost := scriptCost(body)
	if cost > sc.maxOne {
		return nil, fmt.Errorf(msgScriptTooLarge, (cost+1023)>>10, sc.maxOne>>10)
	}
	if err := sc.runs.take(ctx); err != nil {
		return nil, err
	}
	var s *script.Script
	var err error
	sc.runs.onThread(func() { s, err = script.Compile(append([]byte(nil), body...)) })
	sc.runs.give()
	if err != nil {
		return nil, err
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if e, ok := sc.m[sha]; ok { // compiled meanwhile by another connection
		return sc.touch(e, given).s, nil
	}
	sc.m[sha] = sc.lru.PushFront(&cachedScript{s: s, cost: cost, given: given})
	sc.bytes += cost
	for sc.bytes > sc.max && sc.lru.Len() > 1 {
		old := sc.lru.Back()
		c := sc.lru.Remove(old).(*cachedScript)
		delete(sc.m, c.s.SHA)
		sc.bytes -= c.cost
		sc.evicted++
	}
	return s, nil
}

func (sc *scriptCache) flush() {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	sc.m, sc.bytes = map[string]*list.Element{}, 0
	sc.lru.Init()
}

// size is what the cache holds: scripts, their cost, and how many it
// dropped so far.
func (sc *scriptCache) size() (scripts int, bytes, evicted int64) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return sc.lru.Len(), sc.bytes, sc.evicted
}
