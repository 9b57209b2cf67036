package e2e

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
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

	"github.com/idemgate/idemgate/internal/history"
)

// runCLI runs the binary with args and returns its exit code and output.
func runCLI(t *testing.T, bin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	cmd := exec.Command(bin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), out.String(), errOut.String()
	}
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return 0, out.String(), errOut.String()
}

// clusterView is what GET /v1/cluster on api says: the leader and each
// member's Raft address; ok false without an answer.
func clusterView(api string) (leader string, raft map[string]string, ok bool) {
	cl, err := clusterOf(api)
	if err != nil {
		return "", nil, false
	}
	raft = map[string]string{}
	for _, n := range cl.Nodes {
		raft[n.ID] = n.Raft
	}
	return cl.Leader, raft, true
}

// waitClusterReady waits until every node of c (among ids) knows a leader
// and answers readyz 200.
func waitClusterReady(t *testing.T, c *e2eCluster, ids []string) string {
	t.Helper()
	var leader string
	waitFor(t, "a leader known to every node, every node ready", 30*time.Second, func() bool {
		for _, id := range ids {
			l, _, ok := clusterView(c.apis[id])
			if !ok || l == "" {
				return false
			}
			if readyz(c.apis[id]) != 200 {
				return false
			}
			leader = l
		}
		return true
	})
	return leader
}

// ackedWrite is a KV write as its client saw it.
type ackedWrite struct {
	key, value string
	version    uint64
	acked      bool
	done       time.Time // when the answer came
}

// TestE2EBackupSaveUnderLoad: `idemgate snapshot save` runs while clients
// write unique keys through every node; the file is restored (`snapshot
// restore` on each node) into a new cluster on new ports and data dirs.
// Every write acknowledged before the save started is there with its value
// and version; a write answered during or after the save, or never
// answered, is there whole or not at all. Then a porcupine-checked KV
// history on the restored cluster, starting from the restored state, must
// be linearizable: versions continue above the backup's, nothing is stale.
func TestE2EBackupSaveUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	src := writeCluster(t, t.TempDir(), "http://127.0.0.1:1", "")
	srcNodes := startNodes(t, bin, src.path, src.ids, src.apis)
	waitClusterReady(t, src, src.ids)

	var (
		mu      sync.Mutex
		writes  []*ackedWrite
		acked   atomic.Int64
		stop    = make(chan struct{})
		writers sync.WaitGroup
	)
	for w := 0; w < 4; w++ {
		writers.Add(1)
		go func(w int) {
			defer writers.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				wr := &ackedWrite{key: fmt.Sprintf("w%d-%d", w, i), value: fmt.Sprintf("value of w%d-%d", w, i)}
				api := src.apis[src.ids[(w+i)%3]]
				code, hdr, _, err := httpDo("PUT", "http://"+api+"/v1/kv/"+wr.key, wr.value)
				wr.done = time.Now()
				if err == nil && code == 200 {
					wr.acked = true
					wr.version, _ = strconv.ParseUint(strings.Trim(hdr.Get("ETag"), `"`), 10, 64)
					acked.Add(1)
				}
				mu.Lock()
				writes = append(writes, wr)
				mu.Unlock()
			}
		}(w)
	}
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		writers.Wait()
	}()
	waitFor(t, "100 acknowledged writes before the save", 30*time.Second, func() bool { return acked.Load() >= 100 })

	file := filepath.Join(t.TempDir(), "backup.snap")
	saveStart := time.Now()
	code, out, errOut := runCLI(t, bin, "snapshot", "save", file, "--api", src.apis["n2"])
	saveEnd := time.Now()
	if code != 0 {
		t.Fatalf("snapshot save: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("%s", strings.TrimSpace(out))
	during := acked.Load()
	waitFor(t, "writes acknowledged after the save", 30*time.Second, func() bool { return acked.Load() >= during+50 })
	close(stop)
	writers.Wait()
	for _, n := range srcNodes { // the old cluster is gone: the restored one must stand alone
		n.cmd.Process.Signal(syscall.SIGKILL)
		n.cmd.Wait()
	}

	dst := writeCluster(t, t.TempDir(), "http://127.0.0.1:1", "")
	for _, id := range dst.ids {
		if code, out, errOut := runCLI(t, bin, "snapshot", "restore", file, "--config", dst.path, "--node", id); code != 0 {
			t.Fatalf("snapshot restore --node %s: exit %d\n%s%s", id, code, out, errOut)
		}
	}
	startNodes(t, bin, dst.path, dst.ids, dst.apis)
	waitClusterReady(t, dst, dst.ids)

	before, present := 0, 0
	for i, wr := range writes {
		api := dst.apis[dst.ids[i%3]]
		code, hdr, body, err := httpDo("GET", "http://"+api+"/v1/kv/"+wr.key, "")
		if err != nil || (code != 200 && code != 404) {
			t.Fatalf("GET %s on the restored cluster: %d %s %v", wr.key, code, body, err)
		}
		version, _ := strconv.ParseUint(strings.Trim(hdr.Get("ETag"), `"`), 10, 64)
		mustBeThere := wr.acked && wr.done.Before(saveStart)
		switch {
		case code == 404 && mustBeThere:
			t.Fatalf("%s, acknowledged (version %d) %s before the save started, is missing after the restore",
				wr.key, wr.version, saveStart.Sub(wr.done))
		case code == 200 && body != wr.value:
			t.Fatalf("%s restored as %q, want %q", wr.key, body, wr.value)
		case code == 200 && wr.acked && version != wr.version:
			t.Fatalf("%s restored at version %d, acknowledged at %d", wr.key, version, wr.version)
		}
		if mustBeThere {
			before++
		}
		if code == 200 {
			present++
		}
	}
	t.Logf("%d writes: %d acknowledged before the save (all restored), %d restored in all; save took %s",
		len(writes), before, present, saveEnd.Sub(saveStart).Round(time.Millisecond))

	// The restored state is the history's starting point: a write of each
	// key at its restored version, before any operation.
	var seed []*ackedWrite
	for _, wr := range writes {
		if wr.acked && wr.done.Before(saveStart) && len(seed) < 4 {
			seed = append(seed, wr)
		}
	}
	res, ops := restoredHistory(t, dst, seed)
	if res != porcupine.Ok {
		t.Fatalf("the KV history of %d operations on the restored cluster is %s", len(ops), res)
	}
	t.Logf("KV history on the restored cluster: %d operations, %s", len(ops), res)
}

// restoredHistory runs three clients of random KV operations (SETNX, SET,
// CAS, GET, GETDEL) on seed's keys and two new ones, through every node of
// c, and checks the history with porcupine from seed's state.
func restoredHistory(t *testing.T, c *e2eCluster, seed []*ackedWrite) (porcupine.CheckResult, []porcupine.Operation) {
	var (
		mu       sync.Mutex
		ops      []porcupine.Operation
		versions = map[string]uint64{}
		keys     = []string{"fresh-a", "fresh-b"}
		start    = time.Now()
	)
	now := func() int64 { return int64(time.Since(start)) + 10 } // after the seed
	for _, wr := range seed {
		keys = append(keys, wr.key)
		versions[wr.key] = wr.version
		ops = append(ops, porcupine.Operation{ClientId: 99, Call: 0, Return: 1,
			Input:  history.Input{Kind: history.Set, Key: wr.key, Value: wr.value, Call: 0, Return: 1},
			Output: history.Output{OK: true, Version: wr.version}})
	}
	var wg sync.WaitGroup
	for client := 0; client < 3; client++ {
		wg.Add(1)
		go func(client int) {
			defer wg.Done()
			for i := 0; i < 60; i++ {
				key := keys[rand.IntN(len(keys))]
				mu.Lock()
				in := history.Input{Kind: history.Kind(rand.IntN(5)), Key: key, Value: fmt.Sprintf("c%d-%d", client, i), Version: versions[key]}
				mu.Unlock()
				api := c.apis[c.ids[rand.IntN(3)]]
				in.Call = now()
				out, known := kvCall(api, in)
				in.Return = now()
				if !known {
					if in.Kind == history.Get {
						continue // an unanswered read constrains nothing
					}
					in.Return, out = math.MaxInt64, history.Output{Unknown: true}
				}
				mu.Lock()
				if out.OK && out.Version != 0 {
					versions[key] = out.Version
				}
				ops = append(ops, porcupine.Operation{ClientId: client, Call: in.Call, Return: in.Return, Input: in, Output: out})
				mu.Unlock()
			}
		}(client)
	}
	wg.Wait()
	return history.Check(ops, int64(time.Minute)), ops
}

// kvCall sends one KV operation of the model (Kind SetNX, Set, CAS, Get or
// GetDel) to the API at api and reads its answer as the model's output;
// known is false when the outcome is unknown (no answer, 5xx).
func kvCall(api string, in history.Input) (history.Output, bool) {
	url := "http://" + api + "/v1/kv/" + in.Key
	method, body, hdr := "PUT", in.Value, []string(nil)
	okStatus, failStatus := 200, 0
	switch in.Kind {
	case history.SetNX:
		url, okStatus, failStatus = url+"?nx=1", 201, 409
	case history.CAS:
		hdr, failStatus = []string{"If-Match", strconv.Quote(strconv.FormatUint(in.Version, 10))}, 412
	case history.Get:
		method, body, failStatus = "GET", "", 404
	case history.GetDel:
		method, body, failStatus = "DELETE", "", 404
	}
	code, h, resp, err := httpDo(method, url, body, hdr...)
	version, _ := strconv.ParseUint(strings.Trim(h.Get("ETag"), `"`), 10, 64)
	switch {
	case err != nil || code >= 500:
		return history.Output{}, false
	case code == okStatus:
		out := history.Output{OK: true, Version: version}
		if method != "PUT" {
			out.Value = resp
		}
		return out, true
	case code == failStatus && in.Kind == history.SetNX:
		return history.Output{Value: resp}, true // the current value
	case code == failStatus:
		return history.Output{}, true
	}
	return history.Output{}, false
}

// TestE2EBackupHostile: the snapshot commands over a TLS API with tokens
// (only an admin token gets a backup), then files that must be refused —
// truncated, a flipped byte, wrong magic, empty, random, a huge length —
// each with exit 1, one line, and the data dir left as it was; a bad
// command line exits 2 with one line naming the flag.
func TestE2EBackupHostile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	newToken := func(role string) (secret, entry string) {
		code, out, errOut := runCLI(t, bin, "token", "--role", role, "--name", role+"-e2e")
		lines := strings.Split(strings.TrimSpace(out), "\n")
		if code != 0 || len(lines) != 2 {
			t.Fatalf("idemgate token: exit %d %s%s", code, out, errOut)
		}
		return lines[0], lines[1]
	}
	admin, adminEntry := newToken("admin")
	app, appEntry := newToken("app")
	c := writeCluster(t, dir, "http://127.0.0.1:1", "tls: {ca: certs/ca.pem, cert: \"certs/{id}.pem\", key: \"certs/{id}-key.pem\"}\n"+
		"api:\n  tokens:\n  "+adminEntry+"\n  "+appEntry+"\n")
	if code, out, errOut := runCLI(t, bin, "certs", "--config", c.path); code != 0 {
		t.Fatalf("idemgate certs: exit %d %s%s", code, out, errOut)
	}
	ca := filepath.Join(dir, "certs", "ca.pem")
	startNodes(t, bin, c.path, c.ids, c.apis)
	adminFile := filepath.Join(dir, "admin.token")
	os.WriteFile(adminFile, []byte(admin+"\n"), 0o600)

	file := filepath.Join(dir, "backup.snap")
	api := "https://" + c.apis["n1"]
	// Some state to back up, written over TLS with the admin token.
	pem, _ := os.ReadFile(ca)
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	defer client.CloseIdleConnections()
	put := func(key string) bool {
		req, _ := http.NewRequest("PUT", api+"/v1/kv/"+key, strings.NewReader("value-"+key))
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := client.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == 200
	}
	waitFor(t, "a first write (the cluster elects a leader)", 30*time.Second, func() bool { return put("k0") })
	for i := 1; i < 20; i++ {
		if !put(fmt.Sprintf("k%d", i)) {
			t.Fatalf("PUT k%d failed", i)
		}
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no token", []string{"--ca", ca}, "401"},
		{"an app token", []string{"--ca", ca, "--token", app}, "403"},
		{"no CA for the TLS listener", []string{"--token", admin}, "certificate"},
	} {
		code, _, errOut := runCLI(t, bin, append([]string{"snapshot", "save", file, "--api", api}, tt.args...)...)
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, tt.want) {
			t.Errorf("snapshot save with %s: exit %d, stderr %q; want exit 1, one line naming %q", tt.name, code, errOut, tt.want)
		}
		if _, err := os.Stat(file); err == nil {
			t.Errorf("snapshot save with %s left %s", tt.name, file)
		}
	}
	code, saved, errOut := runCLI(t, bin, "snapshot", "save", file, "--api", api, "--ca", ca, "--token-file", adminFile)
	if code != 0 || !strings.HasPrefix(saved, "saved "+file) {
		t.Fatalf("snapshot save with the admin token: exit %d %s%s", code, saved, errOut)
	}
	if _, err := os.Stat(file + ".tmp"); err == nil {
		t.Errorf("a successful save left %s.tmp", file)
	}
	t.Logf("%s", strings.TrimSpace(saved))
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	// Restores go to a cluster file of their own (its data dirs are new).
	target := writeCluster(t, t.TempDir(), "http://127.0.0.1:1", "")
	dataDir := filepath.Join(filepath.Dir(target.path), "n1")
	random := make([]byte, 256<<10)
	if f, err := os.Open("/dev/urandom"); err == nil {
		f.Read(random)
		f.Close()
	}
	with := func(f func([]byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	for _, tt := range []struct {
		name string
		data []byte
	}{
		{"truncated to half", good[:len(good)/2]},
		{"truncated by one byte", good[:len(good)-1]},
		{"one flipped byte", with(func(b []byte) []byte { b[len(b)/2] ^= 1; return b })},
		{"wrong magic", with(func(b []byte) []byte { b[1] = 'X'; return b })},
		{"empty", nil},
		{"/dev/urandom", random},
		{"a huge length field", with(func(b []byte) []byte { binary.BigEndian.PutUint32(b[9:], 0xfffffff0); return b })},
	} {
		bad := filepath.Join(dir, "bad.snap")
		os.WriteFile(bad, tt.data, 0o600)
		code, out, errOut := runCLI(t, bin, "snapshot", "restore", bad, "--config", target.path, "--node", "n1")
		if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not a valid idemgate snapshot file") || out != "" {
			t.Errorf("restore of a file %s: exit %d, stdout %q, stderr %q; want exit 1 and one line", tt.name, code, out, errOut)
		}
		if _, err := os.Stat(dataDir); err == nil {
			t.Errorf("restore of a file %s left %s behind", tt.name, dataDir)
		}
	}

	// A data dir that holds something is refused, and kept as it was.
	os.MkdirAll(dataDir, 0o700)
	os.WriteFile(filepath.Join(dataDir, "raft.db"), []byte("someone's"), 0o600)
	code, _, errOut = runCLI(t, bin, "snapshot", "restore", file, "--config", target.path, "--node", "n1")
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "not empty") || !strings.Contains(errOut, "new directory") {
		t.Errorf("restore into a used data dir: exit %d, stderr %q; want exit 1, one line saying what to do", code, errOut)
	}
	if b, _ := os.ReadFile(filepath.Join(dataDir, "raft.db")); string(b) != "someone's" {
		t.Errorf("the used data dir's file changed: %q", b)
	}
	if entries, _ := os.ReadDir(dataDir); len(entries) != 1 {
		t.Errorf("the used data dir holds %d entries after a refused restore, want 1", len(entries))
	}

	// Bad command lines: exit 2, one line naming the flag.
	cfg := target.path
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot"}, "save, restore or status"},
		{[]string{"snapshot", "frob"}, "frob"},
		{[]string{"snapshot", "save"}, "FILE"},
		{[]string{"snapshot", "save", file}, "--api"},
		{[]string{"snapshot", "save", "--api", api}, "FILE"},
		{[]string{"snapshot", "save", file, "other", "--api", api}, "other"},
		{[]string{"snapshot", "save", file, "--api", api, "--bogus"}, "-bogus"},
		{[]string{"snapshot", "save", file, "--api", "ftp://x"}, "--api"},
		{[]string{"snapshot", "save", file, "--api", "http://127.0.0.1:1/v1/kv"}, "--api"},
		{[]string{"snapshot", "save", file, "--api", api, "--token", "a", "--token-file", adminFile}, "--token-file"},
		{[]string{"snapshot", "save", file, "--api", api, "--token-file", filepath.Join(dir, "missing")}, "--token-file"},
		{[]string{"snapshot", "save", file, "--api", api, "--ca", filepath.Join(dir, "missing")}, "--ca"},
		{[]string{"snapshot", "save", file, "--api", api, "--ca", adminFile}, "--ca"},
		{[]string{"snapshot", "restore", file}, "--config"},
		{[]string{"snapshot", "restore", file, "--config", cfg}, "--node"},
		{[]string{"snapshot", "restore", "--config", cfg, "--node", "n1"}, "FILE"},
		{[]string{"snapshot", "restore", file, "--config", cfg, "--node", "n9"}, "--node"},
		{[]string{"snapshot", "restore", file, "--config", filepath.Join(dir, "missing.yaml"), "--node", "n1"}, "missing.yaml"},
		{[]string{"recover", "--config", cfg, "--node", "n1"}, "--voters"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", ""}, "--voters"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", "n1,n9"}, "--voters"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", "n1,,n2"}, "--voters"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", "n1,n1"}, "--voters"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", "n2"}, "--voters"},
		{[]string{"recover", "--config", cfg, "--voters", "n1"}, "--node"},
		{[]string{"recover", "--node", "n1", "--voters", "n1"}, "--config"},
		{[]string{"recover", "--config", cfg, "--node", "n1", "--voters", "n1", "extra"}, "extra"},
	} {
		code, out, errOut := runCLI(t, bin, tt.args...)
		first := strings.SplitN(errOut, "\n", 2)[0]
		if code != 2 || !strings.Contains(first, tt.want) || out != "" {
			t.Errorf("%v: exit %d, stdout %q, first line %q; want exit 2 naming %q", tt.args, code, out, first, tt.want)
		}
	}
}

// TestE2ERecover: three real nodes take acknowledged writes; two are
// SIGKILLed for good. `idemgate recover` is refused beside the running
// survivor; with the survivor stopped it runs, and the restarted survivor
// leads a one-node cluster holding every acknowledged write. Then a fresh
// node (a wiped data dir) is added through the API and catches up.
func TestE2ERecover(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	bin := idemgateBinary(t)
	dir := t.TempDir()
	c := writeCluster(t, dir, "http://127.0.0.1:1", "")
	nodes := startNodes(t, bin, c.path, c.ids, c.apis)
	leader := waitClusterReady(t, c, c.ids)
	_, raftAddrs, _ := clusterView(c.apis[leader])

	acked := map[string]string{}
	for i := 0; i < 40; i++ {
		key, value := fmt.Sprintf("k%d", i), fmt.Sprintf("value-%d", i)
		if code, _, body, err := httpDo("PUT", "http://"+c.apis[c.ids[i%3]]+"/v1/kv/"+key, value); err != nil || code != 200 {
			t.Fatalf("PUT %s = %d %s %v", key, code, body, err)
		}
		acked[key] = value
	}
	var survivor string
	var lost []string
	for _, id := range c.ids {
		if id != leader && survivor == "" {
			survivor = id
		} else {
			lost = append(lost, id)
		}
	}
	// A write is acknowledged once a quorum holds it, which need not
	// include the survivor; a lost quorum takes with it what only the lost
	// nodes held (the docs say so). The survivor catches up first, as an
	// operator picks the survivor furthest along.
	want := amortApplied(c.apis[leader])
	waitFor(t, survivor+" at the leader's applied index", 30*time.Second, func() bool {
		return amortApplied(c.apis[survivor]) >= want
	})
	for _, id := range lost {
		nodes[id].cmd.Process.Signal(syscall.SIGKILL)
		nodes[id].cmd.Wait()
	}
	recoverArgs := []string{"recover", "--config", c.path, "--node", survivor, "--voters", survivor}
	code, _, errOut := runCLI(t, bin, recoverArgs...)
	if code != 1 || strings.Count(errOut, "\n") != 1 || !strings.Contains(errOut, "held by another idemgate") {
		t.Fatalf("recover beside the running %s: exit %d, stderr %q; want exit 1 naming the lock's holder", survivor, code, errOut)
	}
	nodes[survivor].cmd.Process.Signal(syscall.SIGTERM)
	nodes[survivor].cmd.Wait()

	code, out, errOut := runCLI(t, bin, recoverArgs...)
	if code != 0 || !strings.Contains(errOut, "LAST RESORT") || !strings.Contains(errOut, "lost for good") {
		t.Fatalf("recover: exit %d\n%s%s", code, out, errOut)
	}
	t.Logf("%s", strings.TrimSpace(out))
	startNodes(t, bin, c.path, []string{survivor}, c.apis)
	waitFor(t, survivor+" leading a one-node cluster", 30*time.Second, func() bool {
		l, members, ok := clusterView(c.apis[survivor])
		return ok && l == survivor && len(members) == 1
	})
	for key, value := range acked {
		if code, _, body, err := httpDo("GET", "http://"+c.apis[survivor]+"/v1/kv/"+key, ""); err != nil || code != 200 || body != value {
			t.Fatalf("after recovery %s = %d %q %v, want %q", key, code, body, err, value)
		}
	}
	if code, _, body, err := httpDo("PUT", "http://"+c.apis[survivor]+"/v1/kv/after-recovery", "x"); err != nil || code != 200 {
		t.Fatalf("a write after recovery = %d %s %v", code, body, err)
	}

	// A fresh node: one of the lost ids on a wiped data dir, added back.
	fresh := lost[0]
	if err := os.RemoveAll(filepath.Join(dir, fresh)); err != nil {
		t.Fatal(err)
	}
	startNodes(t, bin, c.path, []string{fresh}, c.apis)
	add := fmt.Sprintf(`{"id":%q,"raft":%q,"api":%q}`, fresh, raftAddrs[fresh], c.apis[fresh])
	waitFor(t, fresh+" added to the recovered cluster", 30*time.Second, func() bool {
		code, _, _, err := httpDo("POST", "http://"+c.apis[survivor]+"/v1/cluster/nodes", add, "Content-Type", "application/json")
		return err == nil && code == 200
	})
	waitFor(t, fresh+" caught up", 30*time.Second, func() bool {
		for key, value := range acked {
			code, _, body, err := httpDo("GET", "http://"+c.apis[fresh]+"/v1/kv/"+key+"?consistency=local", "")
			if err != nil || code != 200 || body != value {
				return false
			}
		}
		code, _, body, err := httpDo("GET", "http://"+c.apis[fresh]+"/v1/kv/after-recovery?consistency=local", "")
		return err == nil && code == 200 && body == "x"
	})
	if l, members, ok := clusterView(c.apis[fresh]); !ok || l != survivor || len(members) != 2 {
		t.Fatalf("%s sees leader %q and members %v, want %s and 2 members", fresh, l, members, survivor)
	}
}
