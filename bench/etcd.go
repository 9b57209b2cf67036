package bench

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/valyala/fasthttp"
)

// Etcd is a 3-member etcd cluster the bench started on loopback: the
// replicated, linearizable peer of idemgate. The bench speaks etcd's JSON
// gateway (/v3/kv/...), so idemgate's module needs no etcd client.
type Etcd struct {
	clients []string // base URLs
	dir     string
	procs   []*proc
	// ClientLoad is bench/etcd's clientload command (FindEtcdClientLoad):
	// with it the kv rows add SETNX through etcd's own Go client, as etcd
	// users write it; without it ClientLoadSkipped says why.
	ClientLoad, ClientLoadSkipped string
}

// StartEtcd starts an n-member cluster of bin; extra are flags every
// member gets.
func StartEtcd(bin string, n int, extra ...string) (*Etcd, error) {
	dir, err := os.MkdirTemp("", "idemgate-bench-etcd-")
	if err != nil {
		return nil, err
	}
	e := &Etcd{dir: dir}
	peers, clients := make([]string, n), make([]string, n)
	for i := range peers {
		p, err := freePort()
		if err != nil {
			return nil, err
		}
		c, err := freePort()
		if err != nil {
			return nil, err
		}
		peers[i], clients[i] = "http://"+p, "http://"+c
	}
	var initial []string
	for i, p := range peers {
		initial = append(initial, fmt.Sprintf("e%d=%s", i+1, p))
	}
	for i := range peers {
		args := []string{"--name", fmt.Sprintf("e%d", i+1), "--data-dir", fmt.Sprintf("%s/e%d", dir, i+1),
			"--listen-client-urls", clients[i], "--advertise-client-urls", clients[i],
			"--listen-peer-urls", peers[i], "--initial-advertise-peer-urls", peers[i],
			"--initial-cluster", strings.Join(initial, ","), "--initial-cluster-state", "new",
			"--initial-cluster-token", "idemgate-bench", "--log-level", "error"}
		p, err := startProc(dir, fmt.Sprintf("etcd%d", i+1), bin, append(args, extra...)...)
		if err != nil {
			e.Stop()
			return nil, err
		}
		e.procs = append(e.procs, p)
	}
	e.clients = clients
	if !waitUntil(30*time.Second, func() bool {
		for _, c := range clients {
			st, _, body, err := call("GET", c+"/health", "", nil)
			if err != nil || st != 200 || !strings.Contains(string(body), `"true"`) {
				return false
			}
		}
		return true
	}) {
		e.Stop()
		return nil, fmt.Errorf("etcd did not become healthy (logs in %s)", dir)
	}
	return e, nil
}

// Stop kills the members and removes their files.
func (e *Etcd) Stop() {
	for _, p := range e.procs {
		p.stop()
	}
	os.RemoveAll(e.dir)
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// etcdSETNX is SETNX as etcd users write it: a transaction that puts the key
// only if its create revision is 0 (it does not exist).
func etcdSETNX(url, key, value string) (bool, error) {
	body := fmt.Sprintf(`{"compare":[{"key":%q,"result":"EQUAL","target":"CREATE","create_revision":"0"}],"success":[{"request_put":{"key":%q,"value":%q}}]}`,
		b64(key), b64(key), b64(value))
	st, _, resp, err := call("POST", url+"/v3/kv/txn", "", []byte(body))
	if err != nil {
		return false, err
	}
	if st != fasthttp.StatusOK {
		return false, fmt.Errorf("txn: status %d: %s", st, resp)
	}
	return strings.Contains(string(resp), `"succeeded":true`), nil
}

// etcdGETDEL is a delete that returns the previous key-value.
func etcdGETDEL(url, key string) (bool, error) {
	st, _, resp, err := call("POST", url+"/v3/kv/deleterange", "", []byte(fmt.Sprintf(`{"key":%q,"prev_kv":true}`, b64(key))))
	if err != nil {
		return false, err
	}
	if st != fasthttp.StatusOK {
		return false, fmt.Errorf("deleterange: status %d: %s", st, resp)
	}
	return strings.Contains(string(resp), `"deleted":"1"`) && strings.Contains(string(resp), `"prev_kvs"`), nil
}

// EtcdKV measures SETNX and GETDEL on the etcd cluster, clients spread over
// its members.
func EtcdKV(e *Etcd, cfg RunConfig) []Stats {
	id := runID()
	var created atomicMax
	cfg.Name = "etcd SETNX txn (baseline)"
	set := Run(cfg, func(c int, seq int64) error {
		ok, err := etcdSETNX(e.clients[c%len(e.clients)], fmt.Sprintf("k-%s-%d", id, seq), "v")
		if err == nil && !ok {
			err = fmt.Errorf("SETNX of a fresh key failed")
		}
		if err == nil {
			created.set(seq + 1)
		}
		return err
	})
	ok, err := etcdSETNX(e.clients[0], fmt.Sprintf("k-%s-0", id), "w")
	set.Check, set.CheckOK, set.Baseline = fmt.Sprintf("SETNX on an existing key succeeded: %v", ok), err == nil && !ok, true
	cfg.Name, cfg.Requests = "etcd GETDEL (baseline)", created.get()
	get := Run(cfg, func(c int, seq int64) error {
		_, err := etcdGETDEL(e.clients[c%len(e.clients)], fmt.Sprintf("k-%s-%d", id, seq))
		return err
	})
	ok, err = etcdGETDEL(e.clients[1%len(e.clients)], fmt.Sprintf("k-%s-0", id))
	get.Check, get.CheckOK, get.Baseline = fmt.Sprintf("second GETDEL deleted: %v", ok), err == nil && !ok, true
	native := Stats{Name: etcdClientSETNXName, Baseline: true, Skipped: e.ClientLoadSkipped}
	if e.ClientLoad != "" {
		native = etcdClientSETNX(e, cfg)
	}
	return []Stats{set, get, native}
}

const etcdClientSETNXName = "etcd SETNX txn, clientv3 (baseline)"

// etcdClientSETNX runs the SETNX transaction through etcd's own Go client
// (gRPC, bench/etcd/clientload), cfg.Clients requests in flight spread over
// the members, as EtcdKV's JSON-gateway row does.
func etcdClientSETNX(e *Etcd, cfg RunConfig) Stats {
	st := Stats{Name: etcdClientSETNXName, Baseline: true, Clients: cfg.Clients}
	args := []string{"-endpoints", strings.Join(e.clients, ","), "-clients", fmt.Sprint(cfg.Clients),
		"-duration", cfg.Duration.String(), "-requests", fmt.Sprint(cfg.Requests), "-prefix", "c-" + runID()}
	out, err := exec.Command(e.ClientLoad, args...).Output()
	var r struct {
		Ops     int64   `json:"ops"`
		Seconds float64 `json:"seconds"`
		Errors  int64   `json:"errors"`
		Refused int64   `json:"refused"`
		P50     float64 `json:"p50_ms"`
		P90     float64 `json:"p90_ms"`
		P99     float64 `json:"p99_ms"`
		Max     float64 `json:"max_ms"`
		First   string  `json:"first_error"`
	}
	if err == nil {
		err = json.Unmarshal(out, &r)
	}
	if err != nil {
		st.Skipped = fmt.Sprintf("%s: %v", filepath.Base(e.ClientLoad), err)
		return st
	}
	ms := func(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }
	st.Ops, st.Errors, st.FirstError = r.Ops, r.Errors, r.First
	st.Elapsed = time.Duration(r.Seconds * float64(time.Second))
	if r.Seconds > 0 {
		st.OpsPerSec = float64(r.Ops) / r.Seconds
	}
	st.P50, st.P90, st.P99, st.Max = ms(r.P50), ms(r.P90), ms(r.P99), ms(r.Max)
	st.Check = fmt.Sprintf("SETNX of a fresh key refused: %d", r.Refused)
	st.CheckOK = r.Refused == 0 && r.Ops > 0
	return st
}
