package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/bench"
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/internal/testsupport"
	"github.com/idemgate/idemgate/raftstore"
)

// BenchmarkClusterSETNX measures, in one run on 3-node loopback clusters:
// raw raft.Apply of a 64-byte no-op on the leader (the engine's baseline,
// one log entry per operation), SETNX through the Store's Go API and SETNX
// through the HTTP API (with fasthttp's client, and with Go's net/http
// client as most users run it), each at 1, 16 and 64 concurrent clients, with the
// leader's group commit on (batch=256, the default) and off (batch=1: one
// entry per command). Store and HTTP clients are spread over
// all three nodes, so two thirds of their writes are forwarded to the
// leader.
//
//	go test -run XXX -bench ClusterSETNX -benchtime 4000x ./gateway
func BenchmarkClusterSETNX(b *testing.B) {
	for _, batch := range []int{256, 1} {
		ac := startAPIClusterWith(b, 3, func(c *raftstore.Config) { c.MaxBatchCommands = batch }, nil)
		leader := ac.c.WaitLeader(5 * time.Second)
		r := ac.c.Stores[leader].Raft()
		noop := command.NoopCommand(make([]byte, 64)).Encode(nil)
		for i := 0; i < 500; i++ { // warm the engine: the baseline runs first
			r.Apply(append([]byte(nil), noop...), 0).Error()
		}
		clientsFor := make([]*fasthttp.HostClient, 3)
		for i, u := range ac.urls {
			clientsFor[i] = &fasthttp.HostClient{Addr: strings.TrimPrefix(u, "http://"), MaxConns: 128}
		}
		// Go's standard client, as most users run it: keep-alive, enough
		// idle connections per node for every client.
		std := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128, MaxConnsPerHost: 128}}
		var seq atomic.Uint64
		ops := []struct {
			name string
			op   func(client int) error
		}{
			{"raft-apply", func(int) error {
				return r.Apply(append([]byte(nil), noop...), 0).Error()
			}},
			{"store-setnx", func(client int) error {
				k := fmt.Sprintf("s-%d", seq.Add(1))
				res, err := ac.c.Stores[client%3].ApplyKV(context.Background(), command.KVSetCommand(command.KVSetRequest{Key: []byte(k), Value: []byte("v"), Mode: command.SetNX}))
				if err == nil && res.Code != command.CodeCreated {
					err = fmt.Errorf("SETNX %s: %v", k, res.Err())
				}
				return err
			}},
			{"http-setnx", func(client int) error {
				return putNX(clientsFor[client%3], fmt.Sprintf("%s/v1/kv/h-%d?nx=1", ac.urls[client%3], seq.Add(1)), 0)
			}},
			{"nethttp-setnx", func(client int) error {
				req, err := http.NewRequest("PUT", fmt.Sprintf("%s/v1/kv/n-%d?nx=1", ac.urls[client%3], seq.Add(1)), strings.NewReader("v"))
				if err != nil {
					return err
				}
				resp, err := std.Do(req)
				if err != nil {
					return err
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 201 {
					return fmt.Errorf("status %d", resp.StatusCode)
				}
				return nil
			}},
		}
		for _, o := range ops {
			if o.name == "raft-apply" && batch == 1 {
				continue // the same engine call either way
			}
			for _, clients := range []int{1, 16, 64} {
				b.Run(fmt.Sprintf("%s/batch=%d/clients=%d", o.name, batch, clients), func(b *testing.B) {
					testsupport.RunClients(b, clients, o.op)
				})
			}
		}
		ac.c.Close()
	}
}

// putNX is one SETNX over the HTTP API with fasthttp's client, which must
// answer 201. A 503 (an election on a loaded machine) is retried up to
// retries times: nx on a fresh key creates it once, so a retry's 409 says
// an earlier attempt did.
func putNX(hc *fasthttp.HostClient, url string, retries int) error {
	req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
	defer fasthttp.ReleaseRequest(req)
	defer fasthttp.ReleaseResponse(resp)
	req.SetRequestURI(url)
	req.Header.SetMethod("PUT")
	req.SetBodyString("v")
	for try := 0; ; try++ {
		if err := hc.Do(req, resp); err != nil {
			return err
		}
		if resp.StatusCode() == 201 || (try > 0 && resp.StatusCode() == 409) {
			return nil
		}
		if resp.StatusCode() != 503 || try >= retries {
			return fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// BenchmarkBatchesInFlight is the A/B of the coalescer's batches in flight
// (raftstore.Config.MaxBatchesInFlight): SETNX over the HTTP API at 64
// clients spread over a 3-node loopback cluster, with 1 (the default), 2
// and 4 batches in flight, each on a fresh cluster, measured by the write
// budget of idemgate bench --breakdown (bench.MeasureBudget: the stage
// timers, CPU, fsyncs when perf can count them, commands per entry),
// printed per run. Three rounds, each running the three settings one after
// the other, so a noisy machine's swings fall on all of them alike:
// compare medians.
//
//	go test -run XXX -bench BatchesInFlight -benchtime 1x ./api
func BenchmarkBatchesInFlight(b *testing.B) {
	for round := 1; round <= 3; round++ {
		for _, inflight := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("round=%d/inflight=%d/clients=64", round, inflight), func(b *testing.B) {
				benchInFlight(b, inflight)
			})
		}
	}
}

// benchInFlight is one run of BenchmarkBatchesInFlight, on a fresh
// cluster with inflight batches in flight.
func benchInFlight(b *testing.B, inflight int) {
	ac := startAPIClusterWith(b, 3, func(c *raftstore.Config) { c.MaxBatchesInFlight = inflight }, nil)
	defer ac.c.Close()
	ac.c.WaitLeader(5 * time.Second)
	clients := make([]*fasthttp.HostClient, 3)
	for i, u := range ac.urls {
		clients[i] = &fasthttp.HostClient{Addr: strings.TrimPrefix(u, "http://"), MaxConns: 128}
	}
	op := func(c int, seq int64) error {
		return putNX(clients[c%3], fmt.Sprintf("%s/v1/kv/f-%d?nx=1", ac.urls[c%3], seq), 50)
	}
	for i := 0; i < 500; i++ { // warm up: connections, the log's first pages
		if err := op(i, -int64(i)-1); err != nil {
			b.Fatal(err)
		}
	}
	b.ResetTimer()
	budget := bench.MeasureBudget(fmt.Sprintf("SETNX over HTTP, %d in flight", inflight),
		bench.RunConfig{Clients: 64, Duration: 4 * time.Second}, op)
	b.StopTimer()
	if budget.Err != "" || budget.Errors > 0 {
		b.Fatalf("%d errors: %s", budget.Errors, budget.Err)
	}
	bench.PrintBudgets(os.Stdout, []bench.Budget{budget})
	b.ReportMetric(budget.OpsPerSec, "ops/s")
	b.ReportMetric(float64(budget.P99)/float64(time.Millisecond), "p99-ms")
	b.ReportMetric(budget.CommandsPerRaftEntry, "cmds/entry")
	b.ReportMetric(float64(budget.CPUPerOp)/float64(time.Microsecond), "cpu-µs/op")
	b.ReportMetric(budget.FsyncsPerOp, "fsyncs/op")
	for _, s := range budget.Stages {
		switch s.Stage {
		case "wait for the batch in flight (group commit)":
			b.ReportMetric(float64(s.Mean)/float64(time.Microsecond), "queued-µs")
		case "  leader log write + fsync":
			b.ReportMetric(float64(s.Mean)/float64(time.Microsecond), "leaderlog-µs")
		}
	}
}
