package transport

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"testing"
)

func TestApplyBatchFrame(t *testing.T) {
	calls := []*fwdCall{{seq: 7, payload: []byte("one")}, {seq: 9, payload: nil}, {seq: 12, payload: bytes.Repeat([]byte{1}, 300)}}
	enc := encodeApplyBatch(calls)
	var got []*fwdCall
	if err := decodeApplyBatch(enc, func(seq uint64, cmd []byte) { got = append(got, &fwdCall{seq: seq, payload: cmd}) }); err != nil {
		t.Fatal(err)
	}
	for i := range calls {
		if got[i].seq != calls[i].seq || !bytes.Equal(got[i].payload, calls[i].payload) {
			t.Fatalf("entry %d: %d %q, want %d %q", i, got[i].seq, got[i].payload, calls[i].seq, calls[i].payload)
		}
	}
	for name, bad := range map[string][]byte{
		"empty":          nil,
		"zero count":     {0},
		"over the bound": binary.AppendUvarint(nil, maxForwardBatch+1),
		"truncated":      enc[:len(enc)-5],
		"trailing":       append(append([]byte(nil), enc...), 1),
		"lying length":   append(binary.AppendUvarint(nil, 1), append(make([]byte, 8), 0xff, 0xff, 0x03)...),
	} {
		n := 0
		if err := decodeApplyBatch(bad, func(uint64, []byte) { n++ }); err == nil || n != 0 {
			t.Errorf("%s: err %v after %d entries, want an error before any", name, err, n)
		}
	}
}

// testErrors is a node's table of errors, as a store gives one.
var (
	errNotLeader = errors.New("node is not the leader")
	errRetry     = errors.New("retry")
	errShutdown  = errors.New("store is shut down")
	errNotSent   = errors.New("not sent")
	errFirst     = errors.New("first coded")
	errSecond    = errors.New("second coded")
	testErrors   = Errors{NotLeader: errNotLeader, Retry: errRetry, Shutdown: errShutdown, NotSent: errNotSent, Coded: []error{0: nil, 1: errFirst, 2: errSecond}}
)

// TestErrorsKeepTheirIdentity: a coded error comes back as its sentinel,
// message and all; one without a code keeps its message; not-leader, retry
// and shutdown come back by status; a code or status the follower does not
// know is an error, never a success.
func TestErrorsKeepTheirIdentity(t *testing.T) {
	for code, known := range testErrors.Coded {
		if known == nil {
			continue
		}
		for _, sent := range []error{known, fmt.Errorf("%w: detail %d", known, code), fmt.Errorf("context: %w", known)} {
			status, payload := testErrors.answer(sent)
			got := testErrors.err(status, payload, "n1")
			want := sent.Error()
			if !bytes.HasPrefix([]byte(want), []byte(known.Error())) {
				want = known.Error() + ": " + want // the sentinel first, then what the leader said
			}
			if status != statusError || payload[0] != byte(code) || !errors.Is(got, known) || got.Error() != want {
				t.Errorf("code %d: %v came back as %q (status %d), want %q", code, sent, got, status, want)
			}
		}
	}
	status, payload := testErrors.answer(errors.New("something else"))
	if got := testErrors.err(status, payload, "n1"); status != statusError || payload[0] != 0 || got.Error() != "something else" {
		t.Errorf("an error without a code came back as %q", got)
	}
	for _, tc := range []struct {
		err    error
		status byte
		want   error
	}{
		{errNotLeader, statusNotLeader, errNotLeader},
		{fmt.Errorf("%w: lost", errRetry), statusRetry, errRetry},
		{errShutdown, statusShutdown, errRetry},
		{errShutdown, statusShutdown, errNotSent}, // turned away before acting: nothing was done
	} {
		status, payload := testErrors.answer(tc.err)
		if got := testErrors.err(status, payload, "n1"); status != tc.status || !errors.Is(got, tc.want) {
			t.Errorf("%v came back as %v (status %d), want %v (status %d)", tc.err, got, status, tc.want, tc.status)
		}
	}
	// A retry answer or a lost connection says nothing of the fate.
	if got := testErrors.err(statusRetry, []byte("lost"), "n1"); errors.Is(got, errNotSent) {
		t.Errorf("a retry answer came back as not sent: %v", got)
	}
	for _, tc := range []struct {
		status  byte
		payload []byte
	}{
		{statusError, []byte{9, 'x'}}, // a code of a newer node
		{statusError, nil},
		{statusError, []byte{0}},
		{7, nil}, // an unknown status
	} {
		if got := testErrors.err(tc.status, tc.payload, "n1"); got == nil {
			t.Errorf("status %d payload %q came back as success", tc.status, tc.payload)
		}
	}
}
