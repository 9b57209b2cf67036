package raftstore

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/hashicorp/raft"
)

// TestClosePipelinesFreesAStalledSend: the stall hashicorp/raft's
// shutdown can meet. A peer that answers nothing fills the pipeline's
// queue of requests in flight, and the next send waits for the pipeline to
// close; raft's replication goroutine would wait so for ever, and its
// shutdown with it. closePipelines frees the send, and a pipeline closed
// by raft itself leaves the set.
func TestClosePipelinesFreesAStalledSend(t *testing.T) {
	// The peer: a transport whose requests nobody consumes.
	peer, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 3, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	gt := &guardedTransport{NetworkTransport: client}

	// A pipeline raft closes itself is forgotten.
	p, err := gt.AppendEntriesPipeline("peer", peer.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	if n := len(gt.pipes); n != 0 {
		t.Fatalf("%d pipelines kept after raft closed its one", n)
	}

	p, err = gt.AppendEntriesPipeline("peer", peer.LocalAddr())
	if err != nil {
		t.Fatal(err)
	}
	sent := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			args := &raft.AppendEntriesRequest{RPCHeader: raft.RPCHeader{ID: []byte("leader"), Addr: []byte(client.LocalAddr())}, Term: 1, PrevLogEntry: uint64(i)}
			if _, err := p.AppendEntries(args, &raft.AppendEntriesResponse{}); err != nil {
				sent <- err
				return
			}
		}
	}()
	// The sends stop when the queue is full (raft's rpcMaxPipeline, 128):
	// the sender then waits, as raft's replication goroutine did.
	select {
	case err := <-sent:
		t.Fatalf("a send to a peer that answers nothing returned %v before the queue filled", err)
	case <-time.After(500 * time.Millisecond):
	}
	gt.closePipelines()
	// Without it this receive waits for ever (the test's timeout fails it).
	if err := <-sent; !errors.Is(err, raft.ErrPipelineShutdown) {
		t.Logf("the stalled send returned %v", err)
	}
	if n := len(gt.pipes); n != 0 {
		t.Fatalf("%d pipelines kept after closePipelines", n)
	}
}
