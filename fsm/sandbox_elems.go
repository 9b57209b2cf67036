package fsm

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/idemgate/idemgate/command"
)

// elemSet is a collection's elements in a script's sandbox: by field, and
// in the order the element bucket keeps them (order, then field), so a
// sandbox walks them as the state machine will.
type elemSet struct {
	m    map[string][]byte
	keys []elemKey // sorted
}

type elemKey struct {
	order uint64
	field string
}

func compareElem(a, b elemKey) int {
	if c := cmp.Compare(a.order, b.order); c != 0 {
		return c
	}
	return cmp.Compare(a.field, b.field)
}

// newElemSet holds pairs (fields and values alternating), copied.
func newElemSet(pairs [][]byte) *elemSet {
	el := &elemSet{m: make(map[string][]byte, len(pairs)/2), keys: make([]elemKey, 0, len(pairs)/2)}
	for i := 0; i+1 < len(pairs); i += 2 {
		f := string(pairs[i])
		if _, dup := el.m[f]; !dup {
			el.keys = append(el.keys, elemKey{command.ElemOrder(pairs[i]), f})
		}
		el.m[f] = bytes.Clone(pairs[i+1])
	}
	slices.SortFunc(el.keys, compareElem)
	return el
}

// find is where an element of order and field is, or goes.
func (el *elemSet) find(order uint64, field []byte) (int, bool) {
	return slices.BinarySearchFunc(el.keys, elemKey{order, string(field)}, compareElem)
}

func (el *elemSet) put(field, value []byte) {
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	if _, ok := el.m[string(field)]; !ok {
		i, _ := el.find(command.ElemOrder(field), field)
		el.keys = slices.Insert(el.keys, i, elemKey{command.ElemOrder(field), string(field)})
	}
	el.m[string(field)] = v
}

func (el *elemSet) del(field []byte) {
	if _, ok := el.m[string(field)]; !ok {
		return
	}
	delete(el.m, string(field))
	if i, ok := el.find(command.ElemOrder(field), field); ok {
		el.keys = slices.Delete(el.keys, i, i+1)
	}
}

// elemPart is a collection's elements read in part, for a sandbox whose
// base gave the header alone: the fields read or written so far (vals),
// and those read absent or deleted (gone). A read of a field not in
// either reads it (Sandbox.readField); a walk reads the whole and lays
// these over it (Sandbox.readWhole), the fields read being what the
// whole holds too.
type elemPart struct {
	vals map[string][]byte
	gone map[string]bool
}

func newElemPart() *elemPart { return &elemPart{vals: map[string][]byte{}, gone: map[string]bool{}} }

func (p *elemPart) put(field, value []byte) {
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{}
	}
	p.vals[string(field)] = v
	delete(p.gone, string(field))
}

func (p *elemPart) del(field []byte) {
	delete(p.vals, string(field))
	p.gone[string(field)] = true
}

// readField is field of the collection of sl (read in part), read from
// the node's state the first time.
func (s *Sandbox) readField(key []byte, sl *slot, field []byte) ([]byte, bool) {
	if v, ok := sl.part.vals[string(field)]; ok {
		return v, true
	}
	if sl.part.gone[string(field)] {
		return nil, false
	}
	v, ok := s.readElems(key, sl, [][]byte{field})
	if !ok {
		return nil, false
	}
	vals, found, err := command.DecodeFound(v)
	if err != nil || len(found) != 1 {
		s.fail(fmt.Errorf("%w: a read's fields", command.ErrBadCommand))
		return nil, false
	}
	if !found[0] {
		sl.part.gone[string(field)] = true
		return nil, false
	}
	sl.part.vals[string(field)] = bytes.Clone(vals[0])
	return sl.part.vals[string(field)], true
}

// readWhole reads the collection of sl whole and lays what the script
// read and wrote of it over it: from now on it is held whole.
func (s *Sandbox) readWhole(key []byte, sl *slot) {
	part := sl.part
	sl.part, sl.el = nil, newElemSet(nil)
	if v, ok := s.readElems(key, sl, nil); ok {
		if _, pairs, err := command.DecodeWholeColl(v); err != nil {
			s.fail(err)
		} else {
			sl.el = newElemSet(pairs)
		}
	}
	for f, v := range part.vals {
		sl.el.put([]byte(f), v)
	}
	for f := range part.gone {
		sl.el.del([]byte(f))
	}
}

// readElems reads elements of the collection of sl (fields, or nil: the
// whole) through the sandbox's element reader. A collection no longer as
// base gave it (another version, or gone) makes the run's read of the
// key one that can never hold: the run is refused where its reads are
// checked (Unchanged, the effects' apply) and run again, as one that
// raced a write is, so what it read out of step is never answered.
func (s *Sandbox) readElems(key []byte, sl *slot, fields [][]byte) ([]byte, bool) {
	version, v, ok, err := s.elemsR(key, sl.e.Kind, fields)
	if err != nil {
		s.fail(err)
		return nil, false
	}
	if r := &s.reads[sl.read]; !ok || version != r.Version {
		r.Version = 0 // no live key's: a live key's version is a revision, at least 1
		return v, ok
	}
	return v, true
}

// fail keeps the sandbox's first error.
func (s *Sandbox) fail(err error) {
	if s.err == nil {
		s.err = err
	}
}
