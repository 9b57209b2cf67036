package history

import (
	"math"
	"testing"

	"github.com/anishathalye/porcupine"
)

// Never is the return time of an operation whose answer was never seen.
const never = math.MaxInt64

func op(client int, call, ret int64, in Input, out Output) porcupine.Operation {
	in.Call, in.Return = call, ret
	return porcupine.Operation{ClientId: client, Call: call, Return: ret, Input: in, Output: out}
}

// TestModelOnHandWrittenHistories proves the model: histories a correct
// store may produce check Ok, and histories with a lost write, a double
// consume, a stale read, an early expiry or a broken fence are Illegal.
func TestModelOnHandWrittenHistories(t *testing.T) {
	k := "k"
	tests := []struct {
		name string
		ok   bool
		ops  []porcupine.Operation
	}{
		{"setnx then setnx sees the winner", true, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a"}, Output{OK: true, Version: 3}),
			op(1, 20, 30, Input{Kind: SetNX, Key: k, Value: "b"}, Output{Value: "a"}),
		}},
		{"two concurrent setnx both win", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a"}, Output{OK: true, Version: 3}),
			op(1, 0, 10, Input{Kind: SetNX, Key: k, Value: "b"}, Output{OK: true, Version: 4}),
		}},
		{"loser reports a value nobody wrote", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a"}, Output{OK: true, Version: 3}),
			op(1, 0, 10, Input{Kind: SetNX, Key: k, Value: "b"}, Output{Value: "z"}),
		}},
		{"one getdel of two finds the value", true, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: Set, Key: k, Value: "v"}, Output{OK: true, Version: 2}),
			op(1, 10, 20, Input{Kind: GetDel, Key: k}, Output{OK: true, Value: "v"}),
			op(2, 10, 20, Input{Kind: GetDel, Key: k}, Output{}),
		}},
		{"token consumed twice", false, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: SetNX, Key: k, Value: "tok"}, Output{OK: true, Version: 2}),
			op(1, 10, 20, Input{Kind: GetDel, Key: k}, Output{OK: true, Value: "tok"}),
			op(2, 10, 20, Input{Kind: GetDel, Key: k}, Output{OK: true, Value: "tok"}),
		}},
		{"stale read after a completed overwrite", false, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: Set, Key: k, Value: "v1"}, Output{OK: true, Version: 2}),
			op(0, 10, 15, Input{Kind: Set, Key: k, Value: "v2"}, Output{OK: true, Version: 3}),
			op(1, 20, 25, Input{Kind: Get, Key: k}, Output{OK: true, Value: "v1", Version: 2}),
		}},
		{"a read concurrent with a write sees either", true, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: Set, Key: k, Value: "v1"}, Output{OK: true, Version: 2}),
			op(0, 10, 30, Input{Kind: Set, Key: k, Value: "v2"}, Output{OK: true, Version: 3}),
			op(1, 12, 14, Input{Kind: Get, Key: k}, Output{OK: true, Value: "v1", Version: 2}),
			op(2, 20, 25, Input{Kind: Get, Key: k}, Output{OK: true, Value: "v2", Version: 3}),
		}},
		{"cas on a version: one winner", true, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: Set, Key: k, Value: "a"}, Output{OK: true, Version: 2}),
			op(1, 10, 20, Input{Kind: CAS, Key: k, Value: "b", Version: 2}, Output{OK: true, Version: 7}),
			op(2, 10, 20, Input{Kind: CAS, Key: k, Value: "c", Version: 2}, Output{}),
			op(1, 30, 40, Input{Kind: Get, Key: k}, Output{OK: true, Value: "b", Version: 7}),
		}},
		{"cas on a version: two winners", false, []porcupine.Operation{
			op(0, 0, 5, Input{Kind: Set, Key: k, Value: "a"}, Output{OK: true, Version: 2}),
			op(1, 10, 20, Input{Kind: CAS, Key: k, Value: "b", Version: 2}, Output{OK: true, Version: 7}),
			op(2, 10, 20, Input{Kind: CAS, Key: k, Value: "c", Version: 2}, Output{OK: true, Version: 8}),
		}},
		{"cas on version 0 creates only an absent key", true, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: CAS, Key: k, Value: "a", Version: 0}, Output{OK: true, Version: 4}),
			op(1, 20, 30, Input{Kind: CAS, Key: k, Value: "b", Version: 0}, Output{}),
		}},
		{"cas on version 0 over an existing key", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Set, Key: k, Value: "a"}, Output{OK: true, Version: 4}),
			op(1, 20, 30, Input{Kind: CAS, Key: k, Value: "b", Version: 0}, Output{OK: true, Version: 5}),
		}},
		{"expired after its ttl", true, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a", TTL: 100}, Output{OK: true, Version: 2}),
			op(1, 105, 115, Input{Kind: Get, Key: k}, Output{OK: true, Value: "a", Version: 2}), // the window straddles the expiry
			op(1, 200, 210, Input{Kind: Get, Key: k}, Output{}),
			op(2, 220, 230, Input{Kind: SetNX, Key: k, Value: "b", TTL: 100}, Output{OK: true, Version: 9}),
		}},
		{"expired before its ttl", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a", TTL: 100}, Output{OK: true, Version: 2}),
			op(1, 50, 60, Input{Kind: Get, Key: k}, Output{}),
		}},
		{"alive long after its ttl", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a", TTL: 100}, Output{OK: true, Version: 2}),
			op(1, 500, 510, Input{Kind: Get, Key: k}, Output{OK: true, Value: "a", Version: 2}),
		}},
		{"an unseen setnx may or may not have happened", true, []porcupine.Operation{
			op(0, 0, never, Input{Kind: SetNX, Key: k, Value: "a"}, Output{Unknown: true}),
			op(1, 10, 20, Input{Kind: Get, Key: k}, Output{}),
			op(1, 30, 40, Input{Kind: Get, Key: k}, Output{OK: true, Value: "a", Version: 57}),
			op(1, 50, 60, Input{Kind: CAS, Key: k, Value: "b", Version: 57}, Output{OK: true, Version: 60}),
		}},
		{"an acknowledged write is lost", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: k, Value: "a"}, Output{OK: true, Version: 2}),
			op(1, 20, 30, Input{Kind: Get, Key: k}, Output{}),
		}},
		{"begin, a duplicate sees it, the owner completes", true, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Begin, Key: k, TTL: 1000}, Output{OK: true, Version: 5}),
			op(1, 5, 15, Input{Kind: Begin, Key: k, TTL: 1000}, Output{}),
			op(0, 20, 30, Input{Kind: Complete, Key: k, Version: 5}, Output{OK: true}),
			op(1, 40, 50, Input{Kind: Complete, Key: k, Version: 5}, Output{}),
		}},
		{"two owners of one record", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Begin, Key: k, TTL: 1000}, Output{OK: true, Version: 5}),
			op(1, 20, 30, Input{Kind: Begin, Key: k, TTL: 1000}, Output{OK: true, Version: 6}),
		}},
		{"a stale fence completes", false, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Begin, Key: k, TTL: 1000}, Output{OK: true, Version: 5}),
			op(1, 20, 30, Input{Kind: Complete, Key: k, Version: 4}, Output{OK: true}),
		}},
		{"keys are independent", true, []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Key: "a", Value: "1"}, Output{OK: true, Version: 2}),
			op(1, 0, 10, Input{Kind: SetNX, Key: "b", Value: "1"}, Output{OK: true, Version: 3}),
			op(2, 20, 30, Input{Kind: GetDel, Key: "a"}, Output{OK: true, Value: "1"}),
			op(2, 40, 50, Input{Kind: Get, Key: "b"}, Output{OK: true, Value: "1", Version: 3}),
		}},
	}
	for _, tt := range tests {
		got := Check(tt.ops, 0)
		want := porcupine.Illegal
		if tt.ok {
			want = porcupine.Ok
		}
		if got != want {
			t.Errorf("%s: %s, want %s", tt.name, got, want)
		}
	}
	if len(tests) < 12 {
		t.Fatalf("the model must be proven on at least a dozen histories, has %d", len(tests))
	}
}
