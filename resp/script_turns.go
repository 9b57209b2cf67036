package resp

import (
	"context"
	"hash/maphash"
	"slices"
)

// keyTurns make this node's writing scripts that touch the same keys run
// one after another, as Redis runs every script: from the start of a
// run until its effects are applied (or found stale), a script holds the
// turn of each key it names (KEYS) and, on a run after one whose effects
// found a key changed, of each key that run touched as well.
//
// Without them, scripts that share keys race: each runs on the same
// state, the first entry applies, and every other finds a key it read
// changed and runs again (commands_script.go). Eight clients of one
// queue (BullMQ: every script of a queue writes its event stream, its
// wait and active lists, its marker) ran each other out of their runs:
// with three workers of concurrency 8 and a producer, about one job in
// fifteen failed with "the keys this script read kept changing under it".
// Taking turns, a node's scripts on one queue never race each other;
// what can still change a key between a run and its entry is another
// node's script, or a plain command.
//
// A turn is a stripe of keyTurnStripes, the key's hash: two keys may
// share one, which only makes their scripts wait for each other. A run
// takes its stripes in ascending order (so two runs never wait on each
// other in a cycle), before its script slot (script_slots.go: a run that
// holds a slot never waits for a turn, so slots and turns never wait on
// each other either), and waits for them no longer than its context.
// Read-only scripts take none: their reads are checked after a barrier,
// and they write nothing another script could race.
type keyTurns struct {
	seed    maphash.Seed
	stripes [keyTurnStripes]chan struct{}
}

// keyTurnStripes is how many turns the keys share: enough that scripts
// on unrelated keys rarely wait for each other, few enough to take them
// all (a script touching more keys takes each at most once).
const keyTurnStripes = 1024

func newKeyTurns() *keyTurns {
	k := &keyTurns{seed: maphash.MakeSeed()}
	for i := range k.stripes {
		k.stripes[i] = make(chan struct{}, 1)
	}
	return k
}

// turn is the stripes a run holds, ascending.
type turn struct {
	k    *keyTurns
	held []int
}

// stripesOf are the stripes of keys, ascending, each once.
func (k *keyTurns) stripesOf(keys [][]byte) []int {
	s := make([]int, 0, len(keys))
	for _, key := range keys {
		s = append(s, k.stripe(key))
	}
	slices.Sort(s)
	return slices.Compact(s)
}

// stripe is key's stripe.
func (k *keyTurns) stripe(key []byte) int { return int(maphash.Bytes(k.seed, key) % keyTurnStripes) }

// stripeSet is a set of stripes: those a run touched.
type stripeSet [keyTurnStripes / 64]uint64

func (s *stripeSet) add(stripe int) { s[stripe/64] |= 1 << (stripe % 64) }

// list is the set's stripes, ascending.
func (s *stripeSet) list() []int {
	var l []int
	for i, w := range s {
		for b := 0; b < 64; b++ {
			if w&(1<<b) != 0 {
				l = append(l, i*64+b)
			}
		}
	}
	return l
}

// union is want (ascending) with the set's stripes, ascending.
func (s *stripeSet) union(want []int) []int {
	all := append(s.list(), want...)
	slices.Sort(all)
	return slices.Compact(all)
}

// take waits for the turns of stripes (ascending, each once), up to ctx;
// then the caller holds them until give. On ctx's end it holds none and
// returns ctx's error.
func (k *keyTurns) take(ctx context.Context, stripes []int) (*turn, error) {
	t := &turn{k: k}
	return t, t.add(ctx, stripes)
}

// widen adds the turns of want (ascending) to t: those after every
// stripe t holds are waited for in order; when one comes before, t gives
// back what it holds and waits for the whole set in order. On ctx's end
// t holds nothing and ctx's error is returned.
func (t *turn) widen(ctx context.Context, want []int) error {
	var more []int
	for _, s := range want {
		if _, found := slices.BinarySearch(t.held, s); !found {
			more = append(more, s)
		}
	}
	if len(more) == 0 {
		return nil
	}
	if len(t.held) > 0 && more[0] < t.held[len(t.held)-1] {
		all := append(slices.Clone(t.held), more...)
		slices.Sort(all)
		t.give()
		return t.add(ctx, all)
	}
	return t.add(ctx, more)
}

// add waits for stripes (ascending, each after every stripe t holds),
// in order; a free one is taken whatever ctx says.
func (t *turn) add(ctx context.Context, stripes []int) error {
	for _, s := range stripes {
		select {
		case t.k.stripes[s] <- struct{}{}:
			t.held = append(t.held, s)
			continue
		default:
		}
		select {
		case t.k.stripes[s] <- struct{}{}:
			t.held = append(t.held, s)
		case <-ctx.Done():
			t.give()
			return ctx.Err()
		}
	}
	return nil
}

// give gives back every turn t holds; a nil t holds none.
func (t *turn) give() {
	if t == nil {
		return
	}
	for _, s := range t.held {
		<-t.k.stripes[s]
	}
	t.held = t.held[:0]
}
