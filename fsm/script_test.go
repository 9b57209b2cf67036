package fsm

import (
	"bytes"
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// sandboxOn is a sandbox over h's state machine at its clock, reading as a
// node reads its applied state.
func sandboxOn(h *harness) *Sandbox {
	return NewSandbox(h.clock, func(key []byte) (command.KVEntry, bool, error) {
		e, err := h.f.KV(key, h.now())
		if errors.Is(err, command.ErrNotFound) {
			return command.KVEntry{}, false, nil
		}
		return e, err == nil, err
	}, nil)
}

// TestScriptEffects: what a script's commands answer in the sandbox is
// what the state machine does when it applies the effects, in one entry;
// a write by someone else to a key the script touched, between the run and
// the entry, makes the entry apply nothing (CodeConflict), and a write to
// another key does not.
func TestScriptEffects(t *testing.T) {
	h := newHarness(t)
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("lock"), Value: []byte("tok"), TTL: time.Minute})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("n"), Value: []byte("41")})
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("gone"), Value: []byte("x"), TTL: time.Millisecond})
	h.advance(time.Second)

	run := func() (*Sandbox, []*command.Result) {
		sb := sandboxOn(h)
		var out []*command.Result
		for _, c := range []*command.Command{
			command.KVIncrCommand([]byte("n"), 1),
			command.KVExpireCommand([]byte("lock"), 2*time.Minute, command.FlagExpireGT),
			command.KVSetCommand(command.KVSetRequest{Key: []byte("gone"), Value: []byte("new"), Mode: command.SetNX}),
			command.KVGetDelCommand([]byte("absent"), 0),
			command.KVSetCommand(command.KVSetRequest{Key: []byte("lock"), Value: []byte("other"), Mode: command.SetNX}), // refused: no write
		} {
			r, err := sb.Apply(c)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return sb, out
	}
	ran := h.clock
	sb, res := run()
	wantCodes := []command.Code{command.CodeOK, command.CodeOK, command.CodeCreated, command.CodeNotFound, command.CodeExists}
	for i, r := range res {
		if r.Code != wantCodes[i] {
			t.Fatalf("sandbox result %d = %v, want %v", i, r.Code, wantCodes[i])
		}
	}
	if string(res[0].Value) != "42" {
		t.Fatalf("INCR in the sandbox = %q", res[0].Value)
	}
	if e, _ := h.f.KV([]byte("n"), h.now()); string(e.Value) != "41" {
		t.Fatalf("the sandbox wrote to the state machine: n = %q", e.Value)
	}

	// A write elsewhere does not conflict; the effects apply, at once.
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("elsewhere"), Value: []byte("1")})
	eff := sb.Effects()
	if r := h.apply(*eff); r.Code != command.CodeOK {
		t.Fatalf("effects = %v, want applied", r.Code)
	}
	for key, want := range map[string]string{"n": "42", "gone": "new", "lock": "tok"} {
		if e, err := h.f.KV([]byte(key), h.now()); err != nil || string(e.Value) != want {
			t.Fatalf("%s after the effects = %q, %v; want %q", key, e.Value, err, want)
		}
	}
	if e, _ := h.f.KV([]byte("lock"), h.now()); e.ExpiresAt != ran+int64(2*time.Minute) {
		t.Fatalf("lock expires at %d, want the script's clock + 2m", e.ExpiresAt)
	}

	// Run again, then a conflicting write: nothing of it applies.
	sb, _ = run()
	h.apply(command.Command{Type: command.TypeKVIncr, Key: []byte("n"), Value: []byte("100")})
	before, _ := h.f.DataHash()
	if r := h.apply(*sb.Effects()); r.Code != command.CodeConflict || !errors.Is(r.Err(), command.ErrConflict) {
		t.Fatalf("effects after a conflicting write = %v, want CodeConflict", r.Code)
	}
	if after, _ := h.f.DataHash(); after != before {
		t.Fatal("a conflicting script's effects changed the state")
	}

	// An expiry change is a change too (it keeps the version).
	sb, _ = run()
	h.apply(command.Command{Type: command.TypeKVExpire, Key: []byte("lock"), TTL: time.Hour})
	if r := h.apply(*sb.Effects()); r.Code != command.CodeConflict {
		t.Fatalf("effects after an EXPIRE of a key they read = %v, want CodeConflict", r.Code)
	}

	// A key seen absent that appears conflicts.
	sb = sandboxOn(h)
	if r, _ := sb.Apply(command.KVSetCommand(command.KVSetRequest{Key: []byte("fresh"), Value: []byte("a"), Mode: command.SetNX})); r.Code != command.CodeCreated {
		t.Fatalf("SET NX fresh = %v", r.Code)
	}
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("fresh"), Value: []byte("b")})
	if r := h.apply(*sb.Effects()); r.Code != command.CodeConflict {
		t.Fatalf("effects after the key appeared = %v", r.Code)
	}

	// A read-only run makes no entry, and sees whether it stayed current.
	sb = sandboxOn(h)
	if _, ok, _ := sb.KV([]byte("n")); !ok || sb.Effects() != nil {
		t.Fatal("a read made an entry or missed the key")
	}
	if ok, _ := sb.Unchanged(); !ok {
		t.Fatal("nothing changed, but Unchanged says it did")
	}
	h.apply(command.Command{Type: command.TypeKVDelete, Key: []byte("n")})
	if ok, _ := sb.Unchanged(); ok {
		t.Fatal("n was deleted, but Unchanged says nothing changed")
	}
}

// effectsAfterConflict runs a script's INCR in a sandbox, lets another
// write change the key, then applies the effects: what they answer.
func effectsAfterConflict(t *testing.T) (command.Code, string) {
	h := newHarness(t)
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("n"), Value: []byte("1")})
	sb := sandboxOn(h)
	if _, err := sb.Apply(command.KVIncrCommand([]byte("n"), 1)); err != nil {
		t.Fatal(err)
	}
	h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("n"), Value: []byte("10")})
	code := h.apply(*sb.Effects()).Code
	e, _ := h.f.KV([]byte("n"), h.now())
	return code, string(e.Value)
}

// TestScriptEffectsConflict: effects over a changed read apply nothing.
func TestScriptEffectsConflict(t *testing.T) {
	if code, v := effectsAfterConflict(t); code != command.CodeConflict || v != "10" {
		t.Fatalf("effects after a conflicting write = %v, n = %q; want CodeConflict, 10", code, v)
	}
}

// TestScriptEffectsRefused: an effects body that is not one (garbage, a
// write a script cannot make, no clock) is refused before it is applied,
// and the sandbox refuses such commands.
func TestScriptEffectsRefused(t *testing.T) {
	good := scriptSample().Body
	nested := command.NoopCommand(nil).Encode(nil)
	for name, body := range map[string][]byte{
		"empty":          nil,
		"truncated":      good[:len(good)-1],
		"trailing":       append(bytes.Clone(good), 0),
		"no clock":       encodeEffects(0, nil, [][]byte{command.KVDeleteCommand([]byte("k")).Encode(nil)}),
		"a noop inside":  encodeEffects(1, nil, [][]byte{nested}),
		"garbage inside": encodeEffects(1, nil, [][]byte{{2, 9, 9}}),
		"bad liveness":   {2, 1, 1, 'k', 7, 0, 0, 0},
	} {
		c := command.Command{Type: command.TypeScriptEffects, Body: body}
		if err := c.Validate(); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("%s: Validate = %v, want ErrBadCommand", name, err)
		}
	}
	sb := NewSandbox(1, func([]byte) (command.KVEntry, bool, error) { return command.KVEntry{}, false, nil }, nil)
	for _, c := range []*command.Command{command.NoopCommand(nil), command.TokenConsumeCommand([]byte("t")), command.KVSetCommand(command.KVSetRequest{Value: []byte("no key")})} {
		if _, err := sb.Apply(c); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("sandbox Apply(%s) = %v, want ErrBadCommand", c.Type, err)
		}
	}
	if sb.Wrote() {
		t.Fatal("a refused command counts as a write")
	}
}
