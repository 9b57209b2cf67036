package bench

import "time"

// The CPU an operation costs, beside its rate: on a machine shared with
// other work, ops/s swings with what else runs, while the CPU per
// operation says what the system itself spends. The bench process holds
// the clients (and idemgate's three nodes, when it started them); a
// baseline's servers are processes of their own, read from /proc.

// CPUCost is what a run cost: the bench process's CPU and the baseline
// servers' CPU, per operation.
type CPUCost struct {
	// ProcessNS: the bench process (its clients; for idemgate also the
	// three nodes it runs).
	ProcessNS int64 `json:"process_ns"`
	// ServersNS: the baseline's server processes (0 for idemgate).
	ServersNS int64 `json:"servers_ns"`
}

// cpuMeter reads the CPU of the bench process and of a system's servers.
type cpuMeter struct {
	pids          []int
	self, servers time.Duration
}

func startCPU(sys System) *cpuMeter {
	m := &cpuMeter{pids: sys.serverPIDs()}
	m.self, m.servers = readUsage().cpu, readProcs(m.pids).cpu
	return m
}

// per returns the CPU spent since start over ops operations (nil for none).
func (m *cpuMeter) per(ops int64) *CPUCost {
	if ops <= 0 {
		return nil
	}
	self, servers := readUsage().cpu, readProcs(m.pids).cpu
	return &CPUCost{ProcessNS: int64(self-m.self) / ops, ServersNS: int64(servers-m.servers) / ops}
}

func (t Target) serverPIDs() []int { return nil }

func (r *Redis) serverPIDs() []int { return []int{r.p.cmd.Process.Pid} }

func (e *Etcd) serverPIDs() []int {
	var pids []int
	for _, p := range e.procs {
		pids = append(pids, p.cmd.Process.Pid)
	}
	return pids
}
