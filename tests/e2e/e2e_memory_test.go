package e2e

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The memory load: rounds of first requests through the gateways of a
// 3-node cluster, each answered by the upstream with answerBytes, which the
// records keep.
const (
	memoryRounds      = 2
	memoryRoundSize   = 32000
	memoryClients     = 64
	memoryAnswerBytes = 8 << 10
	// memoryUnsettled is how many requests may stay unsettled after their
	// retries (1%) before the load stops and the test fails: leader
	// changes on a loaded machine leave a few in flight for their
	// processing timeout, which is the cluster's business, not the
	// measurement's.
	memoryUnsettled = memoryRounds * memoryRoundSize / 100
	// memoryBound is the anonymous memory a node may hold under that load
	// with the default memory limit.
	memoryBound = 320 << 20
)

// memorySetting is one way to run the nodes: the environment they get.
type memorySetting struct {
	name string
	env  []string
}

var (
	memoryDefault = memorySetting{"GOGC=400 + memory_limit (the default)", nil}
	memoryCompare = []memorySetting{
		{"GOGC=400 alone", []string{"GOMEMLIMIT=off"}},
		memoryDefault,
		{"GOGC=100 alone (Go's default)", []string{"GOGC=100", "GOMEMLIMIT=off"}},
	}
)

// TestMemoryBoundedByDefault runs real `idemgate serve` processes as
// shipped under 2 x 32,000 gateway first requests with 8 KiB upstream
// answers, sampling each node's anonymous memory (RssAnon: heap, stacks,
// buffers; the mmapped data files are file-backed), and holds its peak
// under memoryBound. With IDEMGATE_MEMORY=compare it runs the same load,
// one cluster after another, at GOGC=400 without a limit and at Go's
// default pace too, and prints the three peaks side by side:
//
//	IDEMGATE_MEMORY=compare go test -count=1 -run TestMemoryBoundedByDefault -v -timeout 20m ./tests/e2e/
func TestMemoryBoundedByDefault(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes under 64,000 requests")
	}
	settings := []memorySetting{memoryDefault}
	if os.Getenv("IDEMGATE_MEMORY") == "compare" {
		settings = memoryCompare
	}
	bin := idemgateBinary(t)
	up := startAnswerUpstream(t, memoryAnswerBytes)
	var report strings.Builder
	fmt.Fprintf(&report, "%d x %d gateway first requests, %d clients, %d KiB answers; peak RssAnon per node:\n",
		memoryRounds, memoryRoundSize, memoryClients, memoryAnswerBytes>>10)
	for _, s := range settings {
		peaks, cpu, gcs, took := memoryLoad(t, bin, up, s)
		fmt.Fprintf(&report, "  %-40s", s.name)
		var worst, gcSum int64
		var cpuSum float64
		for _, id := range []string{"n1", "n2", "n3"} {
			fmt.Fprintf(&report, "  %s %5.1f MiB", id, float64(peaks[id])/(1<<20))
			worst = max(worst, peaks[id])
			cpuSum, gcSum = cpuSum+cpu[id], gcSum+gcs[id]
		}
		fmt.Fprintf(&report, "  (load %s; the three nodes: %d collections, CPU %.0f s)\n", took.Round(time.Second), gcSum, cpuSum)
		if s.env == nil && worst > memoryBound {
			t.Errorf("%s: a node's anonymous memory peaked at %.1f MiB, over %d MiB", s.name, float64(worst)/(1<<20), memoryBound>>20)
		}
	}
	t.Log(report.String())
}

// startAnswerUpstream serves POSTs with a body of n bytes until the test
// ends.
func startAnswerUpstream(t *testing.T, n int) string {
	body := bytes.Repeat([]byte("x"), n)
	srv := &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/octet-stream")
		w.WriteHeader(201)
		w.Write(body)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String()
}

// memoryLoad starts a cluster with s's environment, runs the load through
// its gateways while sampling every node's RssAnon, stops it, and returns
// each node's peak, the CPU seconds each used and the collections it ran
// from its start to the load's end, and how long the load took.
func memoryLoad(t *testing.T, bin, upstream string, s memorySetting) (peaks map[string]int64, cpu map[string]float64, gcs map[string]int64, took time.Duration) {
	t.Helper()
	dir := t.TempDir()
	c := writeCluster(t, dir, upstream, "routes: [{name: pay, methods: [POST], path: /pay}]\n")
	nodes := map[string]*e2eNode{}
	for _, id := range c.ids {
		nodes[id] = startNodeEnv(t, bin, c.path, id, c.apis[id], s.env, "--bootstrap")
	}
	waitClusterReady(t, c, c.ids)

	var mu sync.Mutex
	peaks, cpu, gcs = map[string]int64{}, map[string]float64{}, map[string]int64{}
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for {
			for id, n := range nodes {
				if anon, err := rssAnon(n.cmd.Process.Pid); err == nil {
					mu.Lock()
					peaks[id] = max(peaks[id], anon)
					mu.Unlock()
				}
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()

	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: memoryClients}}
	defer client.CloseIdleConnections()
	start := time.Now()
	var failed atomic.Int64
	var firstErr atomic.Value
	for round := range memoryRounds {
		var next atomic.Int64
		var wg sync.WaitGroup
		for w := range memoryClients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				gw := c.gws[c.ids[w%len(c.ids)]]
				for {
					i := next.Add(1)
					if i > memoryRoundSize || failed.Load() > memoryUnsettled {
						return
					}
					key := fmt.Sprintf("mem-%d-%d", round, i)
					err := firstRequest(client, "http://"+gw+"/pay", key)
					if err != nil {
						failed.Add(1)
						firstErr.CompareAndSwap(nil, err)
					}
				}
			}()
		}
		wg.Wait()
	}
	took = time.Since(start)
	close(stop)
	<-sampled
	if n := failed.Load(); n > memoryUnsettled {
		t.Fatalf("%s: %d requests failed; the first: %v", s.name, n, firstErr.Load())
	} else if n > 0 {
		t.Logf("%s: %d requests unsettled after their retries; the first: %v", s.name, n, firstErr.Load())
	}
	for id, n := range nodes {
		cpu[id], _ = cpuSeconds(n.cmd.Process.Pid)
		gcs[id] = gcCycles(c.apis[id])
		n.cmd.Process.Kill()
		n.cmd.Wait()
	}
	return peaks, cpu, gcs, took
}

// firstRequest sends a first request under key, and again under the same
// key while the cluster answers 503 (a leader change on a loaded machine;
// the key makes the retry safe), at most 50 times.
func firstRequest(client *http.Client, url, key string) error {
	var err error
	for range 50 {
		var req *http.Request
		req, err = http.NewRequest("POST", url, strings.NewReader(`{"amount":100,"order":"`+key+`"}`))
		if err != nil {
			return err
		}
		req.Header.Set("Idempotency-Key", key)
		req.Header.Set("Content-Type", "application/json")
		var resp *http.Response
		if resp, err = client.Do(req); err != nil {
			return err
		}
		n, _ := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		switch {
		case resp.StatusCode == 201 && n == memoryAnswerBytes:
			return nil
		case resp.StatusCode == 503 || resp.StatusCode == 409: // no leader yet; the first try still in flight
			err = fmt.Errorf("%s: %d after 50 tries", url, resp.StatusCode)
			time.Sleep(100 * time.Millisecond)
		default:
			return fmt.Errorf("%s: %d with %d bytes", url, resp.StatusCode, n)
		}
	}
	return err
}

// startNodeEnv is startNode with the collector's settings of the test's
// environment (GOGC, GOMEMLIMIT) replaced by env's.
func startNodeEnv(t *testing.T, bin, cfgPath, id, api string, env []string, extra ...string) *e2eNode {
	t.Helper()
	cmd := serveCmd(bin, cfgPath, id, extra...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "GOGC=") && !strings.HasPrefix(kv, "GOMEMLIMIT=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	return startCmd(t, &e2eNode{id: id, api: api, cmd: cmd})
}

// gcCycles is the collections a node has run, from its metrics
// (go_gc_duration_seconds_count); -1 if it cannot be read.
func gcCycles(api string) int64 {
	code, _, body, err := httpDo("GET", "http://"+api+"/metrics", "")
	if err != nil || code != 200 {
		return -1
	}
	for line := range strings.Lines(body) {
		if v, ok := strings.CutPrefix(line, "go_gc_duration_seconds_count "); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

// cpuSeconds is the user and system CPU time of process pid, from
// /proc/PID/stat (in USER_HZ ticks, 100 a second on Linux).
func cpuSeconds(pid int) (float64, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The fields after the command name, which is in parentheses: state
	// is the first, utime the 12th, stime the 13th.
	i := strings.LastIndex(string(raw), ") ")
	f := strings.Fields(string(raw[i+1:]))
	if i < 0 || len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	u, err1 := strconv.ParseInt(f[11], 10, 64)
	s, err2 := strconv.ParseInt(f[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return float64(u+s) / 100, nil
}

// rssAnon is /proc/PID/status's RssAnon in bytes.
func rssAnon(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "RssAnon:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("/proc/%d/status: no RssAnon", pid)
}
