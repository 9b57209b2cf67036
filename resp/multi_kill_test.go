package resp

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestMultiAtomicAcrossLeaderKill: six go-redis clients, two per node, run
// MULTI / INCR a / INCR b / GET a / GET b / EXEC while the leader (its
// listener and its store) is killed midway. A transaction applies whole or
// not at all: every EXEC that answered saw a == b, the survivors end with
// a == b and the same state, and a lies between the EXECs acknowledged and
// those plus the ones whose reply never came.
func TestMultiAtomicAcrossLeaderKill(t *testing.T) {
	if problem := atomicHistory(t); problem != "" {
		t.Fatal(problem)
	}
}

// atomicHistory runs the clients of TestMultiAtomicAcrossLeaderKill and
// says what broke atomicity ("" when nothing did).
func atomicHistory(t *testing.T) string {
	tc := startCluster(t, nil)
	ctx := ctxT(t, 180*time.Second)
	leader := tc.rc.WaitLeader(5 * time.Second)
	var (
		acked, unknown, done atomic.Int64
		stop                 = make(chan struct{})
		wg                   sync.WaitGroup
		mu                   sync.Mutex
		torn                 []string
	)
	const killAt, total = 150, 400
	for id := 0; id < 6; id++ {
		node := id % 3
		c := client(t, tc.addrs[node], func(o *redis.Options) { o.PoolSize = 1; o.ReadTimeout = 8 * time.Second })
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				var ga, gb *redis.StringCmd
				_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
					p.Incr(ctx, "atom:a")
					p.Incr(ctx, "atom:b")
					ga, gb = p.Get(ctx, "atom:a"), p.Get(ctx, "atom:b")
					return nil
				})
				done.Add(1)
				if err == nil {
					acked.Add(1)
					if ga.Val() != gb.Val() {
						mu.Lock()
						torn = append(torn, fmt.Sprintf("a=%s b=%s", ga.Val(), gb.Val()))
						mu.Unlock()
					}
					continue
				}
				unknown.Add(1) // CLUSTERDOWN says nothing was done; counted as unknown all the same
				if node == leader {
					return // its node is gone
				}
				time.Sleep(200 * time.Millisecond)
			}
		}()
	}
	testsupport.WaitFor(t, "transactions before the kill", 60*time.Second, func() bool { return done.Load() >= killAt })
	tc.srv[leader].Close()
	tc.rc.Stop(leader)
	testsupport.WaitFor(t, "transactions after the kill", 120*time.Second, func() bool { return done.Load() >= total })
	close(stop)
	wg.Wait()
	tc.rc.WaitConverged(30 * time.Second)
	if len(torn) > 0 {
		return fmt.Sprintf("transactions saw a half-applied state: %v", torn)
	}
	for i := range tc.addrs {
		if i == leader {
			continue
		}
		c := client(t, tc.addrs[i])
		vals, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Get(ctx, "atom:a")
			p.Get(ctx, "atom:b")
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		a, _ := vals[0].(*redis.StringCmd).Int64()
		b, _ := vals[1].(*redis.StringCmd).Int64()
		t.Logf("node %d: a=%d b=%d; %d acknowledged, %d without an answer", i, a, b, acked.Load(), unknown.Load())
		if a != b || a < acked.Load() || a > acked.Load()+unknown.Load() {
			return fmt.Sprintf("node %d: a=%d b=%d after %d acknowledged and %d unanswered transactions", i, a, b, acked.Load(), unknown.Load())
		}
	}
	return ""
}

// TestMultiTooLarge: on a follower of a 3-node cluster, a transaction
// larger than the store takes in one command is refused whole and applies
// nothing; values EXEC answers past the reply budget are refused one by
// one (a GETDEL past it is not applied), and those within it come back
// through forwarding whole.
func TestMultiTooLarge(t *testing.T) {
	if raceDetector {
		// Values of megabytes under the race detector, which checks every
		// byte of every copy, outlast the store's and clients' timeouts
		// on a loaded 2-core machine (CI lost leaders and timed out here);
		// .ci/run runs this test without it.
		t.Skip("megabyte values under the race detector outlast the timeouts; run without -race")
	}
	tc := startCluster(t, func(c *Config) { c.MaxTxBytes = 64 << 20 })
	leader := tc.rc.WaitLeader(5 * time.Second)
	c := dialRaw(t, tc.addrs[(leader+1)%3])
	big := strings.Repeat("v", 3<<20)
	set := func(k string) string { return array("SET", k, big) }
	c.send("MULTI\r\n" + set("big:a") + set("big:b") + set("big:c") + "EXEC\r\nEXISTS big:a big:b big:c\r\n")
	got := c.replies(6)
	if !strings.HasPrefix(got[4], "-EXECABORT Transaction discarded because of: the transaction is too large for the store (command too large: ") ||
		got[5] != ":0\r\n" {
		t.Fatalf("EXEC of a transaction over the store's limit: %q, then EXISTS %q", got[4], got[5])
	}
	c.send(set("big:a") + "MULTI\r\nGET big:a\r\nGET big:a\r\nGETDEL big:a\r\nEXISTS big:a\r\nEXEC\r\n")
	got = c.replies(7)
	tooLarge := "-ERR the transaction's replies are over the bytes they may carry\r\n"
	if want := "*4\r\n$" + fmt.Sprint(len(big)) + "\r\n" + big + "\r\n" + tooLarge + tooLarge + ":1\r\n"; got[6] != want {
		t.Fatalf("EXEC past the reply budget = %.200q…", got[6])
	}

	// The most keys a connection may watch, in one WATCH: unchanged, EXEC
	// applies; one of them written by another connection, it does not.
	watch := []string{"WATCH"}
	for i := 0; i < DefaultConfig().MaxWatches; i++ {
		watch = append(watch, fmt.Sprintf("many:%d", i))
	}
	other := dialRaw(t, tc.addrs[leader])
	for _, change := range []bool{false, true} {
		c.send(array(watch...))
		c.expect("WATCH", []string{"+OK\r\n"})
		if change {
			other.send("SET many:9999 x\r\n")
			other.expect("SET", []string{"+OK\r\n"})
		}
		c.send("MULTI\r\nINCR many:n\r\nEXEC\r\n")
		want := "*1\r\n:1\r\n"
		if change {
			want = "*-1\r\n"
		}
		c.expect("EXEC", []string{"+OK\r\n", "+QUEUED\r\n", want})
	}
}
