package bench

// The size of etcd's files for the same keys as idemgate's: the baseline of
// "fsm.db ≤ 2× etcd's db". Keys go in through etcd's JSON gateway in
// transactions of up to etcdMaxTxnOps puts, several at once, and each
// member's files are measured as loaded and again after the compaction and
// defragmentation etcd operators run.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// etcdMaxTxnOps is etcd's default --max-txn-ops: the most puts one
// transaction may carry.
const etcdMaxTxnOps = 128

// etcdBatchInterval is twice etcd's --backend-batch-interval: a member
// commits what it applied to its file at least this often, and reports the
// size in use as of its last commit.
const etcdBatchInterval = 200 * time.Millisecond

// EtcdSizeConfig says what EtcdSize loads.
type EtcdSizeConfig struct {
	// Keys are written as "key-%010d", 0 to Keys-1, as the scale scenario
	// names idemgate's.
	Keys int
	// ValueBytes is each value's length; 0 means 100.
	ValueBytes int
	// Lease attaches every key to one lease (24h), as idemgate's keys each
	// carry an expiry: the key's stored form then holds the lease id.
	Lease bool
	// Workers is the transactions in flight at once, spread over the
	// members; 0 means 8.
	Workers int
	// QuotaBytes is each member's --quota-backend-bytes; 0 means 8 GiB,
	// etcd's largest advised quota (its default, 2 GiB, is less than 10M
	// keys take).
	QuotaBytes int64
}

// EtcdMemberSize is one member's files.
type EtcdMemberSize struct {
	Name string `json:"name"`
	// DBBytes is member/snap/db's length; DBInUse is what etcd reports in
	// use of it (the rest is free pages); DirBytes is the data directory's
	// files, WAL and Raft snapshots included, as du counts them (blocks
	// allocated).
	DBBytes  int64 `json:"db_bytes"`
	DBInUse  int64 `json:"db_in_use"`
	DirBytes int64 `json:"dir_bytes"`
}

// EtcdSizeResult is what EtcdSize measured.
type EtcdSizeResult struct {
	Keys       int  `json:"keys"`
	ValueBytes int  `json:"value_bytes"`
	Lease      bool `json:"lease"`
	// Loaded is each member after the load; Defragmented after a
	// compaction at the last revision and a defragmentation of each member.
	Loaded       []EtcdMemberSize `json:"loaded"`
	Defragmented []EtcdMemberSize `json:"defragmented"`
	LoadTime     time.Duration    `json:"load_ns"`
	DefragTime   time.Duration    `json:"defrag_ns"`
}

// String is the result in a few lines, member by member.
func (r EtcdSizeResult) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "etcd, %d keys of %d bytes, lease %v: loaded in %s, compacted and defragmented in %s\n",
		r.Keys, r.ValueBytes, r.Lease, r.LoadTime.Round(time.Millisecond), r.DefragTime.Round(time.Millisecond))
	for i, m := range r.Loaded {
		d := EtcdMemberSize{}
		if i < len(r.Defragmented) {
			d = r.Defragmented[i]
		}
		fmt.Fprintf(&b, "  %s: db %s (in use %s), dir %s; defragmented: db %s (in use %s), dir %s\n", m.Name,
			mib(m.DBBytes), mib(m.DBInUse), mib(m.DirBytes), mib(d.DBBytes), mib(d.DBInUse), mib(d.DirBytes))
	}
	return b.String()
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// etcdClient is the maintenance calls' client: a defragmentation of a large
// database takes longer than the bench's 10-second client allows.
var etcdClient = &http.Client{Timeout: 10 * time.Minute, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// EtcdSize starts a 3-member etcd of bin, loads cfg.Keys keys into it,
// checks every member holds them all, measures each member's files, then
// compacts, defragments and measures again. Progress lines go to progress.
func EtcdSize(bin string, cfg EtcdSizeConfig, progress io.Writer) (EtcdSizeResult, error) {
	if cfg.Keys < 1 {
		return EtcdSizeResult{}, fmt.Errorf("bench: etcd size: keys = %d, want 1 or more", cfg.Keys)
	}
	if cfg.ValueBytes <= 0 {
		cfg.ValueBytes = 100
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 8
	}
	if cfg.QuotaBytes <= 0 {
		cfg.QuotaBytes = 8 << 30
	}
	e, err := StartEtcd(bin, 3, "--quota-backend-bytes", strconv.FormatInt(cfg.QuotaBytes, 10))
	if err != nil {
		return EtcdSizeResult{}, err
	}
	defer e.Stop()
	res := EtcdSizeResult{Keys: cfg.Keys, ValueBytes: cfg.ValueBytes, Lease: cfg.Lease}
	start := time.Now()
	if err := etcdLoad(e, cfg, progress); err != nil {
		return res, err
	}
	res.LoadTime = time.Since(start)
	for _, c := range e.clients {
		if err := etcdCheckKeys(c, cfg); err != nil {
			return res, err
		}
	}
	time.Sleep(etcdBatchInterval) // what was applied is committed to the file
	if res.Loaded, err = etcdMemberSizes(e); err != nil {
		return res, err
	}
	fmt.Fprintf(progress, "bench: etcd: %d keys loaded and readable on every member in %s; compacting and defragmenting\n", cfg.Keys, res.LoadTime.Round(time.Millisecond))
	start = time.Now()
	if err := etcdCompactDefrag(e); err != nil {
		return res, err
	}
	res.DefragTime = time.Since(start)
	time.Sleep(etcdBatchInterval)
	if res.Defragmented, err = etcdMemberSizes(e); err != nil {
		return res, err
	}
	return res, nil
}

// etcdKey is the i-th key of the load.
func etcdKey(i int) string { return fmt.Sprintf("key-%010d", i) }

// etcdValue is the i-th key's value: n bytes that differ from key to key,
// as real values do.
func etcdValue(i, n int) []byte {
	v := bytes.Repeat([]byte{'v'}, n)
	copy(v, strconv.Itoa(i))
	return v
}

// etcdLoad writes the keys in transactions of etcdMaxTxnOps puts,
// cfg.Workers at once, each worker on its own member in turn.
func etcdLoad(e *Etcd, cfg EtcdSizeConfig, progress io.Writer) error {
	lease := ""
	if cfg.Lease {
		var grant struct {
			ID string `json:"ID"`
		}
		if err := etcdPost(e.clients[0]+"/v3/lease/grant", map[string]any{"TTL": "86400"}, &grant); err != nil || grant.ID == "" {
			return fmt.Errorf("bench: etcd lease grant: %v (id %q)", err, grant.ID)
		}
		lease = grant.ID
	}
	txns := (cfg.Keys + etcdMaxTxnOps - 1) / etcdMaxTxnOps
	var next, done atomic.Int64
	var firstErr error
	var once sync.Once
	var wg sync.WaitGroup
	for w := 0; w < cfg.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			url := e.clients[w%len(e.clients)] + "/v3/kv/txn"
			for {
				t := int(next.Add(1) - 1)
				if t >= txns {
					return
				}
				if err := etcdPutTxn(url, t*etcdMaxTxnOps, min((t+1)*etcdMaxTxnOps, cfg.Keys), cfg.ValueBytes, lease); err != nil {
					once.Do(func() { firstErr = err })
					next.Store(int64(txns)) // the others stop too
					return
				}
				if d := done.Add(1); d%int64(max(txns/10, 1)) == 0 {
					fmt.Fprintf(progress, "bench: etcd: %d of %d keys\n", min(int(d)*etcdMaxTxnOps, cfg.Keys), cfg.Keys)
				}
			}
		}()
	}
	wg.Wait()
	return firstErr
}

type etcdPutOp struct {
	Key   []byte `json:"key"` // encoding/json writes []byte as base64, as the gateway wants
	Value []byte `json:"value"`
	Lease string `json:"lease,omitempty"`
}

// etcdPutTxn puts keys from to to-1 in one transaction.
func etcdPutTxn(url string, from, to, valueBytes int, lease string) error {
	type op struct {
		Put etcdPutOp `json:"request_put"`
	}
	ops := make([]op, 0, to-from)
	for i := from; i < to; i++ {
		ops = append(ops, op{etcdPutOp{Key: []byte(etcdKey(i)), Value: etcdValue(i, valueBytes), Lease: lease}})
	}
	var resp struct {
		Succeeded bool `json:"succeeded"`
	}
	if err := etcdPost(url, map[string]any{"success": ops}, &resp); err != nil {
		return fmt.Errorf("bench: etcd txn of keys %d-%d: %w", from, to-1, err)
	}
	if !resp.Succeeded {
		return fmt.Errorf("bench: etcd txn of keys %d-%d did not succeed", from, to-1)
	}
	return nil
}

// etcdCheckKeys checks that a member counts every key of the load, and
// holds the first and the last with their values.
func etcdCheckKeys(url string, cfg EtcdSizeConfig) error {
	var count struct {
		Count string `json:"count"`
	}
	if err := etcdPost(url+"/v3/kv/range", map[string]any{"key": []byte("key-"), "range_end": []byte("key."), "count_only": true}, &count); err != nil {
		return fmt.Errorf("bench: etcd count at %s: %w", url, err)
	}
	if count.Count != strconv.Itoa(cfg.Keys) {
		return fmt.Errorf("bench: etcd at %s counts %q keys, want %d", url, count.Count, cfg.Keys)
	}
	for _, i := range []int{0, cfg.Keys - 1} {
		var got struct {
			KVs []struct {
				Value []byte `json:"value"`
				Lease string `json:"lease"`
			} `json:"kvs"`
		}
		if err := etcdPost(url+"/v3/kv/range", map[string]any{"key": []byte(etcdKey(i))}, &got); err != nil {
			return fmt.Errorf("bench: etcd get %s at %s: %w", etcdKey(i), url, err)
		}
		if len(got.KVs) != 1 || !bytes.Equal(got.KVs[0].Value, etcdValue(i, cfg.ValueBytes)) {
			return fmt.Errorf("bench: etcd at %s: %s reads %d values, not the one written", url, etcdKey(i), len(got.KVs))
		}
		if cfg.Lease && got.KVs[0].Lease == "" {
			return fmt.Errorf("bench: etcd at %s: %s has no lease", url, etcdKey(i))
		}
	}
	return nil
}

// etcdCompactDefrag compacts at the current revision (physically: it
// returns once every member has removed the old revisions), then
// defragments the members one after another, as etcdctl does.
func etcdCompactDefrag(e *Etcd) error {
	var st struct {
		Header struct {
			Revision string `json:"revision"`
		} `json:"header"`
	}
	if err := etcdPost(e.clients[0]+"/v3/maintenance/status", map[string]any{}, &st); err != nil {
		return fmt.Errorf("bench: etcd status: %w", err)
	}
	if err := etcdPost(e.clients[0]+"/v3/kv/compaction", map[string]any{"revision": st.Header.Revision, "physical": true}, nil); err != nil {
		return fmt.Errorf("bench: etcd compaction at revision %s: %w", st.Header.Revision, err)
	}
	for _, c := range e.clients {
		if err := etcdPost(c+"/v3/maintenance/defragment", map[string]any{}, nil); err != nil {
			return fmt.Errorf("bench: etcd defragment %s: %w", c, err)
		}
	}
	return nil
}

// etcdMemberSizes measures each member's files, with the database size in
// use as the member reports it.
func etcdMemberSizes(e *Etcd) ([]EtcdMemberSize, error) {
	var out []EtcdMemberSize
	for i, c := range e.clients {
		name := fmt.Sprintf("e%d", i+1)
		dir := filepath.Join(e.dir, name)
		fi, err := os.Stat(filepath.Join(dir, "member", "snap", "db"))
		if err != nil {
			return nil, fmt.Errorf("bench: etcd %s: %w", name, err)
		}
		du, err := diskUsage(dir)
		if err != nil {
			return nil, fmt.Errorf("bench: etcd %s: %w", name, err)
		}
		var st struct {
			DBSizeInUse string `json:"dbSizeInUse"`
		}
		if err := etcdPost(c+"/v3/maintenance/status", map[string]any{}, &st); err != nil {
			return nil, fmt.Errorf("bench: etcd %s status: %w", name, err)
		}
		inUse, _ := strconv.ParseInt(st.DBSizeInUse, 10, 64)
		out = append(out, EtcdMemberSize{Name: name, DBBytes: fi.Size(), DBInUse: inUse, DirBytes: du})
	}
	return out, nil
}

// diskUsage is the bytes allocated to the files under dir, as du counts
// them: etcd preallocates its WAL segments (64 MiB each).
func diskUsage(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			n += st.Blocks * 512
		} else {
			n += fi.Size()
		}
		return nil
	})
	return n, err
}

// etcdPost posts body as JSON to one of etcd's gateway endpoints and
// decodes the answer into out (nil: the answer is only checked for 200).
func etcdPost(url string, body, out any) error {
	b, err := json.Marshal(body)
	if err != nil {
		return err
	}
	resp, err := etcdClient.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d: %s", resp.StatusCode, truncateBody(data))
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("answer %s: %w", truncateBody(data), err)
	}
	return nil
}

func truncateBody(b []byte) string {
	if len(b) > 200 {
		return string(b[:200]) + "..."
	}
	return string(b)
}
