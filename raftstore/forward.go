package raftstore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// Forwarding (the transport package has the protocol): what a request
// forwarded to this node does, and this node's connections to the leader.

// wireErrors are the errors that keep their identity across the forwarding
// hop, by status or by code (errors.Is works on the follower for the
// leader's sentinel). Append to Coded only: codes are part of the wire
// format.
var wireErrors = transport.Errors{
	NotLeader: storeapi.ErrNotLeader,
	Retry:     errRetry,
	Shutdown:  storeapi.ErrShutdown,
	NotSent:   errNotSent,
	Coded: []error{
		0:  nil, // any other error: its message only
		1:  storeapi.ErrUnknownNode,
		2:  storeapi.ErrUnreachableNode,
		3:  storeapi.ErrDiskFull,
		4:  storeapi.ErrTooLarge,
		5:  storeapi.ErrClockJump,
		6:  command.ErrBadCommand,
		7:  storeapi.ErrMembership,
		8:  storeapi.ErrQuorumAtRisk,
		9:  storeapi.ErrNotCaughtUp,
		10: errNoScriptRunner,
	},
}

// serveForward runs on the leader side of one forwarding connection, once
// the store has started; Close closes it and waits for it.
func (s *Store) serveForward(conn net.Conn) { s.serveInbound(conn, s.fwdServer.Serve) }

// serveInbound runs serve on a peer's connection (forwarding, Pub/Sub) once
// the store has started; Close closes it and waits for serve to return.
func (s *Store) serveInbound(conn net.Conn, serve func(net.Conn)) {
	select {
	case <-s.started:
	case <-s.closing:
		conn.Close()
		return
	}
	// Counted and tracked under connMu, where Close closes the tracked
	// connections before it waits for the count: a connection that comes
	// after sees closing, so no Add races Close's Wait (the race detector
	// caught one in a demo's leader kill) and none is left open.
	s.connMu.Lock()
	select {
	case <-s.closing:
		s.connMu.Unlock()
		conn.Close()
		return
	default:
	}
	s.fwdConns.Add(1)
	s.inbound[conn] = struct{}{}
	s.connMu.Unlock()
	defer s.fwdConns.Done()
	defer s.untrackConn(conn)
	serve(conn)
}

// forwarded is the store as the Handler of forwarded requests.
type forwarded struct{ s *Store }

// HandleApply is Handle(Apply, payload) for an apply whose follower sent
// its span's trace context: the commit here is a span of this node's
// tracer, that span's child (none when this node does not trace).
func (f forwarded) HandleApply(payload []byte, tc transport.TraceContext) transport.Pending {
	span := f.s.forwardedSpan(tc)
	if span == nil {
		return f.Handle(transport.Apply, payload)
	}
	p := f.Handle(transport.Apply, payload)
	wait := p.Wait
	p.Wait = func() ([]byte, error) {
		b, err := wait()
		endSpan(span, err)
		return b, err
	}
	return p
}

// Handle starts one forwarded request and returns its answer to come; an
// apply's is ready once its batch is applied here. Applies are handed to
// Raft at once, so the requests of one connection are batched together by
// Raft.
func (f forwarded) Handle(kind transport.Kind, payload []byte) transport.Pending {
	s := f.s
	switch kind {
	case transport.Apply:
		wait, ready, err := s.proposeLocal(payload)
		if err != nil {
			return transport.Answer(func() ([]byte, error) { return nil, err })
		}
		return transport.Pending{Ready: ready, Wait: func() ([]byte, error) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			res, err := wait(ctx)
			if errors.Is(err, storeapi.ErrTimeout) || errors.Is(err, storeapi.ErrShutdown) {
				err = fmt.Errorf("%w: %v", errRetry, err) // fate unknown: the follower retries
			}
			if err != nil {
				return nil, err
			}
			return res.Encode(nil), nil
		}}
	case transport.ReadIndex:
		known, told := knownCommit(payload)
		return transport.Answer(func() ([]byte, error) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			idx, err := s.leaderReadIndex(ctx)
			if err != nil {
				return nil, err
			}
			last := s.raft.LastIndex()
			idx = s.lastStateEntry(idx)
			if told && known < idx {
				s.nudge.ask(last) // the follower would wait for Raft's next tick
			}
			return binary.BigEndian.AppendUint64(nil, idx), nil
		})
	case transport.Grants:
		cursor := append([]byte(nil), payload...)
		return transport.Answer(func() ([]byte, error) { return s.grants.wait(cursor, grantsHold, s.closing), nil })
	case transport.LeaderKV:
		return transport.Answer(func() ([]byte, error) { return s.serveLeaderKV(payload) })
	case transport.LeaderScript:
		return transport.Answer(func() ([]byte, error) { return s.runLeaderScript(payload) })
	case transport.Clock:
		now := s.stampNow()
		return transport.Answer(func() ([]byte, error) { return binary.BigEndian.AppendUint64(nil, uint64(now)), nil })
	case transport.Status:
		st := s.statusAnswer()
		return transport.Answer(func() ([]byte, error) { return st, nil })
	case transport.Peers:
		return transport.Answer(func() ([]byte, error) { return s.peersAnswer(), nil })
	case transport.AddVoter, transport.Remove, transport.Promote:
		return transport.Answer(func() ([]byte, error) {
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.ApplyTimeout)
			defer cancel()
			return nil, s.changeMembershipLocal(ctx, kind, payload)
		})
	}
	return transport.Answer(func() ([]byte, error) { return nil, fmt.Errorf("unknown request kind %q", kind) })
}

// forward sends a request to the leader and maps its answer to an error.
func (s *Store) forward(ctx context.Context, leaderID, leaderAddr string, kind transport.Kind, payload []byte) ([]byte, error) {
	wait, err := s.forwardSend(ctx, leaderID, leaderAddr, kind, payload)
	if err != nil {
		return nil, err
	}
	return wait(ctx)
}

// forwardSend queues a request to the leader on its connection and returns
// the wait for its answer, mapped to an error as forward's: requests sent
// one after another reach the leader in that order (ApplyInOrder).
func (s *Store) forwardSend(ctx context.Context, leaderID, leaderAddr string, kind transport.Kind, payload []byte) (func(context.Context) ([]byte, error), error) {
	c, err := s.fwdClientFor(leaderID, leaderAddr)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: dial leader %s: %v", errRetry, errNotSent, leaderID, err)
	}
	if err := sendLeaderScript(c, kind); err != nil {
		return nil, err
	}
	return c.SendApplyTraced(ctx, kind, payload, wireTraceContext(ctx))
}

// maxFrame bounds a forwarding frame: the largest command, and room for
// the rest.
func (s *Store) maxFrame() uint32 { return uint32(s.cfg.MaxCommandBytes + transport.FrameOverhead) }

// peer is how to reach node id at addr (its address as the configuration
// gives it) within timeout.
func (s *Store) peer(id, addr string, timeout time.Duration) transport.Peer {
	return transport.Peer{ID: id, Addr: s.dialAddr(id, addr), TLS: s.peerClientTLS(id), Cluster: s.clusterID(), Timeout: timeout}
}

func (s *Store) fwdClientFor(id, addr string) (*transport.Client, error) {
	target := s.dialAddr(id, addr)
	s.fwdMu.Lock()
	defer s.fwdMu.Unlock()
	if s.fwdClosed {
		return nil, storeapi.ErrShutdown
	}
	if c := s.fwd[target]; c != nil && c.Alive() {
		return c, nil
	}
	// The leader's hello says whether it reads traced applies: asked
	// beside the dial, so a new connection waits for the slower of the
	// two, not for both. A hello that fails leaves the connection as the
	// first protocol's.
	hello := make(chan transport.Hello, 1)
	go func() {
		h, _ := s.askHello(id, addr)
		hello <- h
	}()
	c, err := transport.DialForward(s.peer(id, addr, s.cfg.DialTimeout), s.maxFrame(), &wireErrors)
	if err != nil {
		return nil, err
	}
	c.Learn(<-hello)
	s.fwd[target] = c
	return c, nil
}
