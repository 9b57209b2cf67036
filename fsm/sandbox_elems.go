package fsm

import (
	"bytes"
	"cmp"
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
