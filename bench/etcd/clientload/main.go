// Command clientload is the bench's SETNX load on etcd through etcd's own
// Go client (go.etcd.io/etcd/client/v3, gRPC), as etcd users write it: a
// transaction that puts a fresh key only if its create revision is 0. It
// lives beside the etcd server's wrapper, in the module that already holds
// the client, so idemgate's go.mod stays lean; `idemgate bench` builds it
// once and runs it against the etcd cluster it starts. It prints one JSON
// line: operations, seconds, errors, latency quantiles in milliseconds.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

type result struct {
	Ops     int64   `json:"ops"`
	Seconds float64 `json:"seconds"`
	Errors  int64   `json:"errors"`
	Refused int64   `json:"refused"` // a SETNX of a fresh key that did not succeed: a fault
	P50     float64 `json:"p50_ms"`
	P90     float64 `json:"p90_ms"`
	P99     float64 `json:"p99_ms"`
	Max     float64 `json:"max_ms"`
	First   string  `json:"first_error,omitempty"`
}

func main() {
	endpoints := flag.String("endpoints", "", "etcd client URLs, comma-separated")
	clients := flag.Int("clients", 64, "concurrent clients, one request in flight each")
	duration := flag.Duration("duration", 5*time.Second, "bound on the run")
	requests := flag.Int64("requests", 0, "bound on the operations (0: none)")
	prefix := flag.String("prefix", "clientload", "key prefix")
	flag.Parse()
	if *endpoints == "" || *clients < 1 || *duration <= 0 {
		fmt.Fprintln(os.Stderr, "clientload: want -endpoints URLS, -clients >= 1, -duration > 0")
		os.Exit(2)
	}
	eps := strings.Split(*endpoints, ",")
	// One client per member, the goroutines spread over them, as the
	// bench's other etcd rows spread their requests.
	var clis []*clientv3.Client
	for _, ep := range eps {
		c, err := clientv3.New(clientv3.Config{Endpoints: []string{ep}, DialTimeout: 5 * time.Second})
		if err != nil {
			fmt.Fprintln(os.Stderr, "clientload:", err)
			os.Exit(1)
		}
		defer c.Close()
		clis = append(clis, c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var seq, errs, refused atomic.Int64
	var firstErr atomic.Value
	lat := make([][]time.Duration, *clients)
	var wg sync.WaitGroup
	start := time.Now()
	for c := range *clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cli := clis[c%len(clis)]
			for ctx.Err() == nil {
				n := seq.Add(1)
				if *requests > 0 && n > *requests {
					return
				}
				key := fmt.Sprintf("%s-%d", *prefix, n)
				t0 := time.Now()
				resp, err := cli.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, "v")).Commit()
				switch {
				case err != nil && ctx.Err() != nil:
					return // the run's end, not a failure
				case err != nil:
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				case !resp.Succeeded:
					refused.Add(1)
				}
				lat[c] = append(lat[c], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	all := slices.Concat(lat...)
	slices.Sort(all)
	q := func(p float64) float64 {
		if len(all) == 0 {
			return 0
		}
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / 1e6
	}
	r := result{Ops: int64(len(all)), Seconds: elapsed.Seconds(), Errors: errs.Load(), Refused: refused.Load(),
		P50: q(0.50), P90: q(0.90), P99: q(0.99), Max: q(1)}
	if s, ok := firstErr.Load().(string); ok {
		r.First = s
	}
	json.NewEncoder(os.Stdout).Encode(r)
}
