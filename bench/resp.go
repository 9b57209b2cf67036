package bench

import (
	"encoding/csv"
	"errors"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The resp scenario: redis-benchmark itself, the tool every Redis user
// knows, against idemgate's Redis-protocol listener and against a
// redis-server with every write fsynced, in the same run, with the same
// arguments. It measures what a Redis client sees: SET and GET
// (redis-benchmark -t set,get), and the idempotency claim
// SET key:__rand_int__ v NX PX 60000 over a wide key range (a fresh key
// nearly every time: each one a write), each at -P 1 and -P 16; and the
// collections' writes, HSET and ZADD, at -P 1.

// RespRuns are the redis-benchmark runs of the scenario: a label, the
// pipeline depth, and the arguments after the common ones.
var RespRuns = []struct {
	Label    string
	Pipeline int
	Args     []string
}{
	{"SET", 1, []string{"-t", "set"}},
	{"GET", 1, []string{"-t", "get"}},
	{"SET NX PX", 1, []string{"-r", "100000000", "SET", "key:__rand_int__", "v", "NX", "PX", "60000"}},
	{"SET", 16, []string{"-t", "set"}},
	{"GET", 16, []string{"-t", "get"}},
	{"SET NX PX", 16, []string{"-r", "100000000", "SET", "key:__rand_int__", "v", "NX", "PX", "60000"}},
	// A hash's and a sorted set's write: a field of one hash of 100,000,
	// a member of one sorted set of 100,000 at a random score.
	{"HSET", 1, []string{"-r", "100000", "-t", "hset"}},
	{"ZADD", 1, []string{"-r", "100000", "ZADD", "myzset", "__rand_int__", "element:__rand_int__"}},
	// A stream's append, trimmed near 100,000 entries as a queue's is.
	{"XADD", 1, []string{"-r", "100000", "XADD", "mystream", "MAXLEN", "~", "100000", "*", "f", "__rand_int__"}},
}

// FindRedisBenchmark is redis-benchmark on PATH, or why there is none.
func FindRedisBenchmark() (string, string) {
	if p, err := exec.LookPath("redis-benchmark"); err == nil {
		return p, ""
	}
	return "", "redis-benchmark is not on PATH (apt-get install redis-tools)"
}

// Addr is the server's address, host:port.
func (r *Redis) Addr() string { return r.addr }

// RespBench runs RespRuns with redis-benchmark (bin) against the Redis
// protocol at addr (host:port on loopback), as system. Requests per run:
// cfg.Requests, or 50000 at -P 1 and 200000 at -P 16.
func RespBench(bin, system, addr string, cfg RunConfig) []Stats {
	var out []Stats
	clients := cfg.Clients
	if clients <= 0 {
		clients = 64
	}
	for _, run := range RespRuns {
		name := fmt.Sprintf("resp %s -P %d", run.Label, run.Pipeline)
		if system != "idemgate" {
			name = fmt.Sprintf("%s resp %s -P %d (baseline)", system, run.Label, run.Pipeline)
		}
		if !isLoopbackURL(addr) {
			out = append(out, Stats{Name: name, Skipped: addr + " is not a loopback address"})
			continue
		}
		n := cfg.Requests
		if n <= 0 {
			n = 50000
			if run.Pipeline > 1 {
				n = 200000
			}
		}
		host, port, _ := strings.Cut(addr, ":")
		args := append([]string{"-h", host, "-p", port, "-c", strconv.Itoa(clients), "-n", strconv.FormatInt(n, 10),
			"-P", strconv.Itoa(run.Pipeline), "--csv"}, run.Args...)
		if cfg.Progress != nil {
			fmt.Fprintf(cfg.Progress, "bench: redis-benchmark %s (%s)\n", strings.Join(args, " "), system)
		}
		st := Stats{Name: name, Clients: clients, Baseline: system != "idemgate", System: system, Scenario: "resp", Ops: n}
		start := time.Now()
		raw, err := exec.Command(bin, args...).Output()
		st.Elapsed = time.Since(start)
		var exit *exec.ExitError
		if errors.As(err, &exit) && len(exit.Stderr) > 0 {
			// What redis-benchmark said, not only that it failed (Output
			// keeps the end of its stderr).
			err = fmt.Errorf("%w: %s", err, strings.TrimSpace(string(exit.Stderr)))
		}
		if err == nil {
			err = parseRedisBenchmarkCSV(raw, &st)
		}
		if err != nil {
			st.Errors, st.FirstError = 1, err.Error()
		}
		out = append(out, st)
	}
	return out
}

// parseRedisBenchmarkCSV reads redis-benchmark --csv: a header, then a
// row of "test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms",
// "p95_latency_ms","p99_latency_ms","max_latency_ms".
func parseRedisBenchmarkCSV(raw []byte, st *Stats) error {
	rows, err := csv.NewReader(strings.NewReader(string(raw))).ReadAll()
	if err != nil || len(rows) < 2 || len(rows[1]) < 8 {
		return fmt.Errorf("bench: redis-benchmark printed no result: %q", raw)
	}
	num := func(i int) float64 {
		v, _ := strconv.ParseFloat(rows[1][i], 64)
		return v
	}
	ms := func(i int) time.Duration { return time.Duration(num(i) * float64(time.Millisecond)) }
	st.OpsPerSec, st.P50, st.P99, st.Max = num(1), ms(4), ms(6), ms(7) // its p95 has no field
	if st.OpsPerSec <= 0 {
		return fmt.Errorf("bench: redis-benchmark measured nothing: %q", raw)
	}
	return nil
}
