package bench

// Locks and one-shot tokens on the etcd baseline, as etcd users write them
// (the transactions of clientv3/concurrency), through etcd's JSON gateway.

import (
	"encoding/json"
	"fmt"
	"time"
)

// etcdTxnResult is the part of a /v3/kv/txn answer the bench reads.
type etcdTxnResult struct {
	Header struct {
		Revision uint64 `json:"revision,string"`
	} `json:"header"`
	Succeeded bool `json:"succeeded"`
}

// etcdTxn runs If compare Then success, each a JSON list of etcd's
// Compare and RequestOp messages.
func etcdTxn(url, compare, success string) (etcdTxnResult, error) {
	var r etcdTxnResult
	st, _, body, err := call("POST", url+"/v3/kv/txn", "", []byte(`{"compare":`+compare+`,"success":`+success+`}`))
	if err != nil {
		return r, err
	}
	if st != 200 {
		return r, fmt.Errorf("txn: status %d: %s", st, body)
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return r, fmt.Errorf("txn: %w", err)
	}
	return r, nil
}

// etcdLocker takes a lock with a transaction that puts the key, attached
// to the client's lease, only if it does not exist (create revision 0),
// and releases it with one that deletes it only if its mod revision is
// still the one acquired. Revisions are the fencing tokens.
type etcdLocker struct {
	e      *Etcd
	leases []string
}

func (e *Etcd) newLocker(clients int, ttl, run time.Duration) (locker, error) {
	l := &etcdLocker{e: e, leases: make([]string, clients)}
	// One lease per client, as a clientv3 session holds one; it outlives
	// the run, since the bench sends no keep-alives.
	grant := fmt.Sprintf(`{"TTL":%d}`, int64((ttl + run).Seconds()))
	for c := range l.leases {
		st, _, body, err := call("POST", e.clients[c%len(e.clients)]+"/v3/lease/grant", "", []byte(grant))
		if err := expect(st, err, 200); err != nil {
			return nil, fmt.Errorf("lease grant: %w", err)
		}
		var g struct{ ID string }
		if err := json.Unmarshal(body, &g); err != nil || g.ID == "" {
			return nil, fmt.Errorf("lease grant: %s", body)
		}
		l.leases[c] = g.ID
	}
	return l, nil
}

func (l *etcdLocker) close() {}

func (l *etcdLocker) acquire(c int, key, val string) (bool, uint64, error) {
	r, err := etcdTxn(l.e.clients[c%len(l.e.clients)],
		fmt.Sprintf(`[{"key":%q,"result":"EQUAL","target":"CREATE","create_revision":"0"}]`, b64(key)),
		fmt.Sprintf(`[{"request_put":{"key":%q,"value":%q,"lease":%q}}]`, b64(key), b64(val), l.leases[c]))
	if err != nil || !r.Succeeded {
		return false, 0, err
	}
	return true, r.Header.Revision, nil
}

func (l *etcdLocker) release(c int, key, _ string, version uint64) (bool, uint64, error) {
	r, err := etcdTxn(l.e.clients[c%len(l.e.clients)],
		fmt.Sprintf(`[{"key":%q,"result":"EQUAL","target":"MOD","mod_revision":"%d"}]`, b64(key), version),
		fmt.Sprintf(`[{"request_delete_range":{"key":%q}}]`, b64(key)))
	if err != nil || !r.Succeeded {
		return false, 0, err
	}
	return true, r.Header.Revision, nil
}

// etcdShop is one-shot tokens on etcd: a put to issue, a transaction that
// deletes the key only if it exists (version > 0) to consume. A lost
// answer cannot be settled: a retry would find the key gone whoever took it.
type etcdShop struct{ e *Etcd }

func (e *Etcd) newShop(int) (shop, error) { return etcdShop{e}, nil }

func (s etcdShop) close() {}

func (s etcdShop) issue(n int) ([]string, error) {
	id := runID()
	toks := make([]string, n)
	err := parallel(n, func(w, i int) error {
		toks[i] = fmt.Sprintf("tok-%s-%d", id, i)
		st, _, _, err := call("POST", s.e.clients[w%len(s.e.clients)]+"/v3/kv/put", "", []byte(fmt.Sprintf(`{"key":%q,"value":%q}`, b64(toks[i]), b64("1"))))
		return expect(st, err, 200)
	})
	if err != nil {
		return nil, fmt.Errorf("issuing tokens: %w", err)
	}
	return toks, nil
}

func (s etcdShop) consume(c int, tok, _ string) (int, bool, string) {
	r, err := etcdTxn(s.e.clients[c%len(s.e.clients)],
		fmt.Sprintf(`[{"key":%q,"result":"GREATER","target":"VERSION","version":"0"}]`, b64(tok)),
		fmt.Sprintf(`[{"request_delete_range":{"key":%q}}]`, b64(tok)))
	switch {
	case err != nil:
		return 0, false, err.Error()
	case !r.Succeeded:
		return 409, false, ""
	}
	return 200, false, ""
}
