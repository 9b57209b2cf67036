package bench

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// The baselines' cost per operation, beside idemgate's: the same writes
// (SET NX to redis-server with appendfsync always; etcd's SETNX, a txn
// through its JSON gateway) at the same client counts, with CPU and bytes
// written read from /proc for the servers' processes alone, and their
// fsyncs counted by perf in the same pass.

// clockTicks is USER_HZ, the unit of /proc/PID/stat's CPU times: 100 on
// every Linux build the bench runs on (sysconf(_SC_CLK_TCK)).
const clockTicks = 100

// procCPU is a process's user+system CPU so far.
func procCPU(pid int) (time.Duration, error) {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces:
	// the fields after the last ')' are space-separated, utime and stime
	// the 12th and 13th of them (fields 14 and 15).
	i := bytes.LastIndexByte(raw, ')')
	f := strings.Fields(string(raw[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f))
	}
	ut, err1 := strconv.ParseInt(f[11], 10, 64)
	st, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("/proc/%d/stat: bad CPU times", pid)
	}
	return time.Duration(ut+st) * time.Second / clockTicks, nil
}

// procWriteBytes is /proc/PID/io's write_bytes (-1 if unreadable).
func procWriteBytes(pid int) int64 {
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/io", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err == nil {
				return n
			}
		}
	}
	return -1
}

type procsUsage struct {
	cpu   time.Duration
	bytes int64
}

func readProcs(pids []int) procsUsage {
	var u procsUsage
	for _, pid := range pids {
		c, _ := procCPU(pid)
		u.cpu += c
		if b := procWriteBytes(pid); b >= 0 && u.bytes >= 0 {
			u.bytes += b
		} else {
			u.bytes = -1
		}
	}
	return u
}

// MeasureProcBudget runs op under cfg against servers pids and returns
// its cost per operation.
func MeasureProcBudget(name string, pids []int, cfg RunConfig, op Op) Budget {
	cfg.Name = name
	fsyncs := startFsyncCounter(pids)
	before := readProcs(pids)
	st := Run(cfg, op)
	after := readProcs(pids)
	syncs := fsyncs.stop()
	b := Budget{Name: name, Clients: st.Clients, Ops: st.Ops, Errors: st.Errors, OpsPerSec: st.OpsPerSec,
		P99: st.P99, Err: st.FirstError, FsyncsPerOp: -1}
	if st.Ops == 0 {
		return b
	}
	ops := float64(st.Ops)
	b.Mean = time.Duration(float64(st.Clients) * float64(st.Elapsed) / ops)
	b.CPUPerOp = time.Duration(float64(after.cpu-before.cpu) / ops)
	if before.bytes >= 0 && after.bytes >= 0 {
		b.BytesPerOp = float64(after.bytes-before.bytes) / ops
	}
	if syncs >= 0 {
		b.FsyncsPerOp = float64(syncs) / ops
	}
	return b
}

// fsyncCounter counts the fsync-family system calls of some processes
// while it runs, with perf's syscall tracepoints (a counter in the kernel
// per call, no stop per call as strace would make). Without perf, or
// without the permission to count, it counts nothing and says so.
type fsyncCounter struct {
	cmd *exec.Cmd
	out string
}

var fsyncEvents = []string{"syscalls:sys_enter_fsync", "syscalls:sys_enter_fdatasync", "syscalls:sys_enter_sync_file_range"}

// startFsyncCounter starts counting for pids (every thread they have now);
// nil when it cannot.
func startFsyncCounter(pids []int) *fsyncCounter {
	bin, err := exec.LookPath("perf")
	if err != nil || len(pids) == 0 {
		return nil
	}
	f, err := os.CreateTemp("", "idemgate-bench-perf-")
	if err != nil {
		return nil
	}
	f.Close()
	ps := make([]string, len(pids))
	for i, pid := range pids {
		ps[i] = strconv.Itoa(pid)
	}
	cmd := exec.Command(bin, "stat", "-x", ",", "-o", f.Name(), "-e", strings.Join(fsyncEvents, ","), "-p", strings.Join(ps, ","))
	if err := cmd.Start(); err != nil {
		os.Remove(f.Name())
		return nil
	}
	time.Sleep(200 * time.Millisecond) // perf opens its counters
	return &fsyncCounter{cmd: cmd, out: f.Name()}
}

// stop ends the count and returns the calls counted; -1 if none could be.
func (c *fsyncCounter) stop() int64 {
	if c == nil {
		return -1
	}
	defer os.Remove(c.out)
	c.cmd.Process.Signal(os.Interrupt) // perf stat prints its counts on SIGINT
	done := make(chan struct{})
	go func() { c.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		c.cmd.Process.Kill()
		<-done
		return -1
	}
	raw, err := os.ReadFile(c.out)
	if err != nil {
		return -1
	}
	return parsePerfCounts(string(raw))
}

// parsePerfCounts sums the counts of perf stat -x, output: one CSV row per
// event, the count first and the event's name third; -1 when an event was
// not counted ("<not supported>", "<not counted>") or none is there.
func parsePerfCounts(raw string) int64 {
	var sum int64
	seen := 0
	for _, line := range strings.Split(raw, "\n") {
		f := strings.Split(line, ",")
		if len(f) < 3 || !strings.HasPrefix(f[2], "syscalls:") {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return -1
		}
		sum += n
		seen++
	}
	if seen == 0 {
		return -1
	}
	return sum
}

// BaselineBreakdown measures redis-server's and etcd's cost of the same
// writes as Breakdown, at each of clients; a nil system is skipped.
func BaselineBreakdown(r *Redis, e *Etcd, cfg RunConfig, clients []int) []Budget {
	var out []Budget
	id := runID()
	if r != nil {
		for _, n := range clients {
			cfg.Clients = n
			conns, err := dialRESPs(r.addr, n)
			if err != nil {
				out = append(out, Budget{Name: "redis SET NX (baseline)", Clients: n, Err: err.Error()})
				continue
			}
			out = append(out, MeasureProcBudget("redis SET NX (baseline)", []int{r.p.cmd.Process.Pid}, cfg, func(c int, seq int64) error {
				kind, val, err := conns[c].do("SET", fmt.Sprintf("r-%s-%d-%d", id, n, seq), "v", "NX")
				if err == nil && (kind != '+' || val != "OK") {
					err = fmt.Errorf("SET NX answered %c%s", kind, val)
				}
				return err
			}))
			closeAll(conns)
		}
	}
	if e != nil {
		var pids []int
		for _, p := range e.procs {
			pids = append(pids, p.cmd.Process.Pid)
		}
		for _, n := range clients {
			cfg.Clients = n
			out = append(out, MeasureProcBudget("etcd SETNX txn (baseline)", pids, cfg, func(c int, seq int64) error {
				ok, err := etcdSETNX(e.clients[c%len(e.clients)], fmt.Sprintf("e-%s-%d-%d", id, n, seq), "v")
				if err == nil && !ok {
					err = fmt.Errorf("SETNX of a fresh key failed")
				}
				return err
			}))
		}
	}
	return out
}

// BaselineOnceBreakdown measures etcd's cost of the once pair of
// BreakdownOnce (its two transactions, as the once scenario), at each of
// clients.
func BaselineOnceBreakdown(e *Etcd, cfg RunConfig, clients []int) []Budget {
	var out []Budget
	id := runID()
	for _, n := range clients {
		cfg.Clients = n
		o, err := e.newOncer(n, cfg.Duration)
		if err != nil {
			out = append(out, Budget{Name: "etcd once pair (baseline)", Clients: n, Err: err.Error()})
			continue
		}
		out = append(out, MeasureProcBudget("etcd once pair (baseline)", e.serverPIDs(), cfg, func(c int, seq int64) error {
			return o.pair(c, fmt.Sprintf("e-%s-%d-%d-%d", id, n, c, seq), oncePayload, []byte(fmt.Sprintf("sms-%d-%d", c, seq)))
		}))
		o.close()
	}
	return out
}
