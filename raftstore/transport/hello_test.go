package transport

import (
	"encoding/binary"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
)

// TestHello: an answer comes back whole; one that names another node, is
// over the limit, is not JSON or never comes is an error naming the node
// asked.
func TestHello(t *testing.T) {
	id := command.ClusterID{1, 2, 3}
	want := Hello{Node: "n1", State: HelloMember, Cluster: id.String(), Leader: "n2", Term: 7,
		Voters: []HelloPeer{{"n1", "10.0.0.1:7000"}, {"n2", "10.0.0.2:7000"}}, Nonvoters: []HelloPeer{{"n3", "10.0.0.3:7000"}},
		Removed: []HelloGone{{ID: "n4", Fingerprints: []string{"ab"}}}}
	answer := want
	ok := true
	_, addr, _ := startMux(t, newTestGate(), func(c *Config) { c.Hello = func() (Hello, bool) { return answer, ok } })
	ask := func() (Hello, error) { return AskHello(Peer{ID: "n1", Addr: addr, Timeout: 5 * time.Second}) }
	h, err := ask()
	if err != nil || h.VoterSet() != "[n1@10.0.0.1:7000 n2@10.0.0.2:7000]" || !h.Votes() || h.ClusterID() != id ||
		h.Term != 7 || len(h.Nonvoters) != 1 || h.Removed[0].Fingerprints[0] != "ab" {
		t.Fatalf("hello = %+v, %v", h, err)
	}
	if !h.Has(FeatureTracedApply) || h.Has("something-later") {
		t.Errorf("hello features = %q, want this transport's (%q)", h.Features, FeatureTracedApply)
	}
	answer.Node = "n9"
	if _, err := ask(); err == nil || !strings.Contains(err.Error(), `hello from n1: it says it is "n9"`) {
		t.Fatalf("a hello naming another node: %v", err)
	}
	ok = false
	if _, err := ask(); err == nil || !strings.Contains(err.Error(), "hello from n1") {
		t.Fatalf("no hello (closing): %v", err)
	}

	// A peer that lies: a huge length, bytes that are not JSON, silence.
	for _, tc := range []struct {
		name   string
		answer []byte
		want   string
	}{
		{"huge", binary.BigEndian.AppendUint32(nil, 1<<31), "over 1048576"},
		{"not JSON", append(binary.BigEndian.AppendUint32(nil, 3), "{x}"...), "invalid character"},
		{"short", append(binary.BigEndian.AppendUint32(nil, 30), "{}"...), "unexpected EOF"},
		{"silent", nil, "timeout"},
	} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
			io.ReadFull(c, make([]byte, preambleLen))
			c.Write(tc.answer)
			if tc.answer == nil {
				c.Read(make([]byte, 1)) // until the asker gives up
			}
		}()
		_, err = AskHello(Peer{ID: "n1", Addr: ln.Addr().String(), Timeout: 200 * time.Millisecond})
		ln.Close()
		if err == nil || !strings.Contains(err.Error(), "hello from n1") || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error with %q", tc.name, err, tc.want)
		}
	}
}
