package fsm

import (
	"bytes"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// TestRetryAfterEachCommand retries every command type under its request
// id, after state changed in between (what a retry that lost the race to
// another client meets), and checks the contract of reqid.go against a
// twin state machine:
//
//   - a command that changed state is answered with the first attempt's
//     result, and the retry changes nothing: the state equals the twin's,
//     which applied a no-op in the retry's place;
//   - a command that changed nothing is not remembered, and its retry is
//     applied afresh: the state equals the twin's, which applied a no-op
//     in the first attempt's place (the revision counter and the request-id
//     table included), and the retry answers what applying it now answers.
func TestRetryAfterEachCommand(t *testing.T) {
	k, rk, tk := []byte("k"), command.RecordKey("pay", "u1", "r"), command.TokenKey("form", "t")
	set := func(v string) command.Command {
		return command.Command{Type: command.TypeKVSet, Key: k, Value: []byte(v)}
	}
	setTTL := command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), TTL: time.Hour}
	del := command.Command{Type: command.TypeKVDelete, Key: k}
	persist := command.Command{Type: command.TypeKVExpire, Key: k}
	begin := command.Command{Type: command.TypeRecordBegin, Key: rk, Value: []byte("fp"), TTL: time.Hour, Timeout: time.Minute}
	release := command.Command{Type: command.TypeRecordRelease, Key: rk}
	issue := command.Command{Type: command.TypeTokenIssue, Key: tk, TTL: time.Hour}
	consume := command.Command{Type: command.TypeTokenConsume, Key: tk}
	digest := command.DigestKey("pay", "u1", []byte("digest"))
	suspectBegin := func(key string, flags byte) command.Command {
		return command.Command{Type: command.TypeRecordBegin, Key: command.RecordKey("pay", "u1", key), TTL: time.Hour, Flags: flags,
			DigestKey: digest, Window: time.Hour}
	}
	// fence is filled in with the first begin's fence (the record's
	// revision): commands that need it name it as fenceOfBegin.
	const fenceOfBegin = ^uint64(0)

	tests := []struct {
		name    string
		setup   []command.Command
		first   command.Command
		code    command.Code // the first attempt's
		between []command.Command
		retry   command.Code // a no-effect command's re-applied answer
		value   string       // and its value, if any
	}{
		// KV
		{name: "set", first: set("a"), code: command.CodeCreated, between: []command.Command{set("b")}},
		{name: "setnx created", first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("a"), Mode: command.SetNX}, code: command.CodeCreated,
			between: []command.Command{del}},
		{name: "setnx refused", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetNX},
			code: command.CodeExists, between: []command.Command{del}, retry: command.CodeCreated},
		{name: "setnx refused, nothing changed", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetNX},
			code: command.CodeExists, retry: command.CodeExists, value: "a"},
		{name: "compare-and-set refused", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetCAS},
			code: command.CodeVersionMismatch, between: []command.Command{del}, retry: command.CodeCreated},
		{name: "set xx refused", first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Mode: command.SetXX},
			code: command.CodeNotFound, between: []command.Command{set("a")}, retry: command.CodeOK},
		{name: "set get", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVSet, Key: k, Value: []byte("b"), Flags: command.FlagReturnOld},
			code: command.CodeOK, between: []command.Command{set("c")}},
		{name: "getdel", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeOK,
			between: []command.Command{set("b")}},
		{name: "getdel of a missing key", first: command.Command{Type: command.TypeKVGetDel, Key: k}, code: command.CodeNotFound,
			between: []command.Command{set("b")}, retry: command.CodeOK, value: "b"},
		{name: "compare-and-delete refused", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVDelete, Key: k, Version: 99},
			code: command.CodeVersionMismatch, between: []command.Command{set("b")}, retry: command.CodeVersionMismatch},
		{name: "del", setup: []command.Command{set("a")}, first: del, code: command.CodeOK, between: []command.Command{set("b")}},
		{name: "incr", setup: []command.Command{set("1")}, first: command.Command{Type: command.TypeKVIncr, Key: k, Value: []byte("2")}, code: command.CodeOK,
			between: []command.Command{set("10")}},
		{name: "incr of a non-integer", setup: []command.Command{set("x")}, first: command.Command{Type: command.TypeKVIncr, Key: k, Value: []byte("2")},
			code: command.CodeNotInteger, between: []command.Command{set("1")}, retry: command.CodeOK, value: "3"},
		{name: "incr past the range", setup: []command.Command{set("9223372036854775807")}, first: command.Command{Type: command.TypeKVIncr, Key: k, Value: []byte("1")},
			code: command.CodeOverflow, between: []command.Command{set("1")}, retry: command.CodeOK, value: "2"},
		{name: "expire", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVExpire, Key: k, TTL: time.Hour}, code: command.CodeOK,
			between: []command.Command{persist}},
		{name: "expire refused", setup: []command.Command{setTTL}, first: command.Command{Type: command.TypeKVExpire, Key: k, TTL: time.Minute, Flags: command.FlagExpireNX},
			code: command.CodeUnchanged, between: []command.Command{persist}, retry: command.CodeOK},
		{name: "expire of a missing key", first: command.Command{Type: command.TypeKVExpire, Key: k, TTL: time.Hour}, code: command.CodeNotFound,
			between: []command.Command{set("a")}, retry: command.CodeOK},
		{name: "expire now", setup: []command.Command{set("a")}, first: command.Command{Type: command.TypeKVExpire, Key: k, Flags: command.FlagExpireNow}, code: command.CodeOK,
			between: []command.Command{set("b")}},
		// Records
		{name: "begin", first: begin, code: command.CodeCreated, between: []command.Command{release}},
		{name: "begin of a begun record", setup: []command.Command{begin}, first: begin, code: command.CodeExists,
			between: []command.Command{release}, retry: command.CodeCreated},
		{name: "begin refused as a suspect", setup: []command.Command{suspectBegin("one", 0)}, first: suspectBegin("two", command.FlagRejectSuspect),
			code: command.CodeSuspect},
		{name: "begin reporting a suspect", setup: []command.Command{suspectBegin("one", 0)}, first: suspectBegin("two", 0),
			code: command.CodeCreated, between: []command.Command{{Type: command.TypeRecordRelease, Key: command.RecordKey("pay", "u1", "two")}}},
		{name: "complete", setup: []command.Command{begin}, first: command.Command{Type: command.TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 200, Body: []byte("x")},
			code: command.CodeOK, between: []command.Command{release, begin}},
		{name: "complete by a stale owner", setup: []command.Command{begin}, first: command.Command{Type: command.TypeRecordComplete, Key: rk, Fence: 12345, Status: 200},
			code: command.CodeFenceMismatch, retry: command.CodeFenceMismatch},
		{name: "complete of a missing record", first: command.Command{Type: command.TypeRecordComplete, Key: rk, Fence: 1, Status: 200},
			code: command.CodeNotFound, between: []command.Command{begin}, retry: command.CodeFenceMismatch},
		{name: "complete twice", setup: []command.Command{begin, {Type: command.TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 200}},
			first: command.Command{Type: command.TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 201}, code: command.CodeWrongState, retry: command.CodeWrongState},
		{name: "release", setup: []command.Command{begin}, first: release, code: command.CodeOK, between: []command.Command{begin}},
		{name: "release of a missing record", first: release, code: command.CodeNotFound, between: []command.Command{begin}, retry: command.CodeOK},
		// Tokens
		{name: "issue", first: issue, code: command.CodeCreated, between: []command.Command{consume}},
		{name: "issue of an issued token", setup: []command.Command{issue}, first: issue, code: command.CodeExists,
			between: []command.Command{consume}, retry: command.CodeCreated},
		{name: "consume", setup: []command.Command{issue}, first: consume, code: command.CodeOK, between: []command.Command{issue}},
		{name: "consume of a missing token", first: consume, code: command.CodeNotFound, between: []command.Command{issue}, retry: command.CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := reqID(42)
			a, twin := newHarness(t), newHarness(t)
			var fence uint64
			both := func(c command.Command) (*command.Result, *command.Result) {
				if c.Fence == fenceOfBegin {
					c.Fence = fence
				}
				ra, rb := a.apply(c), twin.apply(c)
				if c.Type == command.TypeRecordBegin && fence == 0 {
					fence = ra.Fence
				}
				a.advance(time.Millisecond)
				twin.advance(time.Millisecond)
				return ra, rb
			}
			for _, c := range tc.setup {
				both(c)
			}
			first := tc.first
			first.ReqID = id
			if first.Fence == fenceOfBegin {
				first.Fence = fence
			}
			effect := !noEffect(tc.code)
			r1 := a.apply(first)
			if effect {
				twin.apply(first)
			} else {
				twin.apply(command.Command{Type: command.TypeNoop})
			}
			a.advance(time.Millisecond)
			twin.advance(time.Millisecond)
			if r1.Code != tc.code {
				t.Fatalf("first attempt = %v (%+v), want code %v", r1.Code, r1, tc.code)
			}
			if _, remembered, err := a.f.LookupRequest(id); err != nil || remembered != effect {
				t.Fatalf("LookupRequest after the first attempt = %v, %v; want %v", remembered, err, effect)
			}
			for _, c := range tc.between {
				both(c)
			}
			r2 := a.apply(first)
			if effect {
				twin.apply(command.Command{Type: command.TypeNoop})
				if !bytes.Equal(r2.Encode(nil), r1.Encode(nil)) {
					t.Fatalf("retry = %+v, want the first attempt's %+v", r2, r1)
				}
			} else {
				rt := twin.apply(first)
				if r2.Code != tc.retry || string(r2.Value) != tc.value || !bytes.Equal(r2.Encode(nil), rt.Encode(nil)) {
					t.Fatalf("retry = %+v, want code %v value %q, as applying it afresh: %+v", r2, tc.retry, tc.value, rt)
				}
			}
			ha, err := a.f.stateHash()
			if err != nil {
				t.Fatal(err)
			}
			hb, err := twin.f.stateHash()
			if err != nil {
				t.Fatal(err)
			}
			if ha != hb || a.f.rev.Load() != twin.f.rev.Load() {
				t.Fatalf("state after the retry differs from the twin's (revision %d, twin %d)", a.f.rev.Load(), twin.f.rev.Load())
			}
		})
	}
}

// TestRememberedEncodings: a remembered answer keeps every field a retry
// is answered with, in the compact encoding and in the previous one
// (stamp | Result.Encode) a file upgraded in place still holds; the
// previous encoding's no-effect entries read as not remembered, as this
// build never stores them.
func TestRememberedEncodings(t *testing.T) {
	results := []*command.Result{
		{Code: command.CodeOK},
		{Code: command.CodeCreated, Version: 1 << 40, ExpiresAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{Code: command.CodeOK, Version: 7, Value: bytes.Repeat([]byte("v"), 300)},
		{Code: command.CodeCreated, Fence: 99, ExpiresAt: -5, Suspect: []byte("pay\x00u1\x00earlier")},
		{Code: command.CodeSuspect, Suspect: []byte("s")},
		{Code: command.CodeStorage},
		{Code: command.CodeOK, Fence: 3, Record: &command.Record{State: command.StateCompleted, Fence: 3, Status: 200, Body: []byte("b"), Headers: []command.Header{{Name: []byte("A"), Value: []byte("b")}}}},
	}
	for _, r := range results {
		want := r.Encode(nil)
		for name, enc := range map[string][]byte{
			"compact":  appendRemembered(nil, r),
			"previous": r.Encode(binary64(1<<62 - 1)),
		} {
			got, err := decodeRemembered(enc)
			if err != nil || !bytes.Equal(got.Encode(nil), want) {
				t.Errorf("decodeRemembered(%s of %+v) = %+v, %v", name, r, got, err)
			}
		}
	}
	// Every no-effect entry of the previous encoding reads as absent.
	h := newHarness(t)
	gone := []*command.Result{{Code: command.CodeExists, Value: []byte("existing value")}, {Code: codeReread}, {Code: command.CodeVersionMismatch, Version: 3}}
	err := h.f.db.Update(func(tx *bolt.Tx) error {
		a := applier{f: h.f, now: h.clock}
		if err := a.remember(tx, reqID(1), &command.Result{Code: command.CodeOK}); err != nil { // opens the generation
			return err
		}
		for i, r := range gone {
			v := binary64(uint64(h.clock))
			if r.Code == codeReread {
				v = append(v, byte(codeReread))
			} else {
				v = r.Encode(v)
			}
			id := reqID(byte(10 + i))
			if err := a.gen.Put(id[:], v); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range gone {
		if r, ok, err := h.f.LookupRequest(reqID(byte(10 + i))); ok || err != nil {
			t.Errorf("LookupRequest of a stored %v = %+v, %v, %v; want not remembered", gone[i].Code, r, ok, err)
		}
	}
	if r := h.apply(command.Command{Type: command.TypeKVSet, ReqID: reqID(10), Key: []byte("k"), Value: []byte("v"), Mode: command.SetNX}); r.Code != command.CodeCreated {
		t.Errorf("retry of a refused SETNX stored by the previous build = %+v, want it applied afresh", r)
	}
	unknown := command.Code(0) // the first code this build does not know
	for unknown.Known() {
		unknown++
	}
	for _, bad := range [][]byte{{}, {0x80}, {0x80 | rememberedValue, 0, 5, 'a'}, {0xC0, 0}, {0x80, byte(unknown)}, {1, 2, 3}, {0x80, 0, 0}} {
		if r, err := decodeRemembered(bad); err == nil {
			t.Errorf("decodeRemembered(%x) = %+v, want an error", bad, r)
		}
	}
}

func binary64(v uint64) []byte {
	return []byte{byte(v >> 56), byte(v >> 48), byte(v >> 40), byte(v >> 32), byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}
}

// FuzzDecodeRemembered: whatever bytes a damaged file holds under a request
// id, decoding them is an error or a result that encodes back to the same
// answer, never a panic.
func FuzzDecodeRemembered(f *testing.F) {
	f.Add(appendRemembered(nil, &command.Result{Code: command.CodeOK, Version: 9, ExpiresAt: 1 << 60, Value: []byte("v")}))
	f.Add(appendRemembered(nil, &command.Result{Code: command.CodeCreated, Fence: 3, Suspect: []byte("s"), Record: &command.Record{State: command.StateInFlight}}))
	f.Add((&command.Result{Code: command.CodeOK, Value: []byte("old")}).Encode(binary64(42)))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRemembered(b)
		if err != nil || r.Code == codeReread { // the previous build's marker: read as absent
			return
		}
		again, err := decodeRemembered(appendRemembered(nil, r))
		if err != nil || !bytes.Equal(again.Encode(nil), r.Encode(nil)) {
			t.Fatalf("%x decoded to %+v, which re-reads as %+v, %v", b, r, again, err)
		}
	})
}
