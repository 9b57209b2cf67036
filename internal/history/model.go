package history

import (
	"fmt"
	"math"
	"sort"

	"github.com/anishathalye/porcupine"
)

// Kind is an operation.
type Kind int

// The operations.
const (
	SetNX Kind = iota
	Set
	CAS
	Get
	GetDel
	Delete
	Begin    // a record begin: the owner gets a fencing token
	Complete // the owner completes with its fencing token
)

var kindNames = [...]string{"setnx", "set", "cas", "get", "getdel", "delete", "begin", "complete"}

func (k Kind) String() string { return kindNames[k] }

// Input is what a client asked, with its call and return times (the model
// needs them for TTLs: an expiry is only known to lie in the window of the
// write that set it).
type Input struct {
	Kind    Kind
	Key     string
	Value   string
	TTL     int64  // nanoseconds; 0: none
	Version uint64 // CAS: the expected version; Complete: the fencing token
	Call    int64
	Return  int64
}

// Output is what the client observed. Unknown: the client never saw an
// answer (a timeout, a cut connection), so the operation may or may not
// have taken effect, with any result.
type Output struct {
	Unknown bool
	OK      bool   // SETNX created, CAS/Complete succeeded, GET/GETDEL/DELETE found, Begin created
	Value   string // GET/GETDEL: the value; failed SETNX: the existing value
	Version uint64 // the version after a write, read by GET; Begin: the fencing token
}

// state is one key's state. An expiry is a window [minExp, maxExp] of
// client-clock times; 0 means none.
type state struct {
	exists         bool
	value          string
	version        uint64
	minExp, maxExp int64
	owned          bool // a record: begun, not completed
	fence          uint64
	// vUnknown: a write whose answer was never seen set the version (or
	// fencing token); it is known only to be above version.
	vUnknown bool
}

// casMatches reports whether a CAS expecting version v may succeed: v 0
// means "only if the key does not exist", as etcd's create revision 0.
func (s state) casMatches(v uint64) bool {
	if v == 0 {
		return !s.exists
	}
	return s.exists && s.versionIs(v)
}

// casMayFail reports whether a CAS expecting v may fail.
func (s state) casMayFail(v uint64) bool {
	if v == 0 {
		return s.exists
	}
	return !s.exists || s.vUnknown || s.version != v
}

// versionIs reports whether the key's version may be v.
func (s state) versionIs(v uint64) bool {
	return s.version == v && !s.vUnknown || s.vUnknown && v > s.version
}

// Model is the porcupine model, partitioned by key.
var Model = porcupine.NondeterministicModel{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		byKey := map[string][]porcupine.Operation{}
		var keys []string
		for _, op := range h {
			k := op.Input.(Input).Key
			if _, ok := byKey[k]; !ok {
				keys = append(keys, k)
			}
			byKey[k] = append(byKey[k], op)
		}
		sort.Strings(keys)
		out := make([][]porcupine.Operation, 0, len(keys))
		for _, k := range keys {
			out = append(out, byKey[k])
		}
		return out
	},
	Init: func() []interface{} { return []interface{}{state{}} },
	Step: func(st, in, out interface{}) []interface{} {
		s, i, o := st.(state), in.(Input), out.(Output)
		var next []interface{}
		for _, pre := range preStates(s, i) {
			if o.Unknown {
				// It may not have happened...
				next = append(next, pre)
				// ... or happened, with whatever result.
				next = append(next, stepAny(pre, i)...)
				continue
			}
			if n, ok := step(pre, i, o); ok {
				next = append(next, n)
			}
		}
		return dedupe(next)
	},
	DescribeOperation: func(in, out interface{}) string {
		i, o := in.(Input), out.(Output)
		if o.Unknown {
			return fmt.Sprintf("%s(%s, %q) -> ?", i.Kind, i.Key, i.Value)
		}
		return fmt.Sprintf("%s(%s, %q, v%d) -> ok=%v %q v%d", i.Kind, i.Key, i.Value, i.Version, o.OK, o.Value, o.Version)
	},
}

// preStates are the states the key may be in at some point of the
// operation's window: alive, or expired if its expiry may have passed.
func preStates(s state, i Input) []state {
	if !s.exists || s.minExp == 0 {
		return []state{s}
	}
	var out []state
	if i.Call < s.maxExp { // some point of the window may precede the expiry
		out = append(out, s)
	}
	if i.Return >= s.minExp { // some point may follow it
		out = append(out, state{})
	}
	return out
}

func expiry(i Input) (int64, int64) {
	if i.TTL <= 0 {
		return 0, 0
	}
	hi := int64(math.MaxInt64)
	if i.Return < math.MaxInt64-i.TTL {
		hi = i.Return + i.TTL
	}
	return i.Call + i.TTL, hi
}

// written is the state after a write of i that assigned version v.
func written(i Input, v uint64) state {
	lo, hi := expiry(i)
	return state{exists: true, value: i.Value, version: v, minExp: lo, maxExp: hi}
}

// step applies a known outcome; false when it could not have happened.
func step(s state, i Input, o Output) (state, bool) {
	switch i.Kind {
	case SetNX:
		if o.OK {
			return written(i, o.Version), !s.exists && o.Version > s.version
		}
		return s, s.exists && o.Value == s.value
	case Set:
		return written(i, o.Version), o.OK && o.Version > s.version
	case CAS:
		if o.OK {
			return written(i, o.Version), s.casMatches(i.Version) && o.Version > s.version && o.Version > i.Version
		}
		return s, s.casMayFail(i.Version)
	case Get:
		if o.OK {
			n := s
			n.version, n.vUnknown = o.Version, false
			return n, s.exists && o.Value == s.value && s.versionIs(o.Version)
		}
		return s, !s.exists
	case GetDel, Delete:
		if o.OK {
			ok := s.exists && (i.Kind == Delete || o.Value == s.value)
			return state{version: s.version}, ok
		}
		return s, !s.exists
	case Begin:
		if o.OK {
			lo, hi := expiry(i)
			return state{exists: true, owned: true, fence: o.Version, version: o.Version, minExp: lo, maxExp: hi}, !s.exists
		}
		return s, s.exists
	case Complete:
		fenceMay := s.exists && s.owned && (s.fence == i.Version && !s.vUnknown || s.vUnknown && i.Version > s.fence)
		if o.OK {
			n := s
			n.owned, n.fence, n.vUnknown = false, i.Version, false
			return n, fenceMay
		}
		mayDiffer := !(s.exists && s.owned) || s.vUnknown || s.fence != i.Version
		return s, mayDiffer
	}
	return s, false
}

// stepAny is every state an operation whose result was never seen may have
// left. A write's version is then unknown, known only to be above the last.
func stepAny(s state, i Input) []interface{} {
	unknownWrite := func() state {
		n := written(i, s.version)
		n.vUnknown = true
		return n
	}
	switch i.Kind {
	case SetNX:
		if !s.exists {
			return []interface{}{unknownWrite()}
		}
	case Set:
		return []interface{}{unknownWrite()}
	case CAS:
		if s.casMatches(i.Version) {
			n := written(i, max(s.version, i.Version))
			n.vUnknown = true
			return []interface{}{n}
		}
	case GetDel, Delete:
		if s.exists {
			return []interface{}{state{version: s.version, vUnknown: s.vUnknown}}
		}
	case Begin:
		if !s.exists {
			lo, hi := expiry(i)
			return []interface{}{state{exists: true, owned: true, fence: s.version, version: s.version, minExp: lo, maxExp: hi, vUnknown: true}}
		}
	case Complete:
		if s.exists && s.owned && (s.fence == i.Version || s.vUnknown && i.Version > s.fence) {
			n := s
			n.owned, n.fence, n.vUnknown = false, i.Version, false
			return []interface{}{n}
		}
	}
	return nil
}

func dedupe(states []interface{}) []interface{} {
	seen := map[state]bool{}
	out := states[:0]
	for _, s := range states {
		if !seen[s.(state)] {
			seen[s.(state)] = true
			out = append(out, s)
		}
	}
	return out
}

// Check checks a history; a timeout counts as a failure: a history too
// large to check proves nothing.
func Check(ops []porcupine.Operation, timeout int64) porcupine.CheckResult {
	return porcupine.CheckOperationsTimeout(Model.ToModel(), ops, durationNS(timeout))
}
