package fsm

import (
	"bytes"
	"testing"
	"time"

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
	k, rk, tk := []byte("k"), RecordKey("pay", "u1", "r"), TokenKey("form", "t")
	set := func(v string) Command { return Command{Type: TypeKVSet, Key: k, Value: []byte(v)} }
	setTTL := Command{Type: TypeKVSet, Key: k, Value: []byte("a"), TTL: time.Hour}
	del := Command{Type: TypeKVDelete, Key: k}
	persist := Command{Type: TypeKVExpire, Key: k}
	begin := Command{Type: TypeRecordBegin, Key: rk, Value: []byte("fp"), TTL: time.Hour, Timeout: time.Minute}
	release := Command{Type: TypeRecordRelease, Key: rk}
	issue := Command{Type: TypeTokenIssue, Key: tk, TTL: time.Hour}
	consume := Command{Type: TypeTokenConsume, Key: tk}
	digest := DigestKey("pay", "u1", []byte("digest"))
	suspectBegin := func(key string, flags byte) Command {
		return Command{Type: TypeRecordBegin, Key: RecordKey("pay", "u1", key), TTL: time.Hour, Flags: flags,
			DigestKey: digest, Window: time.Hour}
	}
	// fence is filled in with the first begin's fence (the record's
	// revision): commands that need it name it as fenceOfBegin.
	const fenceOfBegin = ^uint64(0)

	tests := []struct {
		name    string
		setup   []Command
		first   Command
		code    Code // the first attempt's
		between []Command
		retry   Code   // a no-effect command's re-applied answer
		value   string // and its value, if any
	}{
		// KV
		{name: "set", first: set("a"), code: CodeCreated, between: []Command{set("b")}},
		{name: "setnx created", first: Command{Type: TypeKVSet, Key: k, Value: []byte("a"), Mode: SetNX}, code: CodeCreated,
			between: []Command{del}},
		{name: "setnx refused", setup: []Command{set("a")}, first: Command{Type: TypeKVSet, Key: k, Value: []byte("b"), Mode: SetNX},
			code: CodeExists, between: []Command{del}, retry: CodeCreated},
		{name: "setnx refused, nothing changed", setup: []Command{set("a")}, first: Command{Type: TypeKVSet, Key: k, Value: []byte("b"), Mode: SetNX},
			code: CodeExists, retry: CodeExists, value: "a"},
		{name: "compare-and-set refused", setup: []Command{set("a")}, first: Command{Type: TypeKVSet, Key: k, Value: []byte("b"), Mode: SetCAS},
			code: CodeVersionMismatch, between: []Command{del}, retry: CodeCreated},
		{name: "set xx refused", first: Command{Type: TypeKVSet, Key: k, Value: []byte("b"), Mode: SetXX},
			code: CodeNotFound, between: []Command{set("a")}, retry: CodeOK},
		{name: "set get", setup: []Command{set("a")}, first: Command{Type: TypeKVSet, Key: k, Value: []byte("b"), Flags: FlagReturnOld},
			code: CodeOK, between: []Command{set("c")}},
		{name: "getdel", setup: []Command{set("a")}, first: Command{Type: TypeKVGetDel, Key: k}, code: CodeOK,
			between: []Command{set("b")}},
		{name: "getdel of a missing key", first: Command{Type: TypeKVGetDel, Key: k}, code: CodeNotFound,
			between: []Command{set("b")}, retry: CodeOK, value: "b"},
		{name: "compare-and-delete refused", setup: []Command{set("a")}, first: Command{Type: TypeKVDelete, Key: k, Version: 99},
			code: CodeVersionMismatch, between: []Command{set("b")}, retry: CodeVersionMismatch},
		{name: "del", setup: []Command{set("a")}, first: del, code: CodeOK, between: []Command{set("b")}},
		{name: "incr", setup: []Command{set("1")}, first: Command{Type: TypeKVIncr, Key: k, Value: []byte("2")}, code: CodeOK,
			between: []Command{set("10")}},
		{name: "incr of a non-integer", setup: []Command{set("x")}, first: Command{Type: TypeKVIncr, Key: k, Value: []byte("2")},
			code: CodeNotInteger, between: []Command{set("1")}, retry: CodeOK, value: "3"},
		{name: "incr past the range", setup: []Command{set("9223372036854775807")}, first: Command{Type: TypeKVIncr, Key: k, Value: []byte("1")},
			code: CodeOverflow, between: []Command{set("1")}, retry: CodeOK, value: "2"},
		{name: "expire", setup: []Command{set("a")}, first: Command{Type: TypeKVExpire, Key: k, TTL: time.Hour}, code: CodeOK,
			between: []Command{persist}},
		{name: "expire refused", setup: []Command{setTTL}, first: Command{Type: TypeKVExpire, Key: k, TTL: time.Minute, Flags: FlagExpireNX},
			code: CodeUnchanged, between: []Command{persist}, retry: CodeOK},
		{name: "expire of a missing key", first: Command{Type: TypeKVExpire, Key: k, TTL: time.Hour}, code: CodeNotFound,
			between: []Command{set("a")}, retry: CodeOK},
		{name: "expire now", setup: []Command{set("a")}, first: Command{Type: TypeKVExpire, Key: k, Flags: FlagExpireNow}, code: CodeOK,
			between: []Command{set("b")}},
		// Records
		{name: "begin", first: begin, code: CodeCreated, between: []Command{release}},
		{name: "begin of a begun record", setup: []Command{begin}, first: begin, code: CodeExists,
			between: []Command{release}, retry: CodeCreated},
		{name: "begin refused as a suspect", setup: []Command{suspectBegin("one", 0)}, first: suspectBegin("two", FlagRejectSuspect),
			code: CodeSuspect},
		{name: "begin reporting a suspect", setup: []Command{suspectBegin("one", 0)}, first: suspectBegin("two", 0),
			code: CodeCreated, between: []Command{{Type: TypeRecordRelease, Key: RecordKey("pay", "u1", "two")}}},
		{name: "complete", setup: []Command{begin}, first: Command{Type: TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 200, Body: []byte("x")},
			code: CodeOK, between: []Command{release, begin}},
		{name: "complete by a stale owner", setup: []Command{begin}, first: Command{Type: TypeRecordComplete, Key: rk, Fence: 12345, Status: 200},
			code: CodeFenceMismatch, retry: CodeFenceMismatch},
		{name: "complete of a missing record", first: Command{Type: TypeRecordComplete, Key: rk, Fence: 1, Status: 200},
			code: CodeNotFound, between: []Command{begin}, retry: CodeFenceMismatch},
		{name: "complete twice", setup: []Command{begin, {Type: TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 200}},
			first: Command{Type: TypeRecordComplete, Key: rk, Fence: fenceOfBegin, Status: 201}, code: CodeWrongState, retry: CodeWrongState},
		{name: "release", setup: []Command{begin}, first: release, code: CodeOK, between: []Command{begin}},
		{name: "release of a missing record", first: release, code: CodeNotFound, between: []Command{begin}, retry: CodeOK},
		// Tokens
		{name: "issue", first: issue, code: CodeCreated, between: []Command{consume}},
		{name: "issue of an issued token", setup: []Command{issue}, first: issue, code: CodeExists,
			between: []Command{consume}, retry: CodeCreated},
		{name: "consume", setup: []Command{issue}, first: consume, code: CodeOK, between: []Command{issue}},
		{name: "consume of a missing token", first: consume, code: CodeNotFound, between: []Command{issue}, retry: CodeOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := reqID(42)
			a, twin := newHarness(t), newHarness(t)
			var fence uint64
			both := func(c Command) (*Result, *Result) {
				if c.Fence == fenceOfBegin {
					c.Fence = fence
				}
				ra, rb := a.apply(c), twin.apply(c)
				if c.Type == TypeRecordBegin && fence == 0 {
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
				twin.apply(Command{Type: TypeNoop})
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
				twin.apply(Command{Type: TypeNoop})
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
	results := []*Result{
		{Code: CodeOK},
		{Code: CodeCreated, Version: 1 << 40, ExpiresAt: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano()},
		{Code: CodeOK, Version: 7, Value: bytes.Repeat([]byte("v"), 300)},
		{Code: CodeCreated, Fence: 99, ExpiresAt: -5, Suspect: []byte("pay\x00u1\x00earlier")},
		{Code: CodeSuspect, Suspect: []byte("s")},
		{Code: CodeStorage},
		{Code: CodeOK, Fence: 3, Record: &Record{State: StateCompleted, Fence: 3, Status: 200, Body: []byte("b"), Headers: []Header{{Name: []byte("A"), Value: []byte("b")}}}},
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
	gone := []*Result{{Code: CodeExists, Value: []byte("existing value")}, {Code: codeReread}, {Code: CodeVersionMismatch, Version: 3}}
	err := h.f.db.Update(func(tx *bolt.Tx) error {
		a := applier{f: h.f, now: h.clock}
		if err := a.remember(tx, reqID(1), &Result{Code: CodeOK}); err != nil { // opens the generation
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
	if r := h.apply(Command{Type: TypeKVSet, ReqID: reqID(10), Key: []byte("k"), Value: []byte("v"), Mode: SetNX}); r.Code != CodeCreated {
		t.Errorf("retry of a refused SETNX stored by the previous build = %+v, want it applied afresh", r)
	}
	for _, bad := range [][]byte{{}, {0x80}, {0x80 | rememberedValue, 0, 5, 'a'}, {0xC0, 0}, {0x80, byte(codeEnd)}, {1, 2, 3}, {0x80, 0, 0}} {
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
	f.Add(appendRemembered(nil, &Result{Code: CodeOK, Version: 9, ExpiresAt: 1 << 60, Value: []byte("v")}))
	f.Add(appendRemembered(nil, &Result{Code: CodeCreated, Fence: 3, Suspect: []byte("s"), Record: &Record{State: StateInFlight}}))
	f.Add((&Result{Code: CodeOK, Value: []byte("old")}).Encode(binary64(42)))
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
