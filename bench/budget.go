package bench

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	gometrics "github.com/hashicorp/go-metrics/compat"
)

// A write's budget: where the time of one write goes, stage by stage, and
// what it costs the machine. hashicorp/raft and raft-boltdb time their
// stages through go-metrics (the leader's log write, each AppendEntries, a
// follower's log write, the commit, the state machine's batch), and the
// store times the stages around them the same way (raftstore/stages.go);
// a Recorder is the in-memory sink that collects them while a workload
// runs against a cluster in this process. The cost figures come from the
// process: CPU from getrusage, bytes written from /proc/self/io, heap
// allocations from the runtime; the cluster's three nodes and the bench's
// own HTTP clients share the process, so CPU and allocations include the
// clients'.

// stageDef is one row of the budget: a go-metrics key and what one sample
// of it is.
type stageDef struct {
	key, stage, per string
}

// budgetStages are the rows, in a write's order. per says what a sample
// is: the mean is over samples, the samples per operation say how often.
var budgetStages = []stageDef{
	{"idemgate.store.apply", "store call, whole (Apply, or ApplyInOrder per command)", "store call"},
	{"idemgate.store.forward", "follower → leader round trip", "forwarded call"},
	{"idemgate.store.queued", "wait for the batch in flight (group commit)", "command"},
	{"idemgate.store.raft", "Raft: batch hand-off → answer", "batch"},
	{"raft.leader.dispatchLog", "  leader log write + fsync", "batch"},
	{"raft.replication.appendEntries.rpc", "  AppendEntries round trip", "follower × batch"},
	{"raft.rpc.appendEntries.storeLogs", "    follower log write + fsync", "follower × batch"},
	{"raft.commitTime", "  dispatch → commit (quorum)", "batch"},
	{"raft.fsm.enqueue", "  hand-off to the state machine", "batch × node"},
	{"raft.fsm.applyBatch", "  state machine apply (bbolt commit)", "batch × node"},
	{"idemgate.store.wake", "answer → caller running", "command"},
}

// StageStat is one stage of a budget.
type StageStat struct {
	Stage string        `json:"stage"`
	Per   string        `json:"per"`
	Count int64         `json:"count"`
	Mean  time.Duration `json:"mean_ns"`
	PerOp float64       `json:"per_op"`
}

// Budget is one workload's budget.
type Budget struct {
	Name      string        `json:"name"`
	Clients   int           `json:"clients"`
	Ops       int64         `json:"ops"`
	Errors    int64         `json:"errors"`
	OpsPerSec float64       `json:"ops_per_sec"`
	Mean      time.Duration `json:"client_mean_ns"`
	P99       time.Duration `json:"client_p99_ns"`
	// Outside is the client's mean less the store calls' time per
	// operation: accepting, parsing, validating and answering the
	// request, the loopback network, and for the gateway the upstream.
	Outside time.Duration `json:"outside_store_ns"`
	Stages  []StageStat   `json:"stages"`
	// Per operation, the whole process (three nodes and the clients).
	CPUPerOp    time.Duration `json:"cpu_per_op_ns"`
	AllocsPerOp float64       `json:"allocs_per_op"`
	BytesPerOp  float64       `json:"write_bytes_per_op"`
	// LogCommitsPerOp counts Raft log appends (the leader's and the
	// followers'), FSMCommitsPerOp fsm.db commits (every node's): bbolt
	// fdatasyncs twice per commit (pages, then meta) unless NoSync, the
	// wal log store once per append.
	LogCommitsPerOp float64 `json:"log_commits_per_op"`
	FSMCommitsPerOp float64 `json:"fsm_commits_per_op"`
	// FsyncsPerOp is fsync, fdatasync and sync_file_range calls per
	// operation, counted by perf's syscall tracepoints; -1 when they
	// could not be counted (no perf, or not allowed to).
	FsyncsPerOp          float64 `json:"fsyncs_per_op"`
	CommandsPerRaftEntry float64 `json:"commands_per_entry"`
	Err                  string  `json:"error,omitempty"`
}

// Recorder collects go-metrics samples in memory while it is installed.
type Recorder struct {
	sink *gometrics.InmemSink
}

// NewRecorder installs a fresh in-memory sink as go-metrics' global one
// (replacing any other) and returns it.
func NewRecorder() (*Recorder, error) {
	sink := gometrics.NewInmemSink(time.Hour, 2*time.Hour)
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	if _, err := gometrics.NewGlobal(cfg, sink); err != nil {
		return nil, err
	}
	return &Recorder{sink: sink}, nil
}

// Stop puts the discarding sink back.
func (r *Recorder) Stop() {
	cfg := gometrics.DefaultConfig("")
	cfg.EnableHostname, cfg.EnableRuntimeMetrics = false, false
	gometrics.NewGlobal(cfg, &gometrics.BlackholeSink{})
}

// sample sums the samples of key (labelled variants included; the
// variants raft names by peer in the key itself are not) over every
// interval: their count and their sum in milliseconds.
func (r *Recorder) sample(key string) (count int64, sumMS float64) {
	for _, in := range r.sink.Data() {
		in.RLock()
		for k, v := range in.Samples {
			if k == key || strings.HasPrefix(k, key+";") {
				count += int64(v.Count)
				sumMS += v.Sum
			}
		}
		in.RUnlock()
	}
	return count, sumMS
}

// usage is what the process has used so far.
type usage struct {
	cpu        time.Duration
	mallocs    uint64
	writeBytes int64
}

func readUsage() usage {
	var u usage
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		u.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	u.mallocs = ms.Mallocs
	u.writeBytes = procWriteBytes(os.Getpid())
	return u
}

// MeasureBudget runs op under cfg with a fresh Recorder and returns its
// budget. Outside is the client's mean less the time of the store calls
// one operation made (a gateway first request makes two: begin and
// complete).
func MeasureBudget(name string, cfg RunConfig, op Op) Budget {
	rec, err := NewRecorder()
	if err != nil {
		return Budget{Name: name, Clients: cfg.Clients, Err: err.Error()}
	}
	defer rec.Stop()
	cfg.Name = name
	fsyncs := startFsyncCounter([]int{os.Getpid()})
	before := readUsage()
	st := Run(cfg, op)
	after := readUsage()
	syncs := fsyncs.stop()
	b := Budget{Name: name, Clients: st.Clients, Ops: st.Ops, Errors: st.Errors, OpsPerSec: st.OpsPerSec,
		P99: st.P99, Err: st.FirstError}
	if st.Ops == 0 {
		return b
	}
	ops := float64(st.Ops)
	// Closed-loop clients: the mean latency is clients × elapsed / ops
	// (Little's law), the loop's own few instructions included.
	b.Mean = time.Duration(float64(st.Clients) * float64(st.Elapsed) / ops)
	for _, d := range budgetStages {
		n, sum := rec.sample(d.key)
		s := StageStat{Stage: d.stage, Per: d.per, Count: n, PerOp: float64(n) / ops}
		if n > 0 {
			s.Mean = time.Duration(sum / float64(n) * float64(time.Millisecond))
		}
		b.Stages = append(b.Stages, s)
	}
	_, callMS := rec.sample("idemgate.store.apply")
	b.Outside = b.Mean - time.Duration(callMS/ops*float64(time.Millisecond))
	b.CPUPerOp = time.Duration(float64(after.cpu-before.cpu) / ops)
	b.AllocsPerOp = float64(after.mallocs-before.mallocs) / ops
	if before.writeBytes >= 0 && after.writeBytes >= 0 {
		b.BytesPerOp = float64(after.writeBytes-before.writeBytes) / ops
	}
	logs, _ := rec.sample("raft.boltdb.storeLogs")
	walLogs, _ := rec.sample("raft.wal.storeLogs") // raft.log_store: wal
	logs += walLogs
	b.LogCommitsPerOp = float64(logs) / ops
	fsmBatches, _ := rec.sample("raft.fsm.applyBatch")
	b.FSMCommitsPerOp = float64(fsmBatches) / ops
	b.FsyncsPerOp = -1
	if syncs >= 0 {
		b.FsyncsPerOp = float64(syncs) / ops
	}
	if entries, _ := rec.sample("idemgate.store.raft"); entries > 0 {
		cmds, _ := rec.sample("idemgate.store.queued")
		b.CommandsPerRaftEntry = float64(cmds) / float64(entries)
	}
	return b
}

// PrintBudgets writes the budgets: per workload its stages (idemgate's)
// and its cost per operation.
func PrintBudgets(w io.Writer, budgets []Budget) {
	for _, b := range budgets {
		fmt.Fprintf(w, "\n%s, %d clients: %.0f ops/s, client mean %s, p99 %s", b.Name, b.Clients, b.OpsPerSec, ms(b.Mean), ms(b.P99))
		if b.Errors > 0 || b.Err != "" {
			fmt.Fprintf(w, ", %d errors (%s)", b.Errors, b.Err)
		}
		fmt.Fprintln(w)
		if len(b.Stages) > 0 {
			tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "stage\tmean\tper\tsamples per op\t")
			upstream := map[bool]string{true: ", upstream", false: ""}[strings.Contains(b.Name, "gateway")]
			fmt.Fprintf(tw, "outside the store (accept, parse, answer, loopback%s)\t%s\top\t1\t\n", upstream, us(b.Outside))
			for _, s := range b.Stages {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%.2f\t\n", s.Stage, us(s.Mean), s.Per, s.PerOp)
			}
			tw.Flush()
		}
		fsyncs := "fsyncs not counted (needs perf)"
		if b.FsyncsPerOp >= 0 {
			fsyncs = fmt.Sprintf("%.2f fsyncs", b.FsyncsPerOp)
		}
		if len(b.Stages) == 0 {
			fmt.Fprintf(w, "per op: CPU %s (the server processes), %.0f bytes written, %s\n", us(b.CPUPerOp), b.BytesPerOp, fsyncs)
			continue
		}
		fmt.Fprintf(w, "per op: CPU %s (3 nodes + clients), %.0f allocations, %.0f bytes written, %s, %.2f raft.db and %.2f fsm.db commits; %.1f commands per Raft entry\n",
			us(b.CPUPerOp), b.AllocsPerOp, b.BytesPerOp, fsyncs, b.LogCommitsPerOp, b.FSMCommitsPerOp, b.CommandsPerRaftEntry)
	}
}

func us(d time.Duration) string { return fmt.Sprintf("%.0f µs", float64(d)/float64(time.Microsecond)) }

// BudgetClients are the client counts a breakdown measures each workload
// at.
var BudgetClients = []int{1, 16, 64}

// Breakdown measures the budget of three writes on t, at each of clients:
// SETNX over the HTTP API (clients spread over the nodes, as the kv
// scenario), SET NX over the Redis protocol (on the first of t.Resps, the
// leader, as the resp scenario), and a gateway first request (spread over
// the nodes, as the unique scenario).
func Breakdown(t Target, cfg RunConfig, clients []int) []Budget {
	var out []Budget
	id := runID()
	for _, n := range clients {
		cfg.Clients = n
		out = append(out, MeasureBudget("SETNX over HTTP", cfg, func(c int, seq int64) error {
			st, _, _, err := call("PUT", fmt.Sprintf("%s/v1/kv/b-%s-%d-%d?nx=1", t.APIs[c%len(t.APIs)], id, n, seq), "", []byte("v"))
			return expect(st, err, 201)
		}))
	}
	if len(t.Resps) > 0 {
		for _, n := range clients {
			cfg.Clients = n
			conns, err := dialRESPs(t.Resps[0], n)
			if err != nil {
				out = append(out, Budget{Name: "SET NX over RESP", Clients: n, Err: err.Error()})
				continue
			}
			out = append(out, MeasureBudget("SET NX over RESP", cfg, func(c int, seq int64) error {
				kind, val, err := conns[c].do("SET", fmt.Sprintf("r-%s-%d-%d", id, n, seq), "v", "NX")
				if err == nil && (kind != '+' || val != "OK") {
					err = fmt.Errorf("SET NX answered %c%s", kind, val)
				}
				return err
			}))
			closeAll(conns)
		}
	}
	for _, n := range clients {
		cfg.Clients = n
		out = append(out, MeasureBudget("gateway first request", cfg, func(c int, seq int64) error {
			st, _, _, err := call("POST", t.Gateways[c%len(t.Gateways)]+t.PayPath, fmt.Sprintf("b-%s-%d-%d", id, n, seq), orderBody(seq))
			return expect(st, err, 201)
		}))
	}
	return out
}

// BreakdownOnce measures the budget of a once pair on t (begin, then
// complete), at each of clients: over the HTTP API as client.Once sends
// it (spread over the nodes, as the once scenario) and over the Redis
// protocol (IDEM.BEGIN and IDEM.COMPLETE on the first of t.Resps, the
// leader). Each pair is two store calls.
func BreakdownOnce(t Target, cfg RunConfig, clients []int) []Budget {
	var out []Budget
	id := runID()
	o := targetOncer{t}
	for _, n := range clients {
		cfg.Clients = n
		out = append(out, MeasureBudget("once pair over HTTP", cfg, func(c int, seq int64) error {
			return o.pair(c, fmt.Sprintf("b-%s-%d-%d-%d", id, n, c, seq), oncePayload, []byte(fmt.Sprintf("sms-%d-%d", c, seq)))
		}))
	}
	if len(t.Resps) == 0 {
		return out
	}
	lease := strconv.FormatInt(onceLease.Milliseconds(), 10)
	for _, n := range clients {
		cfg.Clients = n
		conns, err := dialRESPs(t.Resps[0], n)
		if err != nil {
			out = append(out, Budget{Name: "once pair over RESP", Clients: n, Err: err.Error()})
			continue
		}
		out = append(out, MeasureBudget("once pair over RESP", cfg, func(c int, seq int64) error {
			return respOncePair(conns[c], fmt.Sprintf("r-%s-%d-%d-%d", id, n, c, seq), lease, string(oncePayload), fmt.Sprintf("sms-%d-%d", c, seq))
		}))
		closeAll(conns)
	}
	return out
}
