package fsm

import (
	"fmt"

	"github.com/idemgate/idemgate/command"
)

// Sandbox runs a script's KV commands against a node's applied state
// without changing it, and turns what they did into one log entry (see
// script.go). Reads come from base (the node's applied state, already
// filtered for expiry) the first time a key is touched and are recorded;
// writes go to an overlay, through the KV commands' own apply functions
// (the command table's kv column), at the clock the script runs at. One
// goroutine uses a Sandbox.
type Sandbox struct {
	a      applier
	base   func(key []byte) (command.KVEntry, bool, error)
	seen   map[string]*slot
	reads  []command.ScriptRead
	writes [][]byte
	err    error // base's first error
}

// slot is a key's entry in the overlay, and a collection's elements:
// those of the collection of id elID (a collection the script read, as
// base gave it whole, or one it made).
type slot struct {
	e    command.KVEntry
	ok   bool
	el   *elemSet
	tags map[byte]*tagSet // a stream's (stream_store.go)
	elID uint64
}

// NewSandbox returns a sandbox over base at now (unix nanoseconds, the
// script's clock: not later than the time base filters expiry at).
func NewSandbox(now int64, base func(key []byte) (command.KVEntry, bool, error)) *Sandbox {
	s := &Sandbox{base: base, seen: map[string]*slot{}}
	s.a = applier{now: now, recordDelta: &[4]int64{}, expiredDelta: &[8]int64{}}
	return s
}

// get is kvStore's: the overlay, or base the first time (recorded).
func (s *Sandbox) get(key []byte) (command.KVEntry, bool) {
	if sl, ok := s.seen[string(key)]; ok {
		return sl.e, sl.ok
	}
	e, ok, err := s.base(key)
	if err != nil && s.err == nil {
		s.err = err
	}
	e = e.Clone()
	r := command.ScriptRead{Key: clone(key), Live: ok}
	if ok {
		r.Version, r.ExpiresAt = e.Version, e.ExpiresAt
	}
	s.reads = append(s.reads, r)
	sl := &slot{e: e, ok: ok}
	if ok && e.Kind == command.KindStream {
		// base gives a stream whole (command.StreamReadAll's answer).
		if err := sl.wholeStream(e.Value); err != nil {
			if s.err == nil {
				s.err = err
			}
			sl.e.Value = nil
		}
	} else if ok && e.Kind.IsColl() {
		// base gives a collection whole (command.WholeColl): the overlay
		// keeps its elements, the entry its header.
		h, pairs, err := command.DecodeWholeColl(e.Value)
		if err != nil {
			if s.err == nil {
				s.err = err
			}
			e.Value = nil
			sl.e = e
		} else {
			sl.e.Value = h.Encode()
			sl.el, sl.elID = newElemSet(pairs), h.ID
		}
	}
	s.seen[string(key)] = sl
	return sl.e, ok
}

func (s *Sandbox) put(key []byte, e *command.KVEntry, _ command.KVEntry, _ bool) error {
	sl := s.slotOf(key)
	sl.e, sl.ok = e.Clone(), true
	if h, ok := command.DecodeCollHeader(e.Value); !ok || !e.Kind.IsColl() || h.ID != sl.elID {
		sl.el, sl.tags = nil, nil // another value: the elements it had are gone
	}
	return nil
}

func (s *Sandbox) del(key []byte, _ command.KVEntry) error {
	s.seen[string(key)] = &slot{}
	return nil
}

// slotOf is the key's slot (the key was read through get before any
// write of it: every write reads its key first).
func (s *Sandbox) slotOf(key []byte) *slot {
	sl, ok := s.seen[string(key)]
	if !ok {
		sl = &slot{}
		s.seen[string(key)] = sl
	}
	return sl
}

// elemsOf is the elements of the collection h of key; with make, an
// empty set is made for a collection the script makes.
func (s *Sandbox) elemsOf(key []byte, h command.CollHeader, make bool) *elemSet {
	sl := s.slotOf(key)
	if sl.el != nil && sl.elID == h.ID {
		return sl.el
	}
	if !make {
		return nil
	}
	sl.el, sl.elID = newElemSet(nil), h.ID
	return sl.el
}

func (s *Sandbox) elem(key []byte, h command.CollHeader, field []byte) ([]byte, bool) {
	if el := s.elemsOf(key, h, false); el != nil {
		v, ok := el.m[string(field)]
		return v, ok
	}
	return nil, false
}

func (s *Sandbox) putElem(key []byte, h command.CollHeader, field, value []byte) error {
	s.elemsOf(key, h, true).put(field, value)
	return nil
}

func (s *Sandbox) delElem(key []byte, h command.CollHeader, field []byte) error {
	if el := s.elemsOf(key, h, false); el != nil {
		el.del(field)
	}
	return nil
}

func (s *Sandbox) elems(key []byte, h command.CollHeader, from uint64, fn func(order uint64, field, value []byte) bool) error {
	el := s.elemsOf(key, h, false)
	if el == nil {
		return nil
	}
	i, _ := el.find(from, nil)
	for _, k := range el.keys[i:] {
		if !fn(k.order, []byte(k.field), el.m[k.field]) {
			return nil
		}
	}
	return nil
}

// KV returns the key's entry as the script sees it: its own writes, else
// the node's state; false when it is not live at the sandbox's clock.
func (s *Sandbox) KV(key []byte) (command.KVEntry, bool, error) {
	e, ok, _ := s.a.liveKV(s, key)
	if s.err != nil {
		return command.KVEntry{}, false, s.err
	}
	return e.Clone(), ok, nil
}

// Apply applies a KV command built by one of the constructors to the
// overlay and returns its result, as the state machine will answer it
// when the effects apply. A command a script cannot make, or an invalid
// one, is an error (ErrBadCommand); so is base's failure to read.
func (s *Sandbox) Apply(c *command.Command) (*command.Result, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	sp := spec(c.Type)
	if sp.kv == nil {
		return nil, fmt.Errorf("%w: a script cannot make a %s", command.ErrBadCommand, c.Type)
	}
	// What the log will carry, decoded: the sandbox applies exactly that.
	w := c.Encode(nil)
	var cmd command.Command
	if err := command.Decode(w, &cmd); err != nil {
		return nil, err
	}
	r := sp.kv(&s.a, s, &cmd, 0)
	if s.err != nil {
		return nil, s.err
	}
	// A refusal changed nothing: the reads recorded hold it; a read
	// changes nothing either.
	if c.Type.Op().Write && (r.Code == command.CodeOK || r.Code == command.CodeCreated) {
		s.writes = append(s.writes, w)
	}
	return r.Clone(), nil
}

// Wrote reports whether a command changed something.
func (s *Sandbox) Wrote() bool { return len(s.writes) > 0 }

// Unchanged reports whether every key the script read is still as it
// read it in base: then a script that wrote nothing saw one consistent
// state (each key unchanged from its first read to now, and versions are
// never reused), and needs no log entry.
func (s *Sandbox) Unchanged() (bool, error) {
	for _, r := range s.reads {
		e, ok, err := s.base(r.Key)
		if err != nil {
			return false, err
		}
		if ok != r.Live || (ok && (e.Version != r.Version || e.ExpiresAt != r.ExpiresAt)) {
			return false, nil
		}
	}
	return true, nil
}

// Effects is the log entry of what the script did (TypeScriptEffects); nil
// when it wrote nothing.
func (s *Sandbox) Effects() *command.Command {
	if !s.Wrote() {
		return nil
	}
	return &command.Command{Type: command.TypeScriptEffects, Body: encodeEffects(s.a.now, s.reads, s.writes)}
}
