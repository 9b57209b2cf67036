package history

import (
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
)

// TestValueModel: the version-free model accepts good histories and
// rejects broken ones (it can fail).
func TestValueModel(t *testing.T) {
	op := func(client int, call, ret int64, in Input, out Output) porcupine.Operation {
		in.Key, in.Call, in.Return = "k", call, ret
		return porcupine.Operation{ClientId: client, Input: in, Output: out, Call: call, Return: ret}
	}
	tests := []struct {
		name string
		ops  []porcupine.Operation
		want porcupine.CheckResult
	}{
		{"set, setnx loses to it, get, getdel", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Set, Value: "a"}, Output{OK: true}),
			op(1, 20, 30, Input{Kind: SetNX, Value: "b"}, Output{Value: "a"}),
			op(0, 40, 50, Input{Kind: Get}, Output{OK: true, Value: "a"}),
			op(1, 60, 70, Input{Kind: GetDel}, Output{OK: true, Value: "a"}),
			op(0, 80, 90, Input{Kind: SetNX, Value: "c"}, Output{OK: true}),
		}, porcupine.Ok},
		{"concurrent writes, either order", []porcupine.Operation{
			op(0, 0, 50, Input{Kind: Set, Value: "a"}, Output{OK: true}),
			op(1, 10, 40, Input{Kind: Set, Value: "b"}, Output{OK: true}),
			op(2, 60, 70, Input{Kind: Get}, Output{OK: true, Value: "a"}),
		}, porcupine.Ok},
		{"an unknown write may have happened", []porcupine.Operation{
			op(0, 0, 1<<62, Input{Kind: Set, Value: "a"}, Output{Unknown: true}),
			op(1, 20, 30, Input{Kind: Get}, Output{OK: true, Value: "a"}),
		}, porcupine.Ok},
		{"broken: two SETNX win", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: SetNX, Value: "a"}, Output{OK: true}),
			op(1, 20, 30, Input{Kind: SetNX, Value: "b"}, Output{OK: true}),
		}, porcupine.Illegal},
		{"broken: a stale read after a write returned", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Set, Value: "a"}, Output{OK: true}),
			op(0, 20, 30, Input{Kind: Set, Value: "b"}, Output{OK: true}),
			op(1, 40, 50, Input{Kind: Get}, Output{OK: true, Value: "a"}),
		}, porcupine.Illegal},
		{"broken: a token consumed twice", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Set, Value: "t"}, Output{OK: true}),
			op(1, 20, 30, Input{Kind: GetDel}, Output{OK: true, Value: "t"}),
			op(2, 40, 50, Input{Kind: GetDel}, Output{OK: true, Value: "t"}),
		}, porcupine.Illegal},
		{"broken: a value never written", []porcupine.Operation{
			op(0, 0, 10, Input{Kind: Get}, Output{OK: true, Value: "ghost"}),
		}, porcupine.Illegal},
	}
	for _, tt := range tests {
		if got := CheckValues(tt.ops, int64(10*time.Second)); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
