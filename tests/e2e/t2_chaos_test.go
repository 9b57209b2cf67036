//go:build chaos

package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/idemgate/idemgate/fsm"
	"github.com/idemgate/idemgate/internal/boltcheck"
	"github.com/idemgate/idemgate/internal/history"
	"github.com/idemgate/idemgate/internal/localcluster"
	"github.com/idemgate/idemgate/internal/testsupport"
)

// TestT2 is the reliability suite's long run (T2; docs/reliability.md): real `idemgate serve` processes
// (built with -tags chaos for the injectable clock), faults in rotation —
// SIGKILL (the leader half the time), SIGSTOP/SIGCONT for 3-6 s, a restart
// with a skewed clock, a restart under `prlimit --fsize` (disk full), a
// voter removed and re-added — with `bbolt check` on a node's files before
// each restart. KV clients over the HTTP API record histories checked by
// porcupine; gateway clients send every key twice to different nodes, and
// no key may run twice upstream. At the end the replicas' state hashes
// must be equal.
//
// The nodes' logs are written outside the test's temporary directory: with
// -artifacts under -outputdir (kept), otherwise in a directory of their own
// that a failed run keeps and names.
//
//	IDEMGATE_T2=3m go test -tags chaos -count=1 -run TestT2 -v -timeout 30m ./tests/e2e/
func TestT2(t *testing.T) {
	duration := 2 * time.Minute
	if d, err := time.ParseDuration(os.Getenv("IDEMGATE_T2")); err == nil && d > 0 {
		duration = d
	}
	bin := idemgateBinary(t, "chaos")
	up := testsupport.Start(t)
	up.Delay.Store(int64(2 * time.Millisecond))
	dir := t.TempDir()
	ids := []string{"n1", "n2", "n3"}
	ports := freePorts(t, 9)
	c := &chaosCluster{t: t, bin: bin, dir: dir, logDir: t2LogDir(t), nodes: map[string]*chaosNode{}}
	var cfg strings.Builder
	cfg.WriteString("nodes:\n")
	for i, id := range ids {
		n := &chaosNode{id: id, api: ports[3*i], gw: ports[3*i+1], raft: ports[3*i+2]}
		c.nodes[id] = n
		fmt.Fprintf(&cfg, "  - {id: %s, raft: %s, api: %s, listen: %s}\n", id, n.raft, n.api, n.gw)
	}
	logStore := "" // the default; IDEMGATE_T2_LOG_STORE=boltdb or wal picks one
	if v := os.Getenv("IDEMGATE_T2_LOG_STORE"); v != "" {
		logStore = ", log_store: " + v
		t.Logf("log store: %s", v)
	}
	fmt.Fprintf(&cfg, "data_dir: %s/{id}\nupstream: http://%s\nraft: {heartbeat_timeout: 500ms, election_timeout: 500ms, snapshot_threshold: 2048%s}\n"+
		"routes:\n  - {name: pay, path: /pay, processing_timeout: 5s, on_unknown: reject}\n", dir, up.Addr, logStore)
	c.cfgPath = filepath.Join(dir, "cluster.yaml")
	os.WriteFile(c.cfgPath, []byte(cfg.String()), 0o644)
	for _, id := range ids {
		c.start(id, nil)
	}
	defer c.stopAll()
	defer func() {
		if t.Failed() {
			c.views()
			c.logTails(20)
		}
	}()
	waitFor(t, "a leader", 30*time.Second, func() bool { return c.leader() != "" })

	stop := make(chan struct{})
	var wg sync.WaitGroup
	rec := &httpHistory{start: time.Now()}
	for w := 0; w < 6; w++ {
		wg.Add(1)
		go func(w int) { defer wg.Done(); rec.client(c, w, stop) }(w)
	}
	var gwKeys sync.Map // key -> answered 201
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				key := fmt.Sprintf("t2-%d-%d", w, i)
				for attempt := 0; attempt < 2; attempt++ {
					n := c.nodes[ids[(w+i+attempt)%3]]
					if code, _, _, err := httpDo("POST", "http://"+n.gw+"/pay", "x", "Idempotency-Key", key); err == nil && code == 201 {
						gwKeys.Store(key, true)
					}
				}
			}
		}(w)
	}

	faults := map[string]int{}
	deadline := time.Now().Add(duration)
	for round := 0; time.Now().Before(deadline); round++ {
		time.Sleep(time.Duration(3+rand.IntN(4)) * time.Second)
		name := c.fault(round)
		faults[name]++
		t.Logf("%6.1fs fault: %s", time.Since(rec.start).Seconds(), name)
	}
	c.healAll()
	time.Sleep(3 * time.Second)
	close(stop)
	wg.Wait()

	// Every gateway key ran at most once upstream; those answered 201 replay.
	twice := 0
	for key, n := range up.ByKey() {
		if strings.HasPrefix(key, "t2-") && n > 1 {
			twice++
			t.Errorf("%s executed %d times", key, n)
		}
	}
	gw := 0
	gwKeys.Range(func(k, _ any) bool { gw++; return true })

	ops := rec.operations()
	res := history.Check(ops, int64(2*time.Minute))
	if res != porcupine.Ok {
		t.Errorf("the KV history of %d operations is %s", len(ops), res)
	}
	// Replicas converge: every node reports the same applied index
	// (within 10 s of healing), then their files must
	// hold the same state.
	converged := time.Now()
	waitFor(t, "equal applied indexes on all nodes", 20*time.Second, func() bool {
		var seen []uint64
		for _, n := range c.nodes {
			_, _, body, err := httpDo("GET", "http://"+n.api+"/v1/cluster", "")
			var cl struct {
				AppliedIndex uint64 `json:"applied_index"`
			}
			if err != nil || json.Unmarshal([]byte(body), &cl) != nil {
				return false
			}
			seen = append(seen, cl.AppliedIndex)
		}
		return seen[0] == seen[1] && seen[1] == seen[2]
	})
	t.Logf("replicas at the same applied index %s after the clients stopped", time.Since(converged).Round(time.Millisecond))
	// State hashes, read from each node's file after a clean stop.
	c.stopAll()
	var first [32]byte
	for i, id := range ids {
		for _, name := range boltFiles(filepath.Join(dir, id)) {
			if err := boltcheck.Check(filepath.Join(dir, id, name), true); err != nil {
				t.Errorf("bbolt check %s/%s: %v", id, name, err)
			}
		}
		f, err := fsm.Open(fsm.Config{Path: filepath.Join(dir, id, "fsm.db")})
		if err != nil {
			t.Fatal(err)
		}
		h, _ := localcluster.StateHash(f)
		applied := f.AppliedIndex()
		f.Close()
		t.Logf("%s: applied %d, state %x", id, applied, h[:8])
		if i > 0 && h != first {
			t.Errorf("%s's state differs from n1's (applied %d)", id, applied)
		}
		first = h
	}
	t.Logf("T2 %s: faults %v; KV history %d operations (%d never answered): %s; gateway: %d keys answered, %d executed twice",
		duration, faults, len(ops), rec.unknown.Load(), res, gw, twice)
}

// boltFiles are the bbolt files of a node's data dir: fsm.db and its log's
// (raft.db, or raft-wal's meta file).
func boltFiles(dir string) []string {
	names := []string{"fsm.db"}
	for _, name := range []string{"raft.db", "raft-wal/wal-meta.db"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			names = append(names, name)
		}
	}
	return names
}

type chaosNode struct {
	id, api, gw, raft string
	cmd               *exec.Cmd
	done              chan struct{} // closed once cmd has exited and been reaped
	paused            bool
}

type chaosCluster struct {
	t       *testing.T
	bin     string
	dir     string
	logDir  string
	cfgPath string
	nodes   map[string]*chaosNode
}

// t2LogDir is where the nodes' logs go. They must outlive a failed run
// (t.TempDir is removed with the test): with -artifacts, the test's
// artifact directory under -outputdir; otherwise a directory of its own,
// removed when the test passes and named when it fails.
func t2LogDir(t *testing.T) string {
	if f := flag.Lookup("test.artifacts"); f != nil && f.Value.String() == "true" {
		dir := t.ArtifactDir()
		t.Logf("node logs in %s", dir)
		return dir
	}
	dir, err := os.MkdirTemp("", "idemgate-t2-logs-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("node logs kept in %s", dir)
			return
		}
		os.RemoveAll(dir)
	})
	return dir
}

// start runs a node; wrap, if set, prefixes the command (prlimit) and env
// adds to its environment.
func (c *chaosCluster) start(id string, env []string, wrap ...string) {
	n := c.nodes[id]
	for _, name := range []string{"fsm.db", "raft.db", "raft-wal/wal-meta.db"} {
		path := filepath.Join(c.dir, id, name)
		if _, err := os.Stat(path); err == nil {
			if err := boltcheck.Check(path, true); err != nil {
				c.t.Errorf("bbolt check before restarting %s: %s: %v", id, name, err)
			}
		}
	}
	level := "error"
	if l := os.Getenv("IDEMGATE_T2_LOG_LEVEL"); l != "" {
		level = l
	}
	args := append(append([]string(nil), wrap...), c.bin, "serve", "--config", c.cfgPath, "--node", id, "--log-level", level, "--bootstrap")
	n.cmd = exec.Command(args[0], args[1:]...)
	n.cmd.Env = append(os.Environ(), env...)
	log, err := os.OpenFile(filepath.Join(c.logDir, id+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		c.t.Fatal(err)
	}
	fmt.Fprintf(log, "--- t2: %s starting %s\n", time.Now().Format(time.RFC3339Nano), strings.Join(append(env, args...), " "))
	n.cmd.Stdout, n.cmd.Stderr = log, log
	if err := n.cmd.Start(); err != nil {
		c.t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		n.cmd.Wait()
		log.Close()
		close(done)
	}()
	n.done, n.paused = done, false
}

// exited reports whether the node's process has ended.
func (c *chaosCluster) exited(id string) bool {
	select {
	case <-c.nodes[id].done:
		return true
	default:
		return false
	}
}

// kill SIGKILLs the node and waits until its process is gone: a node
// restarted before that finds its data directory still locked by the old
// process and exits.
func (c *chaosCluster) kill(id string) {
	n := c.nodes[id]
	if n.paused {
		n.cmd.Process.Signal(syscall.SIGCONT)
	}
	n.cmd.Process.Signal(syscall.SIGKILL)
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
		c.t.Fatalf("%s still running 10s after SIGKILL", id)
	}
	n.paused = false
}

func (c *chaosCluster) leader() string {
	for _, n := range c.nodes {
		code, _, body, err := httpDo("GET", "http://"+n.api+"/v1/cluster", "")
		if err == nil && code == 200 {
			var cl struct{ Leader string }
			json.Unmarshal([]byte(body), &cl)
			if cl.Leader != "" {
				return cl.Leader
			}
		}
	}
	return ""
}

func (c *chaosCluster) anyNode() string {
	ids := []string{"n1", "n2", "n3"}
	return ids[rand.IntN(3)]
}

// fault injects the round's fault and returns its name.
func (c *chaosCluster) fault(round int) string {
	victim := c.anyNode()
	if l := c.leader(); l != "" && rand.IntN(2) == 0 {
		victim = l
	}
	switch round % 5 {
	case 0:
		c.kill(victim)
		c.start(victim, nil)
		return "SIGKILL " + victim
	case 1:
		n := c.nodes[victim]
		n.cmd.Process.Signal(syscall.SIGSTOP)
		n.paused = true
		time.Sleep(time.Duration(3000+rand.IntN(3000)) * time.Millisecond)
		n.cmd.Process.Signal(syscall.SIGCONT)
		n.paused = false
		return "SIGSTOP/SIGCONT " + victim
	case 2:
		c.kill(victim)
		skew := []string{"1500ms", "-1500ms"}[rand.IntN(2)]
		c.start(victim, []string{"IDEMGATE_CLOCK_SKEW=" + skew})
		return "clock skew " + skew + " " + victim
	case 3:
		c.kill(victim)
		size := int64(0)
		if st, err := os.Stat(filepath.Join(c.dir, victim, "raft.db")); err == nil {
			size = st.Size()
		} else if st, err := os.Stat(filepath.Join(c.dir, victim, "fsm.db")); err == nil {
			size = st.Size() // wal: its segments are preallocated; fsm.db, or the next segment, outgrows the limit
		}
		c.start(victim, nil, "prlimit", "--fsize="+strconv.FormatInt(size+64<<10, 10))
		time.Sleep(3 * time.Second) // it dies when a file must grow
		c.kill(victim)
		c.start(victim, nil)
		return "disk full " + victim
	default:
		if victim == c.leader() {
			victim = c.otherThan(victim)
		}
		c.removeAndReadd(victim, c.otherThan(victim))
		return "voter removed and re-added " + victim
	}
}

// removeAndReadd removes a voter and adds it back, as an operator would.
// A removed node that learns of its removal stops its Raft
// (hashicorp/raft's ShutdownOnRemove), and its process then exits: added
// back while it is stopping, it would be a voter that never applies again,
// and the replicas would never converge. So a node that exits is restarted
// from its data directory before it is added back. One that never learned
// of its removal (a follower the leader stopped replicating to) still runs
// its Raft and is added back as it is; healAll restarts it should it stop
// later.
func (c *chaosCluster) removeAndReadd(victim, asker string) {
	code, _, body, err := httpDo("DELETE", "http://"+c.nodes[asker].api+"/v1/cluster/nodes/"+victim, "")
	if err != nil || code != 200 {
		// A removal that raced an election or timed out may still have
		// been committed: add the node back either way (adding a member at
		// its own address changes nothing).
		c.t.Logf("remove %s via %s: %d %s %v", victim, asker, code, strings.TrimSpace(body), err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for !c.exited(victim) && !c.reportsRemoved(victim) && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
	}
	if c.exited(victim) {
		c.t.Logf("%s exited once removed; restarting it", victim)
		c.start(victim, nil)
	}
	n := c.nodes[victim]
	add := fmt.Sprintf(`{"id":%q,"raft":%q,"api":%q}`, victim, n.raft, n.api)
	waitFor(c.t, victim+" added back", 30*time.Second, func() bool {
		code, _, _, err := httpDo("POST", "http://"+c.nodes[asker].api+"/v1/cluster/nodes", add, "Content-Type", "application/json")
		if err != nil || code != 200 {
			time.Sleep(500 * time.Millisecond) // an election, or the node still starting
			return false
		}
		return true
	})
}

// reportsRemoved reports whether the node says, in its /v1/cluster, that
// it was removed.
func (c *chaosCluster) reportsRemoved(id string) bool {
	_, _, body, err := httpDo("GET", "http://"+c.nodes[id].api+"/v1/cluster", "")
	var cl struct{ Removed bool }
	return err == nil && json.Unmarshal([]byte(body), &cl) == nil && cl.Removed
}

func (c *chaosCluster) otherThan(id string) string {
	for _, other := range []string{"n1", "n2", "n3"} {
		if other != id {
			return other
		}
	}
	return ""
}

// healAll ends every fault and waits until the cluster is whole again:
// every node running, a voter in the leader's configuration, and ready
// (a leader known and everything committed applied). A node that exited
// (removed, or its disk full) is restarted; one missing from the
// configuration (a re-add that raced an election) is added back.
func (c *chaosCluster) healAll() {
	for _, n := range c.nodes {
		if n.paused {
			n.cmd.Process.Signal(syscall.SIGCONT)
			n.paused = false
		}
	}
	lastAdd := map[string]time.Time{}
	waitFor(c.t, "every node running, a voter and ready", 90*time.Second, func() bool {
		whole := true
		for id := range c.nodes {
			if c.exited(id) {
				c.t.Logf("healing: %s is not running; starting it", id)
				c.start(id, nil)
				whole = false
			}
		}
		l := c.nodes[c.leader()]
		if l == nil {
			return false
		}
		_, _, body, err := httpDo("GET", "http://"+l.api+"/v1/cluster", "")
		var cl struct {
			Nodes []struct {
				ID    string
				Voter bool
			}
		}
		if err != nil || json.Unmarshal([]byte(body), &cl) != nil {
			return false
		}
		voter := map[string]bool{}
		for _, n := range cl.Nodes {
			voter[n.ID] = n.Voter
		}
		for id, n := range c.nodes {
			if !voter[id] {
				whole = false
				if time.Since(lastAdd[id]) > time.Second {
					lastAdd[id] = time.Now()
					code, _, body, err := httpDo("POST", "http://"+l.api+"/v1/cluster/nodes", fmt.Sprintf(`{"id":%q,"raft":%q,"api":%q}`, id, n.raft, n.api), "Content-Type", "application/json")
					c.t.Logf("healing: %s is not a voter; adding it back: %d %s %v", id, code, strings.TrimSpace(body), err)
				}
				continue
			}
			if code, _, _, err := httpDo("GET", "http://"+n.api+"/readyz", ""); err != nil || code != 200 {
				whole = false
			}
		}
		return whole
	})
}

// views logs every node's view of the cluster.
func (c *chaosCluster) views() {
	for id, n := range c.nodes {
		_, _, body, err := httpDo("GET", "http://"+n.api+"/v1/cluster", "")
		c.t.Logf("%s sees: %s %v", id, strings.TrimSpace(body), err)
	}
}

// logTails logs the last lines of every node's log.
func (c *chaosCluster) logTails(lines int) {
	for id := range c.nodes {
		b, err := os.ReadFile(filepath.Join(c.logDir, id+".log"))
		all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		c.t.Logf("--- %s.log, last %d lines (%v):\n%s", id, lines, err, strings.Join(all[max(0, len(all)-lines):], "\n"))
	}
}

// stopAll stops every node with SIGTERM, and SIGKILLs those still running
// 15 s later; it returns once every process has exited. After a failure it
// sends SIGQUIT instead: each node writes every goroutine's stack to its
// log (where a stalled replication or apply shows) and exits.
func (c *chaosCluster) stopAll() {
	sig := syscall.SIGTERM
	if c.t.Failed() {
		sig = syscall.SIGQUIT
	}
	for _, n := range c.nodes {
		if n.cmd != nil && n.cmd.Process != nil {
			n.cmd.Process.Signal(syscall.SIGCONT)
			n.cmd.Process.Signal(sig)
		}
	}
	deadline := time.Now().Add(15 * time.Second)
	for _, n := range c.nodes {
		if n.done == nil {
			continue
		}
		select {
		case <-n.done:
		case <-time.After(time.Until(deadline)):
			n.cmd.Process.Signal(syscall.SIGKILL)
			<-n.done
		}
	}
}

// httpHistory records KV operations over the HTTP API.
type httpHistory struct {
	start   time.Time
	mu      sync.Mutex
	ops     []porcupine.Operation
	unknown atomic.Int64
	version sync.Map
}

func (h *httpHistory) now() int64 { return int64(time.Since(h.start)) }

func (h *httpHistory) client(c *chaosCluster, id int, stop <-chan struct{}) {
	ids := []string{"n1", "n2", "n3"}
	for i := 0; ; i++ {
		select {
		case <-stop:
			return
		default:
		}
		n := c.nodes[ids[rand.IntN(3)]]
		// A fresh keyspace every 10 s keeps each porcupine partition small.
		key := fmt.Sprintf("w%d-k%d", time.Since(h.start)/(10*time.Second), rand.IntN(4))
		in := history.Input{Key: key, Value: fmt.Sprintf("c%d-%d", id, i)}
		url := "http://" + n.api + "/v1/kv/" + key
		var method string
		var hdr []string
		switch r := rand.IntN(10); {
		case r < 3:
			in.Kind, method, url = history.SetNX, "PUT", url+"?nx=1"
		case r < 4:
			in.Kind, method = history.Set, "PUT"
		case r < 5:
			v, _ := h.version.Load(key)
			ver, _ := v.(uint64)
			if ver == 0 {
				continue
			}
			in.Kind, in.Version, method, hdr = history.CAS, ver, "PUT", []string{"If-Match", fmt.Sprintf("%q", strconv.FormatUint(ver, 10))}
		case r < 8:
			in.Kind, method = history.Get, "GET"
		default:
			in.Kind, method = history.GetDel, "DELETE"
		}
		body := ""
		if method == "PUT" {
			body = in.Value
		}
		call := h.now()
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		code, header, resp, err := httpDo(method, url, body, hdr...)
		cancel()
		_ = ctx
		ret := h.now()
		out, known := kvOutput(in.Kind, code, header.Get("ETag"), resp, err)
		if !known {
			if in.Kind == history.Get {
				continue // an unanswered read constrains nothing
			}
			h.unknown.Add(1)
			ret, out = math.MaxInt64, history.Output{Unknown: true}
		}
		in.Call, in.Return = call, ret
		if out.OK && out.Version != 0 {
			h.version.Store(key, out.Version)
		}
		h.mu.Lock()
		h.ops = append(h.ops, porcupine.Operation{ClientId: id, Call: call, Return: ret, Input: in, Output: out})
		h.mu.Unlock()
	}
}

func (h *httpHistory) operations() []porcupine.Operation {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]porcupine.Operation(nil), h.ops...)
}

// kvOutput maps an HTTP answer to a model output; known is false when the
// operation's fate is unknown (no answer, 5xx).
func kvOutput(k history.Kind, code int, etag, body string, err error) (history.Output, bool) {
	if err != nil || code >= 500 || code == 0 {
		return history.Output{}, false
	}
	ver, _ := strconv.ParseUint(strings.Trim(etag, `"`), 10, 64)
	switch k {
	case history.SetNX:
		if code == 201 {
			return history.Output{OK: true, Version: ver}, true
		}
		return history.Output{Value: body}, code == 409
	case history.Set:
		return history.Output{OK: true, Version: ver}, code == 200
	case history.CAS:
		if code == 200 {
			return history.Output{OK: true, Version: ver}, true
		}
		return history.Output{}, code == 412
	case history.Get:
		if code == 200 {
			return history.Output{OK: true, Value: body, Version: ver}, true
		}
		return history.Output{}, code == 404
	case history.GetDel:
		if code == 200 {
			return history.Output{OK: true, Value: body}, true
		}
		return history.Output{}, code == 404
	}
	return history.Output{}, false
}
