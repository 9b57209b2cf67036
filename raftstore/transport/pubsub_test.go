package transport

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestDecodePubSubHostile: malformed frames are refused whole (nothing of
// them delivered), and a good one is delivered as sent.
func TestDecodePubSubHostile(t *testing.T) {
	msg := func(flags byte, ch, m string) []byte {
		b := append([]byte{flags}, binary.AppendUvarint(nil, uint64(len(ch)))...)
		b = append(b, ch...)
		b = binary.AppendUvarint(b, uint64(len(m)))
		return append(b, m...)
	}
	frame := func(n uint64, parts ...[]byte) []byte {
		b := binary.AppendUvarint(nil, n)
		for _, p := range parts {
			b = append(b, p...)
		}
		return b
	}
	good := msg(0, "ch", "hello")
	for _, tc := range []struct {
		name string
		p    []byte
		want string // delivered, or "error"
	}{
		{"empty", nil, "error"},
		{"count 0", frame(0), "error"},
		{"count past the frame", frame(1<<40, good), "error"},
		{"count over a varint", []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, "error"},
		{"fewer messages than counted", frame(2, good), "error"},
		{"flags 2", frame(1, msg(2, "ch", "x")), "error"},
		{"channel length past the end", frame(1, []byte{0, 0x7f, 'a'}), "error"},
		{"message length past the end", frame(1, []byte{0, 1, 'a', 0x7f}), "error"},
		{"length over a varint", frame(1, append([]byte{0}, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)), "error"},
		{"trailing bytes", frame(1, good, []byte{0}), "error"},
		{"a good one, then a bad one", frame(2, good, []byte{9}), "error"},
		{"good", frame(2, good, msg(1, "", "")), "ch=hello|s:=|"},
		{"empty channel and message", frame(1, msg(0, "", "")), "=|"},
	} {
		var got strings.Builder
		err := decodePubSub(tc.p, func(shard bool, ch, m []byte) {
			if shard {
				got.WriteString("s:")
			}
			fmt.Fprintf(&got, "%s=%s|", ch, m)
		})
		if err != nil {
			if tc.want != "error" || got.Len() > 0 {
				t.Errorf("%s: error %v after delivering %q, want %q", tc.name, err, got.String(), tc.want)
			}
			continue
		}
		if got.String() != tc.want {
			t.Errorf("%s: delivered %q, want %q", tc.name, got.String(), tc.want)
		}
	}
}

// pubSubSink listens on loopback and serves each connection past its
// preamble with ServePubSub, handing the messages to deliver.
func pubSubSink(t testing.TB, deliver func(shard bool, ch, m []byte)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				var pre [preambleLen]byte
				if _, err := c.Read(pre[:]); err != nil {
					c.Close()
					return
				}
				ServePubSub(c, 1<<20, deliver)
			}()
		}
	}()
	return ln.Addr().String()
}

// TestLinkQueueBounded: a link whose peer cannot be reached holds at most
// a frame's worth of messages and drops (and counts) the rest; a message
// larger than a frame is dropped. Once the peer listens, what the link
// holds arrives.
func TestLinkQueueBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nobody listens: the link dials in vain
	var mu sync.Mutex
	target := addr
	l := NewLink(func() Peer {
		mu.Lock()
		defer mu.Unlock()
		return Peer{ID: "p", Addr: target, Timeout: time.Second, Cluster: command.ClusterID{}}
	}, 64<<10)
	defer l.Close()
	if l.Send(false, []byte("big"), make([]byte, 64<<10)) {
		t.Fatal("a message larger than a frame was queued")
	}
	payload := make([]byte, 1000)
	kept := 0
	for range 10_000 {
		if l.Send(false, []byte("c"), payload) {
			kept++
		}
	}
	if kept == 0 || kept*1005 > 64<<10 { // 1005: a message's bytes in the frame
		t.Fatalf("%d messages of 1000 bytes queued for an unreachable peer, want 1 to what a frame of 64 KiB holds", kept)
	}
	if d := l.Dropped.Load(); d != int64(10_000-kept+1) {
		t.Fatalf("dropped %d, want %d", d, 10_000-kept+1)
	}
	var got sync.WaitGroup
	got.Add(kept)
	sink := pubSubSink(t, func(bool, []byte, []byte) { got.Done() })
	mu.Lock()
	target = sink
	mu.Unlock()
	l.Send(false, []byte("c"), nil)
	got.Add(1)
	done := make(chan struct{})
	go func() { got.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the queued messages never arrived (sent %d)", l.Sent.Load())
	}
}

// FuzzDecodePubSub: any payload a peer sends is decoded without a panic;
// a refused one delivers nothing, and what a good one delivers, encoded
// again as a Link encodes it, decodes to the same messages.
func FuzzDecodePubSub(f *testing.F) {
	f.Add([]byte{1, 0, 2, 'c', 'h', 1, 'm'})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0x7f})
	f.Fuzz(func(t *testing.T, p []byte) {
		var got []string
		var queue []byte
		err := decodePubSub(p, func(shard bool, ch, m []byte) {
			got = append(got, fmt.Sprintf("%v %q %q", shard, ch, m))
			queue = appendMessage(queue, shard, ch, m)
		})
		if err != nil {
			if len(got) != 0 {
				t.Fatalf("a refused frame delivered %d messages", len(got))
			}
			return
		}
		var again []string
		if err := decodePubSub(append(binary.AppendUvarint(nil, uint64(len(got))), queue...), func(shard bool, ch, m []byte) {
			again = append(again, fmt.Sprintf("%v %q %q", shard, ch, m))
		}); err != nil || strings.Join(again, "|") != strings.Join(got, "|") {
			t.Fatalf("re-encoded: %q, %v; want %q", again, err, got)
		}
	})
}
