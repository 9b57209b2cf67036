package raftstore

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// cutForwarding closes this node's forwarding connections, failing every
// forwarded call in flight: their fate is unknown to the caller.
func (s *Store) cutForwarding() int {
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	n := 0
	for _, c := range s.fwd {
		if c.Alive() {
			c.Close()
			n++
		}
	}
	return n
}

// TestForwardedRetryAppliesOnce: SETNX on fresh keys through a follower
// while its connections to the leader are cut again and again. A cut call
// is retried with the same request id; had any retry applied twice, its
// caller would see "exists" for a key it created itself.
func TestForwardedRetryAppliesOnce(t *testing.T) {
	if err := forwardedRetries(t); err != nil {
		t.Fatal(err)
	}
}

// forwardedRetries runs the writes through a follower while its forwarding
// connections are cut, and reports the first double apply.
func forwardedRetries(t *testing.T) error {
	c := StartTestCluster(t, 3, nil)
	leader := c.WaitLeader(5 * time.Second)
	follower := c.Stores[(leader+1)%3]
	ctx := ctxT(t, 60*time.Second)

	// Writers run until at least minCuts connections were cut under them
	// (and at least 640 writes), bounded by the context.
	const minCuts = 20
	var cuts atomic.Int64
	stop := make(chan struct{})
	var cutter sync.WaitGroup
	cutter.Add(1)
	go func() {
		defer cutter.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(time.Duration(5+rand.IntN(35)) * time.Millisecond):
				cuts.Add(int64(follower.cutForwarding()))
			}
		}
	}()
	var wg sync.WaitGroup
	var writes atomic.Int64
	errs := make(chan error, 16)
	for w := 0; w < 16; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && (i < 40 || cuts.Load() < minCuts); i++ {
				k := []byte(fmt.Sprintf("w%d-%d", w, i))
				res, err := follower.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: k, Value: []byte("v"), Mode: command.SetNX}))
				if err != nil {
					errs <- fmt.Errorf("%s: %v", k, err)
					return
				}
				if res.Code != command.CodeCreated {
					errs <- fmt.Errorf("%s: first SETNX answered %v: a retry was applied twice", k, res.Err())
					return
				}
				writes.Add(1)
			}
		}(w)
	}
	wg.Wait()
	close(stop)
	cutter.Wait()
	close(errs)
	for err := range errs {
		return err
	}
	if cuts.Load() < minCuts {
		t.Fatalf("only %d connections were cut: the test did not exercise retries", cuts.Load())
	}
	t.Logf("%d SETNX through a follower, %d forwarding connections cut, each applied once", writes.Load(), cuts.Load())
	c.WaitConverged(10 * time.Second)
	return nil
}

// errorHandler answers each forwarded request with the error its payload's
// first byte indexes.
type errorHandler []error

func (h errorHandler) Handle(_ transport.Kind, payload []byte) transport.Pending {
	err := h[payload[0]]
	return transport.Answer(func() ([]byte, error) { return nil, err })
}

// TestWireErrorsKeepTheirIdentity: every error a leader sends back by code
// is the same sentinel on the follower, message and all; an error without
// a code keeps its message; not-leader, retry and shutdown come back as the
// store's own. Over a real forwarding connection with this store's table.
func TestWireErrorsKeepTheirIdentity(t *testing.T) {
	type tc struct {
		sent, want error
		text       string // "" : the sent error's
	}
	var cases []tc
	for code, known := range wireErrors.Coded {
		if known != nil {
			cases = append(cases, tc{sent: fmt.Errorf("%w: detail %d", known, code), want: known})
		}
	}
	if len(cases) < 9 {
		t.Fatalf("only %d coded errors: the table lost some", len(cases))
	}
	cases = append(cases, tc{sent: errors.New("something else")},
		tc{sent: storeapi.ErrNotLeader, want: storeapi.ErrNotLeader},
		tc{sent: fmt.Errorf("%w: lost", errRetry), want: errRetry, text: "retry: leader n1: retry: lost"},
		tc{sent: storeapi.ErrShutdown, want: errNotSent, text: "retry: not sent: leader n1 is shutting down"})
	var sent errorHandler
	for _, c := range cases {
		sent = append(sent, c.sent)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	srv := &transport.Server{Handler: sent, MaxFrame: 1 << 20, Errors: &wireErrors, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		if _, err := io.ReadFull(conn, make([]byte, 1+len(command.ClusterID{}))); err != nil { // the preamble: the mux's part
			conn.Close()
			return
		}
		srv.Serve(conn)
	}()
	client, err := transport.DialForward(transport.Peer{ID: "n1", Addr: ln.Addr().String(), Timeout: 5 * time.Second}, 1<<20, &wireErrors)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ctx := ctxT(t, 30*time.Second)
	for i, c := range cases {
		_, got := client.Call(ctx, transport.Apply, []byte{byte(i)})
		text := c.text
		if text == "" {
			text = c.sent.Error()
		}
		if got == nil || got.Error() != text || (c.want != nil && !errors.Is(got, c.want)) {
			t.Errorf("%v came back as %v, want %q (is %v)", c.sent, got, text, c.want)
		}
	}
}
