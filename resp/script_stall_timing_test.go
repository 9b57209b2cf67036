package resp

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"
	"github.com/redis/go-redis/v9"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/fsm"
)

// How long a write script holds up the apply loop (benchmarks, not timed
// tests). A script runs outside the state machine, reading keys one short
// read transaction at a time, and holds nothing the apply loop or another
// writer waits on while it runs, however long its time limit lets it run.
// What reaches the apply loop is its effects, one log entry, which every
// node applies in one bbolt transaction: their cost grows with the keys
// they carry, faster than linearly, hence MaxScriptKeys.
//
//	go test -run '^$' -bench 'BenchmarkScriptEffects' -benchtime 3x ./resp/

// BenchmarkScriptEffectsApply: the state machine's own apply of one
// script's effects (n fresh keys written), on a data file alone: the time
// raft's apply loop is held. ns/op is one apply.
func BenchmarkScriptEffectsApply(b *testing.B) {
	f, err := fsm.Open(fsm.Config{Path: filepath.Join(b.TempDir(), "fsm.db"), NoSync: true, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	index := uint64(0)
	for _, n := range []int{1, 1000, DefaultMaxScriptKeys, 10_000, 50_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			for round := range b.N {
				b.StopTimer()
				sb := fsm.NewSandbox(time.Now().UnixNano(), func(key []byte) (command.KVEntry, bool, error) {
					e, err := f.KV(key, time.Now())
					if errors.Is(err, command.ErrNotFound) {
						return e, false, nil
					}
					return e, err == nil, err
				}, nil)
				for i := range n {
					if _, err := sb.Apply(command.KVSetCommand(command.KVSetRequest{Key: fmt.Appendf(nil, "apply:%d:%d:%d", n, round, i), Value: []byte("12345678")})); err != nil {
						b.Fatal(err)
					}
				}
				index++
				log := &raft.Log{Index: index, Term: 1, Type: raft.LogCommand, Data: sb.Effects().Encode(nil)}
				b.StartTimer()
				if r, ok := f.Apply(log).(*command.Result); !ok || r.Code != command.CodeOK {
					b.Fatalf("%d keys: %v", n, r)
				}
			}
		})
	}
}

// BenchmarkScriptEffectsStall: scripts that write n keys each, on the
// leader of a 3-node cluster, while a writer on another connection sets
// one key after another; it reports the writer's longest wait (max-write-ms)
// beside its longest with no script (n=0). ns/op is one script.
func BenchmarkScriptEffectsStall(b *testing.B) {
	tc := startCluster(b, nil)
	leader := tc.rc.WaitLeader(5 * time.Second)
	w := redis.NewClient(&redis.Options{Addr: tc.addrs[leader], MaxRetries: -1, ReadTimeout: 10 * time.Second})
	s := redis.NewClient(&redis.Options{Addr: tc.addrs[leader], MaxRetries: -1, ReadTimeout: 10 * time.Second})
	b.Cleanup(func() { w.Close(); s.Close() })
	body := "for i = 1, tonumber(ARGV[1]) do redis.call('set', KEYS[1] .. i, ARGV[2]) end return 1"
	for _, n := range []int{0, 1000, DefaultMaxScriptKeys} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var worst time.Duration
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 1_000_000; i++ {
					select {
					case <-stop:
						return
					default:
					}
					start := time.Now()
					if err := w.Set(context.Background(), "stall:probe", i, 0).Err(); err != nil {
						b.Errorf("a write beside the scripts: %v", err)
						return
					}
					worst = max(worst, time.Since(start))
				}
			}()
			for i := range b.N {
				if n == 0 {
					time.Sleep(time.Second)
					continue
				}
				if err := s.Eval(context.Background(), body, []string{fmt.Sprintf("stall:%d:%d:", n, i)}, n, strings.Repeat("v", 8)).Err(); err != nil {
					b.Fatal(err)
				}
			}
			close(stop)
			wg.Wait()
			b.ReportMetric(float64(worst.Microseconds())/1000, "max-write-ms")
		})
	}
}
