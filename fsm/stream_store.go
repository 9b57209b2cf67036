package fsm

import (
	"bytes"
	"slices"

	"github.com/idemgate/idemgate/command"
)

// A stream's tagged element entries (package command's stream.go): the
// entries, the nodes, and the consumer groups' tags, each entry
// id (8) | tag (1) | k  ->  v  in the element bucket, in a batch's
// transaction (boltKV) and in a script's sandbox (Sandbox), which holds a
// stream whole, as StreamReadAll gives it. These are the functions the
// consumer groups read and write their tags with.

// tagKey is an element entry's key: the collection's id, tag, k.
func tagKey(h command.CollHeader, tag byte, k []byte) []byte {
	b := command.ElemPrefix(h.ID, tag, 0)[:9]
	return append(b, k...)
}

func (b boltKV) tagGet(_ []byte, h command.CollHeader, tag byte, k []byte) ([]byte, bool) {
	key := tagKey(h, tag, k)
	ek, v := b.a.cursor(b.elemsBucket()).Seek(key)
	if !bytes.Equal(ek, key) {
		return nil, false
	}
	return v, true
}

func (b boltKV) tagPut(_ []byte, h command.CollHeader, tag byte, k, v []byte) error {
	if v == nil {
		v = []byte{}
	}
	return b.elemsBucket().Put(tagKey(h, tag, k), v)
}

func (b boltKV) tagDel(_ []byte, h command.CollHeader, tag byte, k []byte) error {
	return b.elemsBucket().Delete(tagKey(h, tag, k))
}

func (b boltKV) tagWalk(_ []byte, h command.CollHeader, tag byte, from []byte, rev bool, fn func(k, v []byte) bool) error {
	prefix := tagKey(h, tag, nil)
	c := b.elemsBucket().Cursor()
	var k, v []byte
	switch {
	case !rev:
		k, v = c.Seek(append(slices.Clip(prefix), from...))
	default:
		end := tagKey(h, tag+1, nil)
		if tag == 0xff {
			end = command.ElemPrefix(h.ID+1, 0, 0)[:9]
		}
		if from != nil {
			end = append(slices.Clip(prefix), from...)
		}
		k, v = c.Seek(end)
		switch {
		case k == nil:
			k, v = c.Last()
		case from == nil || !bytes.Equal(k, end):
			k, v = c.Prev()
		}
	}
	for ; k != nil && bytes.HasPrefix(k, prefix); k, v = tstep(c, rev) {
		if !fn(k[9:], v) {
			return nil
		}
	}
	return nil
}

func tstep(c interface {
	Next() ([]byte, []byte)
	Prev() ([]byte, []byte)
}, rev bool) ([]byte, []byte) {
	if rev {
		return c.Prev()
	}
	return c.Next()
}

// tagSet is a stream's entries of one tag in a script's sandbox, by key
// and in key order.
type tagSet struct {
	m    map[string][]byte
	keys []string // sorted
}

func (t *tagSet) put(k, v []byte) {
	v = bytes.Clone(v)
	if v == nil {
		v = []byte{}
	}
	if _, ok := t.m[string(k)]; !ok {
		i, _ := slices.BinarySearch(t.keys, string(k))
		t.keys = slices.Insert(t.keys, i, string(k))
	}
	t.m[string(k)] = v
}

func (t *tagSet) del(k []byte) {
	if _, ok := t.m[string(k)]; !ok {
		return
	}
	delete(t.m, string(k))
	if i, ok := slices.BinarySearch(t.keys, string(k)); ok {
		t.keys = slices.Delete(t.keys, i, i+1)
	}
}

// tagsOf is the tagged entries of the collection h of key, tag's; with
// make, made for a collection the script makes.
func (s *Sandbox) tagsOf(key []byte, h command.CollHeader, tag byte, make bool) *tagSet {
	sl := s.slotOf(key)
	if sl.tags == nil || sl.elID != h.ID {
		if !make {
			return nil
		}
		sl.tags, sl.elID = map[byte]*tagSet{}, h.ID
	}
	t := sl.tags[tag]
	if t == nil && make {
		t = &tagSet{m: map[string][]byte{}}
		sl.tags[tag] = t
	}
	return t
}

func (s *Sandbox) tagGet(key []byte, h command.CollHeader, tag byte, k []byte) ([]byte, bool) {
	if t := s.tagsOf(key, h, tag, false); t != nil {
		v, ok := t.m[string(k)]
		return v, ok
	}
	return nil, false
}

func (s *Sandbox) tagPut(key []byte, h command.CollHeader, tag byte, k, v []byte) error {
	s.tagsOf(key, h, tag, true).put(k, v)
	return nil
}

func (s *Sandbox) tagDel(key []byte, h command.CollHeader, tag byte, k []byte) error {
	if t := s.tagsOf(key, h, tag, false); t != nil {
		t.del(k)
	}
	return nil
}

func (s *Sandbox) tagWalk(key []byte, h command.CollHeader, tag byte, from []byte, rev bool, fn func(k, v []byte) bool) error {
	t := s.tagsOf(key, h, tag, false)
	if t == nil {
		return nil
	}
	i, found := slices.BinarySearch(t.keys, string(from))
	switch {
	case from == nil && rev:
		i = len(t.keys) - 1
	case rev && !found:
		i--
	}
	step := 1
	if rev {
		step = -1
	}
	for ; i >= 0 && i < len(t.keys); i += step {
		k := t.keys[i]
		if !fn([]byte(k), t.m[k]) {
			return nil
		}
	}
	return nil
}

// wholeStream fills a slot from a stream read whole (StreamReadAll's
// answer): its header in the entry, its tagged entries in the slot.
func (sl *slot) wholeStream(v []byte) error {
	h, pairs, err := command.StreamRead(&command.Result{Value: v})
	if err != nil {
		return err
	}
	sl.e.Value = h.Encode()
	sl.tags, sl.elID = map[byte]*tagSet{}, h.ID
	for i := 0; i+1 < len(pairs); i += 2 {
		if len(pairs[i]) == 0 {
			return command.ErrBadCommand
		}
		tag := pairs[i][0]
		t := sl.tags[tag]
		if t == nil {
			t = &tagSet{m: map[string][]byte{}}
			sl.tags[tag] = t
		}
		t.put(pairs[i][1:], pairs[i+1])
	}
	return nil
}
