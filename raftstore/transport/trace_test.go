package transport

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// tc is a valid trace context whose ids are made of i.
func tcOf(i byte) TraceContext {
	return TraceContext{TraceID: [16]byte{i, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, i}, SpanID: [8]byte{i, 7, 7, 7, 7, 7, 7, i}, Flags: 1}
}

// tracedCall is an apply's call with trace context tc, as
// SendApplyTraced queues it.
func tracedCall(seq uint64, cmd []byte, tc TraceContext) *fwdCall {
	return &fwdCall{kind: applyTraced, seq: seq, payload: append(appendTrace(nil, tc), cmd...)}
}

// traceField is a trace field of tlen bytes: the first of them from tc's
// encoding, zeros past it.
func traceField(tlen int, tc TraceContext) []byte {
	full := appendTrace(nil, tc)[1:]
	field := make([]byte, tlen)
	copy(field, full)
	return append([]byte{byte(tlen)}, field...)
}

type decodedApply struct {
	seq uint64
	cmd string
	tc  TraceContext
}

func decodeTraced(p []byte) ([]decodedApply, error) {
	var got []decodedApply
	err := decodeTracedApplyBatch(p, func(seq uint64, cmd []byte, tc TraceContext) {
		got = append(got, decodedApply{seq, string(cmd), tc})
	})
	return got, err
}

// TestTracedApplyFrames: a traced batch decodes to its applies, each with
// its own trace context or none; a frame whose structure does not parse
// is an error before any apply is handed on; a trace context this version
// does not read (another length, zero ids) is skipped, and its apply
// handed on untraced.
func TestTracedApplyFrames(t *testing.T) {
	calls := []*fwdCall{tracedCall(7, []byte("one"), tcOf(1)), {kind: Apply, seq: 9, payload: []byte("two")},
		tracedCall(12, bytes.Repeat([]byte{1}, 300), tcOf(3)), {kind: Apply, seq: 13, payload: nil}}
	enc := encodeTracedApplyBatch(calls)
	got, err := decodeTraced(enc)
	if err != nil || len(got) != len(calls) {
		t.Fatalf("decoded %d applies, %v", len(got), err)
	}
	for i, c := range calls {
		want := TraceContext{}
		if c.kind == applyTraced {
			want, _, _ = readTrace(c.payload)
		}
		if got[i].seq != c.seq || got[i].cmd != string(c.command()) || got[i].tc != want {
			t.Errorf("apply %d = %+v, want seq %d %q %+v", i, got[i], c.seq, c.command(), want)
		}
	}
	// The untraced applies cost no byte: the batch body is applyBatch's.
	plain := encodeApplyBatch(calls)
	if !bytes.HasSuffix(enc, plain) || len(enc)-len(plain) != 1+2*(1+1+traceContextLen) {
		t.Errorf("traced batch is %d bytes, the plain one %d: want the plain one after 2 traced entries", len(enc), len(plain))
	}

	// head builds a traced batch of the plain body with these entries
	// (index, trace field).
	head := func(count int, entries ...[]byte) []byte {
		b := binary.AppendUvarint(nil, uint64(count))
		for _, e := range entries {
			b = append(b, e...)
		}
		return append(b, plain...)
	}
	entry := func(index int, field []byte) []byte {
		return append(binary.AppendUvarint(nil, uint64(index)), field...)
	}
	good := traceField(traceContextLen, tcOf(5))
	for _, tc := range []struct {
		name string
		p    []byte
	}{
		{"empty", nil},
		{"zero traced", head(0)},
		{"count over the bound", head(maxForwardBatch + 1)},
		{"count lies (more entries than sent)", head(3, entry(0, good))},
		{"index past the batch", head(1, entry(4, good))},
		{"index far past", head(1, entry(1<<40, good))},
		{"indexes not increasing", head(2, entry(2, good), entry(1, good))},
		{"index twice", head(2, entry(1, good), entry(1, good))},
		{"trace field longer than the frame", append(binary.AppendUvarint(nil, 1), 0, 200, 1, 2)},
		{"truncated body", head(1, entry(0, good))[:40]},
		{"no body", append(binary.AppendUvarint(nil, 1), entry(0, good)...)},
		{"body with trailing bytes", append(head(1, entry(0, good)), 9)},
		{"bad index varint", append(binary.AppendUvarint(nil, 1), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)},
	} {
		if got, err := decodeTraced(tc.p); err == nil || len(got) != 0 {
			t.Errorf("%s: %d applies, %v; want an error before any", tc.name, len(got), err)
		}
	}

	zeroTrace, zeroSpan := tcOf(6), tcOf(6)
	zeroTrace.TraceID, zeroSpan.SpanID = [16]byte{}, [8]byte{}
	for _, tc := range []struct {
		name  string
		field []byte
		want  TraceContext
	}{
		{"this version's", good, tcOf(5)},
		{"empty", []byte{0}, TraceContext{}},
		{"one byte short", traceField(traceContextLen-1, tcOf(5)), TraceContext{}},
		{"a later version's, longer", traceField(traceContextLen+8, tcOf(5)), TraceContext{}},
		{"the longest", traceField(255, tcOf(5)), TraceContext{}},
		{"all-zero trace id", traceField(traceContextLen, zeroTrace), TraceContext{}},
		{"all-zero span id", traceField(traceContextLen, zeroSpan), TraceContext{}},
		{"unknown flags kept", traceField(traceContextLen, TraceContext{TraceID: tcOf(5).TraceID, SpanID: tcOf(5).SpanID, Flags: 0xff}),
			TraceContext{TraceID: tcOf(5).TraceID, SpanID: tcOf(5).SpanID, Flags: 0xff}},
	} {
		got, err := decodeTraced(head(1, entry(2, tc.field)))
		if err != nil || len(got) != 4 || got[2].tc != tc.want || got[2].cmd != string(calls[2].command()) || got[0].tc.IsValid() {
			t.Errorf("batch, %s trace context: %+v, %v; want every apply, the third with %+v", tc.name, got, err, tc.want)
		}
		gotTC, cmd, err := readTrace(append(append([]byte(nil), tc.field...), "cmd"...))
		if err != nil || gotTC != tc.want || string(cmd) != "cmd" {
			t.Errorf("single, %s trace context: %+v %q %v; want %+v and the command", tc.name, gotTC, cmd, err, tc.want)
		}
	}
	for _, p := range [][]byte{nil, {1}, {traceContextLen}, append([]byte{traceContextLen}, make([]byte, traceContextLen-1)...)} {
		if _, _, err := readTrace(p); err == nil {
			t.Errorf("single apply %v: no error, want a malformed frame", p)
		}
	}
}

// FuzzDecodeApplyBatch: any batch payload a peer sends, traced or not, is
// decoded without a panic; a refused one hands on no apply, and what a
// good one hands on, encoded again as a Client encodes it, decodes to the
// same applies.
func FuzzDecodeApplyBatch(f *testing.F) {
	calls := []*fwdCall{tracedCall(1, []byte("a"), tcOf(1)), {kind: Apply, seq: 2, payload: []byte("bc")}}
	f.Add(false, encodeApplyBatch(calls))
	f.Add(true, encodeTracedApplyBatch(calls))
	f.Add(true, []byte{1, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add(true, []byte{1, 0, 3, 1, 2, 3, 1, 0, 0, 0, 0, 0, 0, 0, 5, 0})
	f.Fuzz(func(t *testing.T, traced bool, p []byte) {
		var got []decodedApply
		var err error
		if traced {
			got, err = decodeTraced(p)
		} else {
			err = decodeApplyBatch(p, func(seq uint64, cmd []byte) { got = append(got, decodedApply{seq: seq, cmd: string(cmd)}) })
		}
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("a refused frame handed on %d applies", len(got))
			}
			return
		}
		var again []*fwdCall
		anyTraced := false
		for _, a := range got {
			if !traced && a.tc.IsValid() {
				t.Fatalf("an untraced batch gave a trace context: %+v", a)
			}
			call := &fwdCall{kind: Apply, seq: a.seq, payload: []byte(a.cmd)}
			if a.tc.IsValid() {
				anyTraced, call = true, tracedCall(a.seq, []byte(a.cmd), a.tc)
			}
			again = append(again, call)
		}
		enc := encodeApplyBatch(again)
		if anyTraced {
			enc = encodeTracedApplyBatch(again)
		}
		if back, err := decodeTraced(enc); anyTraced && (err != nil || fmt.Sprint(back) != fmt.Sprint(got)) {
			t.Fatalf("re-encoded: %+v, %v; want %+v", back, err, got)
		}
		if !anyTraced {
			var back []decodedApply
			err := decodeApplyBatch(enc, func(seq uint64, cmd []byte) { back = append(back, decodedApply{seq: seq, cmd: string(cmd)}) })
			if err != nil || fmt.Sprint(back) != fmt.Sprint(got) {
				t.Fatalf("re-encoded: %+v, %v; want %+v", back, err, got)
			}
		}
	})
}

// tracing records what reached the handler: each apply's payload and
// trace context (zero: it came by Handle).
type tracing struct {
	mu  sync.Mutex
	got map[string]TraceContext
}

func (h *tracing) Handle(kind Kind, payload []byte) Pending {
	return h.HandleApply(payload, TraceContext{})
}

func (h *tracing) HandleApply(payload []byte, tc TraceContext) Pending {
	h.mu.Lock()
	h.got[string(payload)] = tc
	h.mu.Unlock()
	return Answer(func() ([]byte, error) { return append([]byte("A"), payload...), nil })
}

// serveNode runs srv behind a listener that answers a hello with the
// JSON hello and serves forwarding, as a node of that hello would.
func serveNode(t testing.TB, srv *Server, hello string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				var pre [preambleLen]byte
				if _, err := io.ReadFull(c, pre[:]); err != nil {
					c.Close()
					return
				}
				switch pre[0] {
				case protoHello:
					c.Write(append(binary.BigEndian.AppendUint32(nil, uint32(len(hello))), hello...))
					c.Close()
				case protoForward:
					srv.Serve(c)
				default:
					c.Close()
				}
			})
		}
	})
	return ln.Addr().String()
}

// TestTracedAppliesOnlyToAReader: a follower learns from the leader's
// hello whether it reads traced applies. To one whose hello names
// FeatureTracedApply, applies sent with a trace context reach its handler
// with it (alone or batched, beside untraced ones, which come as before);
// to an older one (a hello without features) every apply goes in the first
// protocol's frames, as untraced, and is answered. The leader's Server
// counts the traced frames it read.
func TestTracedAppliesOnlyToAReader(t *testing.T) {
	reader, _ := json.Marshal(Hello{Node: "leader", State: HelloMember, Features: []string{"something-later", FeatureTracedApply}})
	for _, tt := range []struct {
		name   string
		hello  string
		traced bool
	}{
		{"reader", string(reader), true},
		{"older leader", `{"node":"leader","state":"member","leader":"leader","term":3}`, false},
		{"other features only", `{"node":"leader","state":"member","features":["something-later"]}`, false},
		{"no hello", "", false}, // a hello that fails: the first protocol
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := &tracing{got: map[string]TraceContext{}}
			srv := &Server{Handler: h, MaxFrame: 1 << 20, Errors: &testErrors, Logger: discard}
			addr := serveNode(t, srv, tt.hello)
			c := dialTest(t, addr)
			hello, err := AskHello(Peer{ID: "leader", Addr: addr, Timeout: 5 * time.Second})
			if (err == nil) != (tt.hello != "") {
				t.Fatalf("hello = %+v, %v", hello, err)
			}
			c.Learn(hello)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()

			// One alone, then 64 callers at once (batches, mixed).
			if got, err := c.Call(ctx, Apply, []byte("alone")); err != nil || string(got) != "Aalone" {
				t.Fatalf("untraced alone = %q, %v", got, err)
			}
			wait, err := c.SendApplyTraced(ctx, Apply, []byte("alone-traced"), tcOf(200))
			if err != nil {
				t.Fatal(err)
			}
			if got, err := wait(ctx); err != nil || string(got) != "Aalone-traced" {
				t.Fatalf("traced alone = %q, %v", got, err)
			}
			var wg sync.WaitGroup
			var wrong atomic.Int64
			for g := range 64 {
				wg.Go(func() {
					p := fmt.Sprint("g", g)
					var tc TraceContext
					if g%3 == 0 {
						tc = tcOf(byte(g + 1))
					}
					w, err := c.SendApplyTraced(ctx, Apply, []byte(p), tc)
					if err != nil {
						wrong.Add(1)
						return
					}
					if got, err := w(ctx); err != nil || string(got) != "A"+p {
						wrong.Add(1)
					}
				})
			}
			wg.Wait()
			if wrong.Load() != 0 {
				t.Fatalf("%d of 64 calls got another's answer or none", wrong.Load())
			}
			// Another kind with a trace context: never traced.
			if got, err := c.SendApplyTraced(ctx, ReadIndex, nil, tcOf(9)); err != nil {
				t.Fatal(err)
			} else if _, err := got(ctx); err != nil {
				t.Fatal(err)
			}

			want := func(p string, tc TraceContext) {
				t.Helper()
				if !tt.traced {
					tc = TraceContext{}
				}
				if got, ok := h.got[p]; !ok || got != tc {
					t.Errorf("%s reached the handler: %v, with %+v; want %+v", p, ok, got, tc)
				}
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			want("alone", TraceContext{})
			want("alone-traced", tcOf(200))
			for g := range 64 {
				tc := TraceContext{}
				if g%3 == 0 {
					tc = tcOf(byte(g + 1))
				}
				want(fmt.Sprint("g", g), tc)
			}
			if n := srv.traced.Load(); (n > 0) != tt.traced {
				t.Errorf("the leader read %d traced frames; want some: %v", n, tt.traced)
			}
			t.Logf("%d frames, %d batches, %d traced", srv.frames.Load(), srv.batches.Load(), srv.traced.Load())
		})
	}
}

// TestTracedApplyHostile: a traced apply whose trace context does not
// parse is handled untraced and answered; one whose frame does not parse
// closes the connection before anything is handled.
func TestTracedApplyHostile(t *testing.T) {
	h := &tracing{got: map[string]TraceContext{}}
	srv := &Server{Handler: h, MaxFrame: 1000, Errors: &testErrors, Logger: discard}
	addr, _ := serveForwarding(t, srv)
	frame := func(kind Kind, seq uint64, payload []byte) []byte {
		b := binary.BigEndian.AppendUint64([]byte{byte(kind)}, seq)
		return append(binary.BigEndian.AppendUint32(b, uint32(len(payload))), payload...)
	}
	open := func() net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(append([]byte{protoForward}, make([]byte, preambleLen-1)...))
		return conn
	}
	for _, tc := range []struct {
		name  string
		frame []byte
		cmd   string // "" : the connection is closed
	}{
		{"context of 3 bytes", frame(applyTraced, 1, append([]byte{3, 1, 2, 3}, "c1"...)), "c1"},
		{"context of zeros", frame(applyTraced, 2, append(traceField(traceContextLen, TraceContext{}), "c2"...)), "c2"},
		{"context of 255 bytes", frame(applyTraced, 3, append(traceField(255, tcOf(1)), "c3"...)), "c3"},
		{"batch with a context of 40 bytes", frame(applyBatchTraced, 0,
			append(append([]byte{1, 0}, traceField(40, tcOf(1))...), encodeApplyBatch([]*fwdCall{{seq: 4, payload: []byte("c4")}})...)), "c4"},
		{"empty traced apply", frame(applyTraced, 5, nil), ""},
		{"context longer than the frame", frame(applyTraced, 6, []byte{200, 1, 2}), ""},
		{"batch index past it", frame(applyBatchTraced, 0,
			append(append([]byte{1, 5}, traceField(traceContextLen, tcOf(1))...), encodeApplyBatch([]*fwdCall{{seq: 7, payload: []byte("c7")}})...)), ""},
		{"over the frame limit", frame(applyTraced, 8, append(traceField(traceContextLen, tcOf(1)), make([]byte, 1000)...)), ""},
	} {
		conn := open()
		conn.Write(tc.frame)
		conn.SetReadDeadline(time.Now().Add(30 * time.Second)) // a bound for the test
		var hdr [frameHeaderLen]byte
		_, err := io.ReadFull(conn, hdr[:])
		conn.Close()
		if tc.cmd == "" {
			if err == nil {
				t.Errorf("%s: answered with status %d; want the connection closed", tc.name, hdr[0])
			}
			continue
		}
		h.mu.Lock()
		got, ok := h.got[tc.cmd]
		h.mu.Unlock()
		if err != nil || hdr[0] != statusOK || !ok || got.IsValid() {
			t.Errorf("%s: answer %v (status %d), handled %v with %+v; want it handled untraced and answered", tc.name, err, hdr[0], ok, got)
		}
	}
	if n := len(h.got); n != 4 {
		t.Errorf("%d applies were handled, want the 4 whose frames parse", n)
	}
}
