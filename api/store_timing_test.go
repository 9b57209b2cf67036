package api

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/valyala/fasthttp"

	"github.com/idemgate/idemgate/fsm"
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
		noop := fsm.NoopCommand(make([]byte, 64)).Encode(nil)
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
				res, err := ac.c.Stores[client%3].ApplyKV(context.Background(), fsm.KVSetCommand(fsm.KVSetRequest{Key: []byte(k), Value: []byte("v"), Mode: fsm.SetNX}))
				if err == nil && res.Code != fsm.CodeCreated {
					err = fmt.Errorf("SETNX %s: %v", k, res.Err())
				}
				return err
			}},
			{"http-setnx", func(client int) error {
				req, resp := fasthttp.AcquireRequest(), fasthttp.AcquireResponse()
				defer fasthttp.ReleaseRequest(req)
				defer fasthttp.ReleaseResponse(resp)
				req.SetRequestURI(fmt.Sprintf("%s/v1/kv/h-%d?nx=1", ac.urls[client%3], seq.Add(1)))
				req.Header.SetMethod("PUT")
				req.SetBodyString("v")
				if err := clientsFor[client%3].Do(req, resp); err != nil {
					return err
				}
				if resp.StatusCode() != 201 {
					return fmt.Errorf("status %d: %s", resp.StatusCode(), resp.Body())
				}
				return nil
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
