//go:build ignore

// load is run.sh's client: CLIENTS closed-loop clients of Go's net/http
// (kept alive, an idle connection each) sending to one node for DURATION:
//
//	go run load.go setnx|gw|pass BASE_URL CLIENTS DURATION
//
// setnx: PUT /v1/kv/{fresh key}?nx=1 (201); gw: POST /pay with a fresh
// Idempotency-Key and a body of its own (201); pass: POST /pay-direct.
// It prints "ops N errors N ops/s N [first error]".
package main

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	mode, base := os.Args[1], os.Args[2]
	clients, _ := strconv.Atoi(os.Args[3])
	dur, _ := time.ParseDuration(os.Args[4])
	tag := strconv.FormatInt(time.Now().UnixNano(), 36)
	tr := &http.Transport{MaxIdleConnsPerHost: clients, MaxIdleConns: clients}
	cl := &http.Client{Transport: tr}
	var ops, errs atomic.Int64
	var firstErr atomic.Value
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func(c int) {
			defer wg.Done()
			for seq := 0; time.Now().Before(deadline); seq++ {
				var req *http.Request
				want := 201
				key := fmt.Sprintf("%s-%d-%d", tag, c, seq)
				switch mode {
				case "setnx":
					req, _ = http.NewRequest("PUT", base+"/v1/kv/"+key+"?nx=1", bytes.NewReader([]byte("v")))
				case "gw":
					req, _ = http.NewRequest("POST", base+"/pay", bytes.NewReader([]byte(`{"amount":1,"order":"`+key+`"}`)))
					req.Header.Set("Idempotency-Key", key)
					req.Header.Set("Content-Type", "application/json")
				case "pass":
					req, _ = http.NewRequest("POST", base+"/pay-direct", bytes.NewReader([]byte(`{"amount":1}`)))
				}
				resp, err := cl.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					if resp.StatusCode != want {
						err = fmt.Errorf("status %d", resp.StatusCode)
					}
				}
				if err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
					continue
				}
				ops.Add(1)
			}
		}(c)
	}
	wg.Wait()
	fe, _ := firstErr.Load().(string)
	fmt.Printf("ops %d errors %d ops/s %.0f %s\n", ops.Load(), errs.Load(), float64(ops.Load())/dur.Seconds(), fe)
}
