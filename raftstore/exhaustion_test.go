package raftstore

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/raftstore/transport"
	"github.com/idemgate/idemgate/storeapi"
)

// The flood helper: when the test binary runs with IDEMGATE_FLOOD_TARGET
// set, it is the attacker process of TestIdleConnectionFlood (its file
// descriptors are its own, not the node's): it opens up to
// IDEMGATE_FLOOD_N connections from 127.0.0.2, says nothing on them, prints
// how many it opened, and holds them until its stdin closes.
func TestMain(m *testing.M) {
	if target := os.Getenv("IDEMGATE_FLOOD_TARGET"); target != "" {
		n, _ := strconv.Atoi(os.Getenv("IDEMGATE_FLOOD_N"))
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}
		var conns []net.Conn
		for i := 0; i < n; i++ {
			c, err := d.Dial("tcp", target)
			if err != nil {
				continue // out of descriptors, or a full backlog: keep going
			}
			conns = append(conns, c)
		}
		fmt.Println(len(conns))
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// TestIdleConnectionFlood: another process opens 20,000 connections to the
// leader's Raft port and says nothing. The node holds at most a few of them
// (16 per address still in their handshake), keeps serving writes, and a
// follower restarted meanwhile rejoins over new connections.
func TestIdleConnectionFlood(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 20,000 connections")
	}
	c, _ := startTLSCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "IDEMGATE_FLOOD_TARGET="+c.Cfgs[leader].RaftBind, "IDEMGATE_FLOOD_N=20000")
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("flood helper: %v", err)
	}
	opened, _ := strconv.Atoi(strings.TrimSpace(line))
	t.Logf("the attacker opened %d connections", opened)
	if opened < 15000 {
		t.Fatalf("the attacker opened only %d connections: the test proves little", opened)
	}
	// While they are held: writes through a follower (forwarding) and the
	// leader, and a follower restarted from its files.
	ctx := context.Background()
	follower := (leader + 1) % 3
	for i := 0; i < 20; i++ {
		s := c.Store([]int{leader, follower}[i%2])
		if _, err := s.ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte(fmt.Sprint("during-", i)), Value: []byte("v")})); err != nil {
			t.Fatalf("write %d during the flood: %v", i, err)
		}
	}
	other := (leader + 2) % 3
	c.Stop(other)
	c.Start(other)
	c.WaitConverged(20 * time.Second)
	refused := testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues("too_many_pending"))
	// The rest were let in 16 at a time and cut off by the handshake timeout.
	if refused < 0.95*float64(opened) {
		t.Fatalf("%v connections refused as too_many_pending, want nearly all of %d", refused, opened)
	}
	t.Logf("%v refused at once as too_many_pending", refused)
}

// TestForwardFrameLimits: even a member cannot make the leader buffer a
// frame over the command limit, or hold a frame open without sending it.
func TestForwardFrameLimits(t *testing.T) {
	c, dir := startTLSCluster(t)
	leader := c.WaitLeader(10 * time.Second)
	target := c.Cfgs[leader].RaftBind
	member := loadSource(t, dir, dir, c.Cfgs[(leader+1)%3].NodeID)
	open := func() net.Conn {
		conn, err := dialPeer(target, time.Second, wireForward, command.ClusterID{}, member.PeerClient("", nil))
		if err != nil {
			t.Fatal(err)
		}
		return conn
	}
	closedWithin := func(conn net.Conn, d time.Duration) bool {
		conn.SetReadDeadline(time.Now().Add(d))
		_, err := conn.Read(make([]byte, 1))
		ne, timeout := err.(net.Error)
		return err != nil && !(timeout && ne.Timeout())
	}
	// A frame of 1 GiB: closed at its header. (A frame stalled halfway is
	// the transport's own test.)
	conn := open()
	conn.Write(frameHeader(transport.Apply, 1<<30))
	if !closedWithin(conn, 2*time.Second) {
		t.Error("a 1 GiB frame header was not refused")
	}
	conn.Close()
	// Just over this node's limit (its largest command and the overhead):
	// closed too.
	conn = open()
	conn.Write(frameHeader(transport.Apply, uint32(c.Cfgs[leader].MaxCommandBytes+transport.FrameOverhead+1)))
	if !closedWithin(conn, 2*time.Second) {
		t.Error("a frame header just over the limit was not refused")
	}
	conn.Close()
	// A command over the limit is refused before it is proposed.
	big := make([]byte, c.Cfgs[leader].MaxCommandBytes)
	if _, err := c.Store(leader).ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte("big"), Value: big})); err == nil || !strings.Contains(err.Error(), storeapi.ErrTooLarge.Error()) {
		t.Errorf("a command over MaxCommandBytes = %v, want ErrTooLarge", err)
	}
	// The node still serves. On a loaded machine it may be between two
	// elections (503 at once, as a client sees): a client retries that.
	var err error
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err = c.Store(leader).ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte("after"), Value: []byte("v")}))
		if err == nil || !storeapi.Unavailable(err) || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Errorf("the leader stopped serving: %v", err)
	}
}

// pendingPerIP is the Raft port's cap of one address's connections still
// in their handshake, as docs/security.md gives it.
const pendingPerIP = 16

// TestManyHostsCannotStarveMembers: silent connections from more hosts than
// the shared cap allows fill it, yet the members (dialling from their own
// hosts) still make new connections: a restarted follower rejoins.
func TestManyHostsCannotStarveMembers(t *testing.T) {
	dir := t.TempDir()
	issueCerts(t, dir, "n1", "n2", "n3")
	c := StartTestCluster(t, 3, func(cfg *Config) {
		cfg.PeerTLS = loadSource(t, dir, dir, cfg.NodeID)
		cfg.MaxPeerConns = 32
	})
	leader := c.WaitLeader(10 * time.Second)
	var held []net.Conn
	defer func() {
		for _, h := range held {
			h.Close()
		}
	}()
	for host := 2; host <= 5; host++ { // 127.0.1.2-5: 4 hosts x 16 = 64 > 32
		d := net.Dialer{Timeout: time.Second, LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 1, byte(host))}}
		for i := 0; i < pendingPerIP; i++ {
			for _, cfg := range c.Cfgs {
				if conn, err := d.Dial("tcp", cfg.RaftBind); err == nil {
					held = append(held, conn)
				}
			}
		}
	}
	time.Sleep(100 * time.Millisecond)
	if got := testutil.ToFloat64(c.Store(leader).members.rejected.WithLabelValues("too_many_connections")); got == 0 {
		t.Fatal("the shared cap was never reached: the test proves nothing")
	}
	other := (leader + 1) % 3
	c.Stop(other)
	c.Start(other)
	// Well within the 5 s after which the silent connections are cut off
	// and their slots free again.
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	if _, err := c.Store(other).ApplyKV(ctx, command.KVSetCommand(command.KVSetRequest{Key: []byte("rejoined"), Value: []byte("v")})); err != nil {
		t.Fatalf("a write through the restarted follower: %v", err)
	}
	c.WaitConverged(10 * time.Second)
}
