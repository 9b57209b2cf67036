package raftstore

import (
	"encoding/binary"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/command"
)

// psRecorder is what a node is handed of its peers' messages.
type psRecorder struct {
	mu  sync.Mutex
	got []string // "s:" for a shard channel's, then channel=message
}

func (r *psRecorder) add(shard bool, channel, message []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p := ""
	if shard {
		p = "s:"
	}
	r.got = append(r.got, p+string(channel)+"="+string(message))
}

func (r *psRecorder) all() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.got...)
}

// waitFor waits (bounded) until ok holds of what r got.
func (r *psRecorder) waitFor(t *testing.T, what string, ok func([]string) bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); !ok(r.all()); {
		if time.Now().After(deadline) {
			got := r.all()
			t.Fatalf("%s: never (got %d messages, last %q)", what, len(got), got[max(len(got)-3, 0):])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// warmUp broadcasts from node from until every recorder got one message:
// the links exist once the members are known.
func warmUp(t *testing.T, c *TestCluster, from int, recs map[int]*psRecorder) {
	t.Helper()
	for i := 0; ; i++ {
		done := true
		for _, r := range recs {
			if len(r.all()) == 0 {
				done = false
			}
		}
		if done {
			return
		}
		if i == 400 {
			t.Fatal("no message reached the peers after 400 tries")
		}
		c.Store(from).Broadcast(false, []byte("warm"), []byte(fmt.Sprint(i)))
		time.Sleep(25 * time.Millisecond)
	}
}

// countPrefix is how many of got begin with p.
func countPrefix(got []string, p string) int {
	n := 0
	for _, g := range got {
		if strings.HasPrefix(g, p) {
			n++
		}
	}
	return n
}

// TestPubSubFanout: what node 0 broadcasts reaches nodes 1 and 2, every
// message once and in order, shard flag included, and node 0 is handed
// none of its own. Then node 1's inbound link is closed again and again
// mid-stream: node 0 dials it again, nothing is handed twice, and messages
// flow after it.
func TestPubSubFanout(t *testing.T) {
	c := StartTestCluster(t, 3, nil)
	recs := map[int]*psRecorder{}
	for i := range 3 {
		recs[i] = &psRecorder{}
		c.Store(i).OnBroadcast(recs[i].add)
	}
	warmUp(t, c, 0, map[int]*psRecorder{1: recs[1], 2: recs[2]})
	const n = 1000
	for i := range n {
		c.Store(0).Broadcast(i%2 == 1, []byte("ch"), []byte(fmt.Sprint(i)))
	}
	for _, peer := range []int{1, 2} {
		recs[peer].waitFor(t, fmt.Sprintf("node %d got %d messages", peer, n), func(g []string) bool {
			return countPrefix(g, "ch=")+countPrefix(g, "s:ch=") >= n
		})
		var seq []string
		for _, g := range recs[peer].all() {
			if !strings.HasPrefix(g, "warm=") {
				seq = append(seq, g)
			}
		}
		for i, g := range seq {
			want := fmt.Sprintf("ch=%d", i)
			if i%2 == 1 {
				want = "s:" + want
			}
			if g != want {
				t.Fatalf("node %d's message %d = %q, want %q", peer, i, g, want)
			}
		}
	}
	if got := recs[0].all(); len(got) != 0 {
		t.Fatalf("node 0 was handed its own messages: %d", len(got))
	}

	// Mid-stream drops: each round sends until node 1 got one of the
	// round's messages over its new link, then drops that link.
	const rounds = 5
	sent := 0
	for round := range rounds {
		prefix := fmt.Sprintf("drop=%d-", round)
		for i := 0; countPrefix(recs[1].all(), prefix) == 0; i++ {
			if i == 400 {
				t.Fatalf("round %d: node 1 got nothing over a new link", round)
			}
			for j := range 50 {
				c.Store(0).Broadcast(false, []byte("drop"), []byte(fmt.Sprintf("%d-%d-%d", round, i, j)))
				sent++
			}
			time.Sleep(10 * time.Millisecond)
		}
		if c.Store(1).fan.dropInbound() == 0 {
			t.Fatalf("round %d: node 1 has no inbound link to drop", round)
		}
	}
	for i := 0; countPrefix(recs[1].all(), "after=") == 0; i++ {
		if i == 400 {
			t.Fatal("node 1 got nothing after its link was dropped")
		}
		c.Store(0).Broadcast(false, []byte("after"), []byte(fmt.Sprint(i)))
		time.Sleep(25 * time.Millisecond)
	}
	seen := map[string]bool{}
	for _, g := range recs[1].all() {
		if strings.HasPrefix(g, "drop=") {
			if seen[g] {
				t.Fatalf("%q handed twice: at most once", g)
			}
			seen[g] = true
		}
	}
	c.Store(0).fan.mu.Lock()
	dials := c.Store(0).fan.links[c.Cfgs[1].NodeID].Dials.Load()
	c.Store(0).fan.mu.Unlock()
	_, dropped := c.Store(0).pubSubCounts()
	t.Logf("node 1 got %d of %d messages sent around %d drops; node 0 dialled it %d times, counted %d lost", len(seen), sent, rounds, dials, dropped)
	if dials < rounds+1 {
		t.Fatalf("node 0 dialled node 1 %d times, want a new link after each of %d drops", dials, rounds)
	}
	// Node 2's link was never dropped: it got every message.
	recs[2].waitFor(t, "node 2 got every drop= message", func(g []string) bool { return countPrefix(g, "drop=") == sent })

	// idemgate_pubsub_messages_total counts, per peer, what was written
	// and what was lost.
	reg := prometheus.NewRegistry()
	if err := c.Store(0).Register(reg); err != nil {
		t.Fatal(err)
	}
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	metric := map[string]float64{}
	for _, f := range fams {
		if f.GetName() == "idemgate_pubsub_messages_total" {
			for _, m := range f.GetMetric() {
				metric[m.GetLabel()[0].GetValue()] = m.GetCounter().GetValue()
			}
		}
	}
	sentTotal, droppedTotal := c.Store(0).pubSubCounts()
	if metric["dropped"] != float64(droppedTotal) || metric["dropped"] < 1 || metric["sent"] < float64(n+sent) {
		t.Fatalf("idemgate_pubsub_messages_total = %v, want dropped %d (at least one: the drops) and sent at least %d", metric, droppedTotal, n+sent)
	}
	t.Logf("idemgate_pubsub_messages_total %v (sent %d)", metric, sentTotal)
}

// pubSubWire is a Pub/Sub frame as an outsider writes it: preamble
// (protocol 'P', a zero cluster id), then one frame of one message.
func pubSubWire(channel, message string) []byte {
	b := append([]byte{'P'}, make([]byte, len(command.ClusterID{}))...)
	payload := binary.AppendUvarint(nil, 1)
	payload = append(payload, 0)
	payload = binary.AppendUvarint(payload, uint64(len(channel)))
	payload = append(payload, channel...)
	payload = binary.AppendUvarint(payload, uint64(len(message)))
	payload = append(payload, message...)
	b = append(b, 'B')
	b = binary.BigEndian.AppendUint64(b, 0)
	b = binary.BigEndian.AppendUint32(b, uint32(len(payload)))
	return append(b, payload...)
}

// TestPubSubRefusesOutsiders: on a cluster of mutual TLS, a Pub/Sub link
// in plaintext, and one with a certificate of the cluster's CA for a node
// that is no member, are closed and hand nothing to the listener; a
// member's messages still arrive.
func TestPubSubRefusesOutsiders(t *testing.T) {
	c, dir := startTLSCluster(t)
	c.WaitLeader(10 * time.Second)
	rec := &psRecorder{}
	c.Store(0).OnBroadcast(rec.add)
	target := c.Cfgs[0].RaftBind

	plain, err := net.Dial("tcp", target)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	plain.Write(pubSubWire("evil", "plaintext"))
	if !closedConn(plain) {
		t.Error("a plaintext Pub/Sub link stayed open")
	}

	before := testutil.ToFloat64(c.Store(0).members.rejected.WithLabelValues("not_member"))
	attacker := loadSource(t, dir, dir, "n9").PeerClient("", nil)
	attacker.VerifyConnection = nil
	conn, err := dialProtoRaw(target, attacker)
	if err == nil {
		defer conn.Close()
		conn.SetDeadline(time.Now().Add(5 * time.Second))
		conn.Write(pubSubWire("evil", "not a member"))
		if !closedConn(conn) {
			t.Error("a non-member's Pub/Sub link stayed open")
		}
	}
	for deadline := time.Now().Add(5 * time.Second); testutil.ToFloat64(c.Store(0).members.rejected.WithLabelValues("not_member")) <= before; {
		if time.Now().After(deadline) {
			t.Fatal("the non-member's link was not counted as not_member")
		}
		time.Sleep(10 * time.Millisecond)
	}

	warmUp(t, c, 1, map[int]*psRecorder{0: rec})
	for _, g := range rec.all() {
		if strings.HasPrefix(g, "evil=") {
			t.Fatalf("an outsider's message was handed to the listener: %q", g)
		}
	}
}

// closedConn reports whether the other side closed c (within 20 s).
func closedConn(c net.Conn) bool {
	c.SetReadDeadline(time.Now().Add(20 * time.Second))
	var b [1]byte
	_, err := c.Read(b[:])
	ne, ok := err.(net.Error)
	return err != nil && !(ok && ne.Timeout())
}
