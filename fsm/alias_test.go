package fsm

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"reflect"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/idemgate/idemgate/command"
	bolt "go.etcd.io/bbolt"
)

// Nothing the state machine returns may alias bbolt's memory map (copy.go).
// These tests find the map's address range in /proc/self/maps and check
// every slice reachable from every exported read against it, then make
// bbolt grow and remap its file and use what was read before.

// mapping is one address range of this process.
type mapping struct{ lo, hi uintptr }

func (m mapping) holds(p uintptr) bool { return p >= m.lo && p < m.hi }

// dbMapping returns the range of the mapping that holds the start of f's
// data file, as the kernel reports it.
func dbMapping(t *testing.T, f *FSM) mapping {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc/self/maps: Linux only")
	}
	data := f.db.Info().Data
	file, err := os.Open("/proc/self/maps")
	if err != nil {
		t.Skipf("no /proc/self/maps: %v", err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	for sc.Scan() {
		span, _, _ := strings.Cut(sc.Text(), " ")
		a, b, ok := strings.Cut(span, "-")
		if !ok {
			continue
		}
		lo, err1 := strconv.ParseUint(a, 16, 64)
		hi, err2 := strconv.ParseUint(b, 16, 64)
		if err1 == nil && err2 == nil && data >= uintptr(lo) && data < uintptr(hi) {
			return mapping{uintptr(lo), uintptr(hi)}
		}
	}
	t.Fatalf("no mapping holds bbolt's data at %#x", data)
	return mapping{}
}

// aliases returns the paths of the byte slices reachable from v whose
// memory lies in one of maps.
func aliases(v any, maps ...mapping) []string {
	var out []string
	var walk func(path string, v reflect.Value)
	walk = func(path string, v reflect.Value) {
		switch v.Kind() {
		case reflect.Pointer, reflect.Interface:
			if !v.IsNil() {
				walk(path, v.Elem())
			}
		case reflect.Struct:
			for i := 0; i < v.NumField(); i++ {
				walk(path+"."+v.Type().Field(i).Name, v.Field(i))
			}
		case reflect.Slice:
			if v.Type().Elem().Kind() == reflect.Uint8 {
				if v.Len() == 0 {
					return
				}
				p := uintptr(v.UnsafePointer())
				for _, m := range maps {
					if m.holds(p) {
						out = append(out, path)
						return
					}
				}
				return
			}
			for i := 0; i < v.Len(); i++ {
				walk(fmt.Sprintf("%s[%d]", path, i), v.Index(i))
			}
		}
	}
	walk("", reflect.ValueOf(v))
	return out
}

// aliasFixture is a state machine holding one thing of every kind, and the
// request ids of commands that can be retried.
type aliasFixture struct {
	h                         *harness
	recKey, kvKey, tokKey     []byte
	suspectID, recordID, kvID command.ReqID
	legacyID                  command.ReqID
	want                      map[command.ReqID][]byte // the first attempt's encoded result
}

func newAliasFixture(t *testing.T) *aliasFixture {
	h := newHarness(t)
	x := &aliasFixture{h: h, recKey: command.RecordKey("pay", "u1", "first"), kvKey: []byte("kv-key"),
		tokKey: command.TokenKey("form", "tok"), suspectID: reqID(1), recordID: reqID(2), kvID: reqID(3), legacyID: reqID(4),
		want: map[command.ReqID][]byte{}}
	digest := command.DigestKey("pay", "u1", bytes.Repeat([]byte{0xd1}, 32))
	window := 5 * time.Minute
	r := h.apply(command.Command{Type: command.TypeRecordBegin, Key: x.recKey, Value: []byte("fingerprint"), TTL: time.Hour, DigestKey: digest, Window: window})
	if r.Code != command.CodeCreated {
		t.Fatalf("begin = %+v", r)
	}
	body := bytes.Repeat([]byte("stored response body "), 200)
	if r := h.apply(command.Command{Type: command.TypeRecordComplete, Key: x.recKey, Fence: r.Fence, Status: 201,
		Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, Body: body}); r.Code != command.CodeOK {
		t.Fatalf("complete = %+v", r)
	}
	// The same body under a new key: a suspect whose result names the
	// earlier record key, remembered under suspectID.
	r = h.apply(command.Command{Type: command.TypeRecordBegin, ReqID: x.suspectID, Key: command.RecordKey("pay", "u1", "second"), TTL: time.Hour, DigestKey: digest, Window: window})
	if r.Code != command.CodeCreated || r.Suspect == nil {
		t.Fatalf("suspect begin = %+v", r)
	}
	x.want[x.suspectID] = r.Encode(nil)
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: x.kvKey, Value: bytes.Repeat([]byte("v"), 3000), TTL: time.Hour}); r.Code != command.CodeCreated {
		t.Fatalf("kv set = %+v", r)
	}
	// A GETDEL's remembered result carries the value it removed.
	if r := h.apply(command.Command{Type: command.TypeKVSet, Key: []byte("kv-gone"), Value: bytes.Repeat([]byte("g"), 3000)}); r.Code != command.CodeCreated {
		t.Fatalf("kv set = %+v", r)
	}
	r = h.apply(command.Command{Type: command.TypeKVGetDel, ReqID: x.kvID, Key: []byte("kv-gone")})
	if r.Code != command.CodeOK || len(r.Value) != 3000 {
		t.Fatalf("kv getdel = %+v", r)
	}
	x.want[x.kvID] = r.Encode(nil)
	if r := h.apply(command.Command{Type: command.TypeTokenIssue, Key: x.tokKey, TTL: time.Hour}); r.Code != command.CodeCreated {
		t.Fatalf("token = %+v", r)
	}
	// No command remembers a result that carries a record today (a begin
	// that found one is recomputed on retry); remember one by hand so the
	// recall path is proven to copy every part of a result.
	stored, err := h.f.Record(x.recKey, h.now())
	if err != nil {
		t.Fatal(err)
	}
	withRecord := &command.Result{Code: command.CodeOK, Fence: 7, Record: stored, Suspect: []byte("s"), Value: []byte("v")}
	// And one in the encoding of the previous build (stamp | Result.Encode),
	// which a file upgraded in place still holds.
	legacy := &command.Result{Code: command.CodeOK, Fence: 8, Record: stored, Suspect: []byte("t"), Value: []byte("w")}
	err = h.f.db.Update(func(tx *bolt.Tx) error {
		a := applier{f: h.f, now: h.f.Now()}
		if err := a.remember(tx, x.recordID, withRecord); err != nil {
			return err
		}
		stamp := binary.BigEndian.AppendUint64(nil, uint64(a.now))
		return a.gen.Put(x.legacyID[:], legacy.Encode(stamp))
	})
	if err != nil {
		t.Fatal(err)
	}
	x.want[x.recordID] = withRecord.Encode(nil)
	x.want[x.legacyID] = legacy.Encode(nil)
	return x
}

// retries re-applies a command under each remembered request id (each a
// different command: a recalled result is returned whatever the retry
// says) and returns what the state machine answered.
func (x *aliasFixture) retries(t *testing.T) map[command.ReqID]*command.Result {
	out := map[command.ReqID]*command.Result{}
	for id := range x.want {
		out[id] = x.h.apply(command.Command{Type: command.TypeKVSet, ReqID: id, Key: []byte("unrelated"), Value: []byte("x")})
		if got := out[id].Encode(nil); !bytes.Equal(got, x.want[id]) {
			t.Fatalf("retry of %x answered %+v, not the first attempt's result", id, out[id])
		}
	}
	return out
}

func TestReadsDoNotAliasTheMap(t *testing.T) {
	x := newAliasFixture(t)
	f := x.h.f
	before := dbMapping(t, f)
	reads := map[string]any{}
	for id, r := range x.retries(t) {
		reads[fmt.Sprintf("ApplyBatch(retry %x)", id[15])] = r
		looked, ok, err := f.LookupRequest(id)
		if err != nil || !ok {
			t.Fatalf("LookupRequest(%x) = %v, %v", id, ok, err)
		}
		reads[fmt.Sprintf("LookupRequest(%x)", id[15])] = looked
	}
	if r, err := f.Record(x.recKey, x.h.now()); err != nil {
		t.Fatal(err)
	} else {
		reads["Record"] = r
	}
	if e, err := f.KV(x.kvKey, x.h.now()); err != nil {
		t.Fatal(err)
	} else {
		reads["KV"] = e
	}
	if s, err := f.Suspects(10); err != nil || len(s) == 0 {
		t.Fatalf("Suspects = %v, %v", s, err)
	} else {
		reads["Suspects"] = s
	}
	if d, err := f.Due(x.h.now().Add(2*time.Hour), 100); err != nil || len(d) == 0 {
		t.Fatalf("Due = %v, %v", d, err)
	} else {
		reads["Due"] = d
	}
	// Results of fresh commands that return stored bytes.
	reads["SETNX on an existing key"] = x.h.apply(command.Command{Type: command.TypeKVSet, Key: x.kvKey, Value: []byte("y"), Mode: command.SetNX})
	reads["begin on an existing record"] = x.h.apply(command.Command{Type: command.TypeRecordBegin, Key: x.recKey, TTL: time.Hour})
	reads["GETDEL"] = x.h.apply(command.Command{Type: command.TypeKVGetDel, Key: x.kvKey})
	after := dbMapping(t, f)
	for name, v := range reads {
		if got := aliases(v, before, after); len(got) > 0 {
			t.Errorf("%s returned slices inside bbolt's memory map: %v", name, got)
		}
	}
	if len(aliases(reads["GETDEL"])) != 0 || len(aliases(&command.Result{Value: []byte("x")}, mapping{0, ^uintptr(0)})) != 1 {
		t.Fatal("the alias walker does not see slices")
	}
}

// TestRecalledResultSurvivesRemap is the fault of a leader answering a
// retried forwarded command: the recalled result was encoded after bbolt
// had grown and remapped its file. With the fault turned into a panic, a
// result that still pointed into the old map fails the test instead of
// killing the process; one that pointed into reused pages fails the
// comparison.
func TestRecalledResultSurvivesRemap(t *testing.T) {
	defer func(n int) { initialMmapSize = n }(initialMmapSize)
	initialMmapSize = 0 // remap as the file grows, as a file past the initial map does
	x := newAliasFixture(t)
	f := x.h.f
	recalled := x.retries(t)
	looked := map[command.ReqID]*command.Result{}
	for id := range x.want {
		r, ok, err := f.LookupRequest(id)
		if err != nil || !ok {
			t.Fatalf("LookupRequest(%x) = %v, %v", id, ok, err)
		}
		looked[id] = r
	}
	rec, err := f.Record(x.recKey, x.h.now())
	if err != nil {
		t.Fatal(err)
	}
	wantRec := rec.Encode(nil)

	// Rewrite and grow until bbolt has remapped its file (twice, so the
	// old range is unmapped and the pages read before are reused).
	start, remaps := f.db.Info().Data, 0
	value := bytes.Repeat([]byte{0xEE}, 64<<10)
	for i := 0; i < 4096 && remaps < 2; i++ {
		x.h.apply(command.Command{Type: command.TypeKVSet, Key: []byte(fmt.Sprintf("grow-%d", i)), Value: value})
		x.h.apply(command.Command{Type: command.TypeKVDelete, Key: []byte(fmt.Sprintf("grow-%d", i/2))})
		if d := f.db.Info().Data; d != start {
			start, remaps = d, remaps+1
		}
	}
	if remaps < 2 {
		t.Fatalf("bbolt never remapped its file: the test proves nothing")
	}

	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	encode := func(what string, enc func() []byte, want []byte) {
		t.Helper()
		defer func() {
			if p := recover(); p != nil {
				t.Errorf("%s: touching it after the remap faulted: %v", what, p)
			}
		}()
		if got := enc(); !bytes.Equal(got, want) {
			t.Errorf("%s changed after the remap:\n got %q\nwant %q", what, got, want)
		}
	}
	for id, want := range x.want {
		encode(fmt.Sprintf("recalled result %x", id[15]), func() []byte { return recalled[id].Encode(nil) }, want)
		encode(fmt.Sprintf("looked-up request %x", id[15]), func() []byte { return looked[id].Encode(nil) }, want)
	}
	encode("record", func() []byte { return rec.Encode(nil) }, wantRec)
}

func TestCloneIsDeep(t *testing.T) {
	rec := &command.Record{State: command.StateCompleted, Fence: 3, Fingerprint: []byte("fp"), Status: 200, Body: []byte("body"),
		Headers: []command.Header{{Name: []byte("A"), Value: []byte("1")}, {Name: []byte("B"), Value: nil}}}
	res := &command.Result{Code: command.CodeExists, Value: []byte("value"), Suspect: []byte{}, Record: rec}
	c := res.Clone()
	if !bytes.Equal(c.Encode(nil), res.Encode(nil)) {
		t.Fatalf("Clone changed the encoding: %+v", c)
	}
	if c.Suspect == nil || c.Record.Headers[1].Value != nil {
		t.Fatalf("Clone changed nil and empty slices: %+v", c)
	}
	orig := res.Encode(nil)
	for _, b := range [][]byte{res.Value, rec.Fingerprint, rec.Body, rec.Headers[0].Name, rec.Headers[0].Value} {
		for i := range b {
			b[i] = '!'
		}
	}
	if !bytes.Equal(c.Encode(nil), orig) {
		t.Fatalf("the clone shares memory with its original: %+v", c.Record)
	}
	// Parts are capped: appending to one never writes into the next.
	_ = append(c.Record.Fingerprint, 'x')
	if string(c.Record.Headers[0].Name) != "A" {
		t.Fatalf("an append to one part overwrote the next")
	}
	kv := command.KVEntry{Value: []byte("v")}
	if k := kv.Clone(); unsafe.SliceData(k.Value) == unsafe.SliceData(kv.Value) {
		t.Fatal("KVEntry.Clone shares its value")
	}
	s := command.Suspect{Key: []byte("k"), Earlier: []byte("e")}
	if c := s.Clone(); unsafe.SliceData(c.Key) == unsafe.SliceData(s.Key) || string(c.Earlier) != "e" {
		t.Fatal("Suspect.Clone shares its keys")
	}
}
