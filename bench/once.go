package bench

// The once scenario: a consumer's claim on a piece of work, begun and
// completed, as many times a second as clients can: idemgate's once claims
// beside the two etcd transactions a team writes for the same thing.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"time"
)

// onceLease is the lease every begin asks for: longer than any pair, so
// none runs out and is taken over.
const onceLease = 30 * time.Second

// oncer is one system's once protocol, per client connection c.
type oncer interface {
	// pair claims key (a key never used before) for payload and completes
	// the claim with result; an error when either step did not answer as
	// a first claim does.
	pair(c int, key string, payload, result []byte) error
	close()
}

// errNoOnce: the system has no once protocol the bench measures.
var errNoOnce = errors.New("no once protocol measured on this system (SET NX and a script would be one)")

// Once runs cfg.Clients clients, each beginning a claim on a fresh key and
// completing it, over and over. Ops are pairs; P50-Max a pair's time.
func Once(sys System, cfg RunConfig) Stats {
	name, baseline := resultName(sys, "once")
	if !baseline {
		name += " (begin+complete)"
	}
	cfg.Name = name
	o, err := sys.newOncer(cfg.Clients, cfg.Duration)
	if err != nil {
		return Stats{Name: name, Baseline: baseline, Skipped: err.Error()}
	}
	defer o.close()
	id := runID()
	payload := []byte(`{"to":"+4912345","text":"welcome"}`)
	s := Run(cfg, func(c int, seq int64) error {
		return o.pair(c, fmt.Sprintf("o-%s-%d-%d", id, c, seq), payload, []byte(fmt.Sprintf("sms-%d-%d", c, seq)))
	})
	s.Baseline = baseline
	return s
}

// targetOncer is idemgate's once claims over the HTTP API, as client.Once
// sends them: each call under an Idempotency-Key of its own, so that a
// retry after a lost answer is answered as the first attempt was.
type targetOncer struct{ t Target }

func (t Target) newOncer(int, time.Duration) (oncer, error) { return targetOncer{t}, nil }

func (targetOncer) close() {}

func (o targetOncer) pair(c int, key string, payload, result []byte) error {
	base := o.t.APIs[c%len(o.t.APIs)] + "/v1/once/bench/" + url.PathEscape(key)
	st, _, body, err := call("POST", base+"/begin?lease="+onceLease.String(), key+"-b", payload)
	if err := expect(st, err, 201); err != nil {
		return fmt.Errorf("begin: %w: %s", err, body)
	}
	var b struct {
		Fence uint64 `json:"fence"`
	}
	if err := json.Unmarshal(body, &b); err != nil || b.Fence == 0 {
		return fmt.Errorf("begin: %s", body)
	}
	complete := fmt.Sprintf(`{"fence":%d,"result":%q}`, b.Fence, base64.StdEncoding.EncodeToString(result))
	st, _, body, err = callJSON(base+"/complete", key+"-c", []byte(complete))
	if err := expect(st, err, 200); err != nil {
		return fmt.Errorf("complete: %w: %s", err, body)
	}
	return nil
}

// etcdOncer is a claim on etcd: a transaction that puts the key, with the
// client's lease, only if it does not exist (the begin; its revision is
// the fence), then one that puts the result only if the key's mod revision
// is still the begin's (the complete, refused after a takeover).
type etcdOncer struct {
	e      *Etcd
	leases []string
}

func (e *Etcd) newOncer(clients int, run time.Duration) (oncer, error) {
	l, err := e.newLocker(clients, onceLease, run)
	if err != nil {
		return nil, err
	}
	return etcdOncer{e: e, leases: l.(*etcdLocker).leases}, nil
}

func (etcdOncer) close() {}

func (o etcdOncer) pair(c int, key string, payload, result []byte) error {
	node := o.e.clients[c%len(o.e.clients)]
	k := b64(key)
	r, err := etcdTxn(node,
		fmt.Sprintf(`[{"key":%q,"result":"EQUAL","target":"CREATE","create_revision":"0"}]`, k),
		fmt.Sprintf(`[{"request_put":{"key":%q,"value":%q,"lease":%q}}]`, k, b64("begun:"+string(payload)), o.leases[c]))
	switch {
	case err != nil:
		return fmt.Errorf("begin: %w", err)
	case !r.Succeeded:
		return fmt.Errorf("begin: %s exists", key)
	}
	r, err = etcdTxn(node,
		fmt.Sprintf(`[{"key":%q,"result":"EQUAL","target":"MOD","mod_revision":"%d"}]`, k, r.Header.Revision),
		fmt.Sprintf(`[{"request_put":{"key":%q,"value":%q,"lease":%q}}]`, k, b64("done:"+string(result)), o.leases[c]))
	switch {
	case err != nil:
		return fmt.Errorf("complete: %w", err)
	case !r.Succeeded:
		return fmt.Errorf("complete: %s was taken over", key)
	}
	return nil
}

func (r *Redis) newOncer(int, time.Duration) (oncer, error) { return nil, errNoOnce }
