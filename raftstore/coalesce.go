package raftstore

import (
	"context"
	"fmt"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/storeapi"
)

// Group commit. Every Raft log entry costs hashicorp/raft the same whatever
// it holds (a future, channel hand-offs, msgpack, a log-store key, its share
// of every AppendEntries), and every round of commits costs the leader's
// and the followers' fsyncs. So the leader packs the commands that queue
// while its previous batch is being committed into one entry
// (fsm.EncodeBatch), local callers and forwarded ones alike, and they share
// both. Nothing waits for a batch to fill: a command that
// finds no batch in flight is proposed at once, alone; only under load,
// while a batch commits, do commands gather. The state machine applies a
// batch's commands in order, each with its own request id, stamp and
// revision, and the coalescer hands each caller its own result.

// Config.MaxBatchesInFlight is how many batches may be between raft.Apply
// and their answer at once; maxBatchesInFlight bounds it (hashicorp/raft
// keeps at most 128 AppendEntries in flight per follower, and every slot
// is a goroutine waiting). One is pure group commit: while a batch
// commits, everything proposed meanwhile gathers into the next. More lets
// the leader write the next batch while the previous one replicates, but
// the batches are smaller: more log entries, more fsyncs and more CPU per
// command. On two shared cores that cost more than the overlap saved
// (docs/experiments/2026-12-01-batches-in-flight.md,
// BenchmarkBatchesInFlight), so 1 is the default.
// Raft acknowledges each batch only once a quorum has stored it, however
// many are in flight (TestOverlappingBatchWaitsForQuorum).
const maxBatchesInFlight = 64

// proposal is one command waiting for its result.
type proposal struct {
	data     []byte
	start    time.Time
	answered time.Time     // when done was closed
	done     chan struct{} // closed once res or err is set
	res      *command.Result
	err      error
}

type coalescer struct {
	s        *Store
	queue    chan *proposal
	slots    chan struct{}
	maxCmds  int
	maxBytes int
}

func newCoalescer(s *Store) *coalescer {
	return &coalescer{s: s, queue: make(chan *proposal, 4096), slots: make(chan struct{}, s.cfg.MaxBatchesInFlight),
		maxCmds: s.cfg.MaxBatchCommands, maxBytes: s.cfg.MaxBatchBytes}
}

// enqueue hands a stamped command to the coalescer and returns the wait
// for its result, and a channel closed once the wait returns at once.
func (c *coalescer) enqueue(data []byte) (func(context.Context) (*command.Result, error), <-chan struct{}, error) {
	p := &proposal{data: data, start: time.Now(), done: make(chan struct{})}
	if c.maxCmds == 1 {
		c.propose([]*proposal{p}, false) // no group commit: one entry per command, as many in flight as come
	} else {
		select {
		case c.queue <- p:
		case <-c.s.closing:
			return nil, nil, storeapi.ErrShutdown
		}
	}
	return func(ctx context.Context) (*command.Result, error) {
		select {
		case <-p.done:
			measureSince(stageWake, p.answered)
			return p.res, p.err
		case <-c.s.closing:
			return nil, storeapi.ErrShutdown
		case <-ctx.Done():
			// Its fate is unknown: the caller retries with the same
			// request id, which the state machine applies once.
			return nil, fmt.Errorf("%w: %v", storeapi.ErrTimeout, ctx.Err())
		}
	}, p.done, nil
}

// run proposes batches until ctx ends.
func (c *coalescer) run(ctx context.Context) {
	if c.maxCmds == 1 {
		return // enqueue proposes each command itself
	}
	var carry *proposal // did not fit the previous batch
	buf := make([]*proposal, 0, c.maxCmds)
	for {
		select {
		case c.slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		first := carry
		carry = nil
		if first == nil {
			select {
			case first = <-c.queue:
			case <-ctx.Done():
				return
			}
		}
		batch, size := append(buf[:0], first), len(first.data)
	drain:
		for len(batch) < c.maxCmds {
			select {
			case p := <-c.queue:
				if size+len(p.data) > c.maxBytes {
					carry = p
					break drain
				}
				batch, size = append(batch, p), size+len(p.data)
			default:
				break drain
			}
		}
		c.propose(append([]*proposal(nil), batch...), true)
	}
}

// propose hands one batch to Raft; its results are dispatched when Raft
// answers, which frees its slot (if it holds one).
func (c *coalescer) propose(batch []*proposal, slot bool) {
	data := batch[0].data
	if len(batch) > 1 {
		cmds := make([][]byte, len(batch))
		for i, p := range batch {
			cmds[i] = p.data
		}
		data = fsm.EncodeBatch(cmds)
	}
	proposed := time.Now()
	for _, p := range batch {
		measureSince(stageQueued, p.start)
	}
	f := c.s.raft.Apply(data, c.s.cfg.ApplyTimeout)
	go func() {
		err := mapRaftErr(f.Error())
		measureSince(stageRaft, proposed)
		if slot {
			<-c.slots
		}
		var results fsm.Results
		if err == nil {
			switch r := f.Response().(type) {
			case *command.Result:
				results = fsm.Results{r}
			case fsm.Results:
				results = r
			}
			if len(results) != len(batch) {
				err = fmt.Errorf("raftstore: state machine answered %T for a batch of %d", f.Response(), len(batch))
			}
		}
		now := time.Now()
		for i, p := range batch {
			if err != nil {
				p.err = err
			} else {
				p.res = results[i]
				c.s.metrics.applyDuration.Observe(now.Sub(p.start).Seconds())
			}
			p.answered = now
			close(p.done)
		}
		c.s.metrics.batchSize.Observe(float64(len(batch)))
	}()
}
