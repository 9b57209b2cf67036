package fsm

import (
	"bytes"
	"encoding/hex"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestCompleteStoresChecksum: the state machine stores a checksum with a
// completed record, over everything a replay writes or decides by: a
// change to any of it after the fact is ErrDamaged.
func TestCompleteStoresChecksum(t *testing.T) {
	h := newHarness(t)
	key := command.RecordKey("pay", "u1", "k")
	begin := h.apply(command.Command{Type: command.TypeRecordBegin, Key: key, Value: []byte("fingerprint"), TTL: time.Hour})
	h.apply(command.Command{Type: command.TypeRecordComplete, Key: key, Fence: begin.Fence, Status: 201,
		Headers: []command.Header{{Name: []byte("Content-Type"), Value: []byte("application/json")}}, Body: []byte(`{"charge":"ch_1"}`)})
	rec, err := h.f.Record(key, h.now())
	if err != nil {
		t.Fatal(err)
	}
	if !rec.HasSum || rec.Sum != rec.ResponseSum() {
		t.Fatalf("stored sum = %08x (has %v), want %08x", rec.Sum, rec.HasSum, rec.ResponseSum())
	}
	tests := []struct {
		name    string
		harm    func(r *command.Record)
		damaged bool
	}{
		{"as stored", func(r *command.Record) {}, false},
		{"a body byte flipped", func(r *command.Record) { r.Body[3] ^= 0x01 }, true},
		{"a header value byte flipped", func(r *command.Record) { r.Headers[0].Value[0] ^= 0x20 }, true},
		{"a header name byte flipped", func(r *command.Record) { r.Headers[0].Name[0] ^= 0x20 }, true},
		{"a byte moved from a header's name to its value", func(r *command.Record) {
			h := r.Headers[0]
			r.Headers[0] = command.Header{Name: h.Name[:len(h.Name)-1], Value: append(h.Name[len(h.Name)-1:], h.Value...)}
		}, true},
		{"the status", func(r *command.Record) { r.Status = 200 }, true},
		{"the body marked dropped", func(r *command.Record) { r.BodyDropped = true }, true},
		{"the fingerprint", func(r *command.Record) { r.Fingerprint[0] ^= 0x01 }, true},
		{"the body cut", func(r *command.Record) { r.Body = r.Body[:len(r.Body)-1] }, true},
		{"the expiry (not covered)", func(r *command.Record) { r.ExpiresAt++ }, false},
		{"no sum (written before checksums)", func(r *command.Record) { r.Body[0] ^= 1; r.HasSum = false }, false},
	}
	for _, tt := range tests {
		r := rec.Clone()
		tt.harm(r)
		err := r.Verify()
		if got := errors.Is(err, command.ErrDamaged); got != tt.damaged {
			t.Errorf("%s: Verify = %v, want damaged %v", tt.name, err, tt.damaged)
		}
	}
}

// TestRecordEncodingVersions: a record written before checksums (version
// 1) still decodes, unchecked, and re-encodes to the same bytes; a record
// with a sum is version 2; anything else is refused.
func TestRecordEncodingVersions(t *testing.T) {
	// Record{State: StateCompleted, Fence: 7, Fingerprint: "fp",
	// CreatedAt: 1, UpdatedAt: 2, ExpiresAt: 3, Status: 201,
	// Headers: [A: b], Body: "hi"} as the build before checksums wrote it.
	v1, _ := hex.DecodeString("01020007026670020406" + "00c901" + "0101410162" + "026869")
	rec, err := command.DecodeRecord(v1)
	if err != nil {
		t.Fatalf("DecodeRecord(version 1) = %v", err)
	}
	want := &command.Record{State: command.StateCompleted, Fence: 7, Fingerprint: []byte("fp"), CreatedAt: 1, UpdatedAt: 2, ExpiresAt: 3,
		Status: 201, Headers: []command.Header{{Name: []byte("A"), Value: []byte("b")}}, Body: []byte("hi")}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("DecodeRecord(version 1) = %+v, want %+v", rec, want)
	}
	if err := rec.Verify(); err != nil {
		t.Fatalf("Verify(version 1) = %v, want nil (unchecked)", err)
	}
	if got := rec.Encode(nil); !bytes.Equal(got, v1) {
		t.Fatalf("Encode(version 1 record) = %x, want %x", got, v1)
	}

	summed := *want
	summed.Sum, summed.HasSum = summed.ResponseSum(), true
	v2 := summed.Encode(nil)
	if v2[0] != 2 || !bytes.Equal(v2[1:len(v2)-4], v1[1:]) {
		t.Fatalf("Encode(with sum) = %x, want version 2, version 1's fields and 4 bytes", v2)
	}
	back, err := command.DecodeRecord(v2)
	if err != nil || !reflect.DeepEqual(back, &summed) {
		t.Fatalf("DecodeRecord(Encode(with sum)) = %+v, %v, want %+v", back, err, &summed)
	}
	for _, bad := range []struct {
		name string
		b    []byte
	}{
		{"version 2 without its sum", v2[:len(v2)-4]},
		{"version 2 with a byte of its sum", v2[:len(v2)-3]},
		{"version 1 with a sum", append([]byte{1}, v2[1:]...)},
		{"version 3", append([]byte{3}, v2[1:]...)},
	} {
		if _, err := command.DecodeRecord(bad.b); !errors.Is(err, command.ErrBadCommand) {
			t.Errorf("DecodeRecord(%s) = %v, want ErrBadCommand", bad.name, err)
		}
	}
}
