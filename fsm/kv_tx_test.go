package fsm

import (
	"errors"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// txResults applies a transaction and returns its code and its commands'
// results.
func (h *harness) tx(r command.TxRequest, id command.ReqID) (command.Code, Results) {
	h.t.Helper()
	c := command.KVTxCommand(r)
	c.ReqID = id
	res := h.apply(*c)
	if res.Code != command.CodeOK {
		return res.Code, nil
	}
	out, err := command.TxResults(res)
	if err != nil {
		h.t.Fatal(err)
	}
	return res.Code, out
}

func (h *harness) kv(key string) (command.KVEntry, bool) {
	e, err := h.f.KV([]byte(key), h.now())
	return e, err == nil
}

// TestKVTx: a transaction applies its commands in order at one point of
// the log (reads see the writes before them), a failing command fails
// alone, a watch that no longer holds applies nothing, and a retry under
// the request id is answered from memory.
func TestKVTx(t *testing.T) {
	h := newHarness(t)
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("word"), Value: []byte("abc")}))
	code, rs := h.tx(command.TxRequest{Commands: []*command.Command{
		command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("1")}),
		command.KVIncrCommand([]byte("word"), 1),
		command.KVIncrCommand([]byte("a"), 1),
		command.KVReadCommand([]byte("a"), true),
		command.KVReadCommand([]byte("missing"), true),
		command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("x"), Mode: command.SetNX}),
	}, ReplyBudget: 1 << 10}, reqID(1))
	if code != command.CodeOK || len(rs) != 6 {
		t.Fatalf("transaction = %v, %d results", code, len(rs))
	}
	want := []struct {
		code  command.Code
		value string
	}{{command.CodeCreated, ""}, {command.CodeNotInteger, ""}, {command.CodeOK, "2"}, {command.CodeOK, "2"}, {command.CodeNotFound, ""}, {command.CodeExists, ""}}
	for i, w := range want {
		if rs[i].Code != w.code || string(rs[i].Value) != w.value {
			t.Errorf("command %d = %v %q, want %v %q", i, rs[i].Code, rs[i].Value, w.code, w.value)
		}
	}
	if rs[0].Version == rs[2].Version {
		t.Errorf("two writes of one transaction share revision %d", rs[0].Version)
	}
	// The retry of the same request id: answered from memory, applied once.
	_, again := h.tx(command.TxRequest{Commands: []*command.Command{command.KVIncrCommand([]byte("a"), 1)}}, reqID(1))
	if len(again) != 6 || string(again[2].Value) != "2" {
		t.Fatalf("retry answered %d results", len(again))
	}
	if e, _ := h.kv("a"); string(e.Value) != "2" {
		t.Fatalf("a = %q after the retry, want 2", e.Value)
	}
}

// TestKVTxWatch: each way a watched key can change aborts the
// transaction with nothing applied; a key unchanged (or absent and still
// absent) lets it apply.
func TestKVTxWatch(t *testing.T) {
	set := func(h *harness, k, v string, ttl time.Duration) {
		h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte(v), TTL: ttl}))
	}
	tests := []struct {
		name    string
		setup   func(h *harness) // before WATCH
		between func(h *harness) // after WATCH, before EXEC
		applies bool
	}{
		{"unchanged", func(h *harness) { set(h, "w", "1", 0) }, func(h *harness) { set(h, "other", "1", 0) }, true},
		{"absent, still absent", func(h *harness) {}, func(h *harness) { set(h, "other", "1", 0) }, true},
		{"written with the same value", func(h *harness) { set(h, "w", "1", 0) }, func(h *harness) { set(h, "w", "1", 0) }, false},
		{"deleted", func(h *harness) { set(h, "w", "1", 0) }, func(h *harness) { h.apply(*command.KVDeleteCommand([]byte("w"))) }, false},
		{"absent, then created", func(h *harness) {}, func(h *harness) { set(h, "w", "1", 0) }, false},
		{"given a lifetime", func(h *harness) { set(h, "w", "1", 0) },
			func(h *harness) { h.apply(*command.KVExpireCommand([]byte("w"), time.Hour, 0)) }, false},
		{"lifetime removed", func(h *harness) { set(h, "w", "1", time.Hour) },
			func(h *harness) { h.apply(*command.KVExpireCommand([]byte("w"), 0, 0)) }, false},
		{"expire whose condition failed", func(h *harness) { set(h, "w", "1", 0) },
			func(h *harness) { h.apply(*command.KVExpireCommand([]byte("w"), time.Hour, command.FlagExpireXX)) }, true},
		{"expired", func(h *harness) { set(h, "w", "1", time.Second) }, func(h *harness) { h.advance(2 * time.Second) }, false},
		{"expired before WATCH", func(h *harness) { set(h, "w", "1", time.Second); h.advance(2 * time.Second) },
			func(h *harness) { h.advance(time.Second) }, true},
		{"incremented", func(h *harness) { set(h, "w", "1", 0) }, func(h *harness) { h.apply(*command.KVIncrCommand([]byte("w"), 0)) }, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			tt.setup(h)
			w := command.Watch{Key: []byte("w")}
			if e, ok := h.kv("w"); ok {
				w.Version, w.ExpiresAt = e.Version, e.ExpiresAt
			}
			tt.between(h)
			before, _ := h.f.DataHash()
			code, rs := h.tx(command.TxRequest{Watches: []command.Watch{{Key: []byte("unrelated")}, w},
				Commands: []*command.Command{command.KVSetCommand(command.KVSetRequest{Key: []byte("out"), Value: []byte("x")})}}, reqID(9))
			if tt.applies {
				if code != command.CodeOK || len(rs) != 1 || rs[0].Code != command.CodeCreated {
					t.Fatalf("transaction = %v %v, want applied", code, rs)
				}
				return
			}
			if code != command.CodeVersionMismatch {
				t.Fatalf("transaction = %v, want CodeVersionMismatch", code)
			}
			if _, ok := h.kv("out"); ok {
				t.Fatal("an aborted transaction's write was applied")
			}
			// Nothing was remembered either: the data is as before (the
			// expired key's lazy removal aside).
			if tt.name != "expired" {
				if after, _ := h.f.DataHash(); after != before {
					t.Errorf("an aborted transaction changed the state")
				}
			}
		})
	}
}

// TestKVTxReplyBudget: values past the reply budget are not answered, and
// a GETDEL past it is not applied; a command that answers no value is.
func TestKVTxReplyBudget(t *testing.T) {
	h := newHarness(t)
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("big"), Value: make([]byte, 600)}))
	code, rs := h.tx(command.TxRequest{Commands: []*command.Command{
		command.KVReadCommand([]byte("big"), true),
		command.KVReadCommand([]byte("big"), true),
		command.KVGetDelCommand([]byte("big"), 0),
		command.KVReadCommand([]byte("big"), false),
		command.KVDeleteCommand([]byte("big")),
	}, ReplyBudget: 1000}, reqID(2))
	if code != command.CodeOK {
		t.Fatal(code)
	}
	want := []command.Code{command.CodeOK, command.CodeReplyTooLarge, command.CodeReplyTooLarge, command.CodeOK, command.CodeOK}
	for i, w := range want {
		if rs[i].Code != w {
			t.Errorf("command %d = %v, want %v", i, rs[i].Code, w)
		}
	}
	if !errors.Is(rs[1].Err(), command.ErrReplyTooLarge) || len(rs[0].Value) != 600 || rs[3].Value != nil {
		t.Errorf("results %+v", rs)
	}
}

// TestKVTxHostile: a transaction that is not one is refused before it is
// applied, with ErrBadCommand; on a replica that decodes it, it applies
// nothing.
func TestKVTxHostile(t *testing.T) {
	withID := command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("1")})
	withID.ReqID = reqID(3)
	nested := command.KVTxCommand(command.TxRequest{Commands: []*command.Command{command.KVDeleteCommand([]byte("a"))}})
	ok := command.KVTxCommand(command.TxRequest{Watches: []command.Watch{{Key: []byte("w")}}, Commands: []*command.Command{command.KVDeleteCommand([]byte("a"))}})
	tests := []struct {
		name string
		c    *command.Command
	}{
		{"nested transaction", command.KVTxCommand(command.TxRequest{Commands: []*command.Command{nested}})},
		{"a record command inside", command.KVTxCommand(command.TxRequest{Commands: []*command.Command{command.RecordReleaseCommand([]byte("r"), 1)}})},
		{"a command with its own request id", command.KVTxCommand(command.TxRequest{Commands: []*command.Command{withID}})},
		{"an invalid command inside", command.KVTxCommand(command.TxRequest{Commands: []*command.Command{{Type: command.TypeKVSet, Value: []byte("no key")}}})},
		{"an empty watched key", command.KVTxCommand(command.TxRequest{Watches: []command.Watch{{}}})},
		{"truncated", &command.Command{Type: command.TypeKVTx, Value: ok.Value[:len(ok.Value)-3]}},
		{"trailing bytes", &command.Command{Type: command.TypeKVTx, Value: append(append([]byte(nil), ok.Value...), 0)}},
		{"a count past the bound", &command.Command{Type: command.TypeKVTx, Value: []byte{0xff, 0xff, 0xff, 0xff, 0x0f}}},
		{"garbage", &command.Command{Type: command.TypeKVTx, Value: []byte("\x01\x05hello")}},
		{"unknown read flags", &command.Command{Type: command.TypeKVRead, Key: []byte("a"), Flags: 0x80}},
	}
	h := newHarness(t)
	for _, tt := range tests {
		if err := tt.c.Validate(); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("%s: Validate = %v, want ErrBadCommand", tt.name, err)
		}
		before, _ := h.f.DataHash()
		if r := h.apply(*tt.c); r.Code != command.CodeBadCommand {
			t.Errorf("%s: applied with %v", tt.name, r.Code)
		}
		if after, _ := h.f.DataHash(); after != before {
			t.Errorf("%s changed the state", tt.name)
		}
	}
	if err := ok.Validate(); err != nil {
		t.Fatalf("the valid transaction: %v", err)
	}
}

// TestReadTx: a transaction of reads answered from the applied state is
// answered as the log would apply it, watches included, and changes
// nothing, not even an expired key it finds; a write is refused.
func TestReadTx(t *testing.T) {
	h := newHarness(t)
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("a"), Value: []byte("1"), TTL: time.Hour}))
	h.apply(*command.KVSetCommand(command.KVSetRequest{Key: []byte("gone"), Value: []byte("x"), TTL: time.Second}))
	h.advance(2 * time.Second)
	e, _ := h.kv("a")
	reads := func() []*command.Command {
		return []*command.Command{command.KVReadCommand([]byte("a"), true), command.KVReadCommand([]byte("gone"), true),
			command.KVReadCommand([]byte("a"), false), command.KVReadCommand([]byte("none"), false)}
	}
	for _, w := range []command.Watch{{Key: []byte("a"), Version: e.Version, ExpiresAt: e.ExpiresAt}, {Key: []byte("a"), Version: e.Version}} {
		r := command.TxRequest{Watches: []command.Watch{w}, Commands: reads(), ReplyBudget: 100}
		before, _ := h.f.DataHash()
		local, err := h.f.ReadTx(r, h.now())
		if err != nil {
			t.Fatal(err)
		}
		if after, _ := h.f.DataHash(); after != before {
			t.Fatal("ReadTx changed the state")
		}
		logged := h.apply(*command.KVTxCommand(r))
		if string(local.Encode(nil)) != string(logged.Encode(nil)) {
			t.Errorf("watch %+v: ReadTx = %+v, the log = %+v", w, local, logged)
		}
	}
	if _, err := h.f.ReadTx(command.TxRequest{Commands: []*command.Command{command.KVDeleteCommand([]byte("a"))}}, h.now()); !errors.Is(err, command.ErrBadCommand) {
		t.Fatalf("ReadTx of a write = %v", err)
	}
}
