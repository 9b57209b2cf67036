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
	"strconv"
	"strings"
	"time"
)

// onceLease is the lease every begin asks for: longer than any pair, so
// none runs out and is taken over.
const onceLease = 30 * time.Second

// oncePayload is every pair's payload, an SMS to send, in the once
// scenario and in the breakdown that explains it, for idemgate and etcd
// alike.
var oncePayload = []byte(`{"to":"+4912345","text":"welcome"}`)

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
	cpu := startCPU(sys)
	s := Run(cfg, func(c int, seq int64) error {
		return o.pair(c, fmt.Sprintf("o-%s-%d-%d", id, c, seq), oncePayload, []byte(fmt.Sprintf("sms-%d-%d", c, seq)))
	})
	s.CPU = cpu.per(s.Ops)
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

// OnceRESP is Once over the Redis-protocol listeners (IDEM.BEGIN, then
// IDEM.COMPLETE with the fence), one connection per client spread over the
// nodes: the same pair without HTTP, and under the store's own request ids.
func OnceRESP(t Target, cfg RunConfig) Stats {
	cfg.Name = "once over RESP (begin+complete)"
	if len(t.Resps) == 0 {
		return Stats{Name: cfg.Name, Skipped: "the cluster has no Redis-protocol listener (nodes[].resp)"}
	}
	conns := make([]*respConn, 0, cfg.Clients)
	for c := range cfg.Clients {
		conn, err := dialRESP(t.Resps[c%len(t.Resps)])
		if err != nil {
			closeAll(conns)
			return Stats{Name: cfg.Name, Skipped: err.Error()}
		}
		conns = append(conns, conn)
	}
	defer closeAll(conns)
	id := runID()
	lease := strconv.FormatInt(onceLease.Milliseconds(), 10)
	cpu := startCPU(t)
	s := Run(cfg, func(c int, seq int64) error {
		return respOncePair(conns[c], fmt.Sprintf("r-%s-%d-%d", id, c, seq), lease, string(oncePayload), fmt.Sprintf("sms-%d-%d", c, seq))
	})
	s.CPU = cpu.per(s.Ops)
	return s
}

// respOncePair begins key's claim on conn and completes it with result.
func respOncePair(conn *respConn, key, lease, payload, result string) error {
	conn.c.SetDeadline(time.Now().Add(10 * time.Second))
	conn.send("IDEM.BEGIN", "bench", key, lease, payload)
	if err := conn.w.Flush(); err != nil {
		return err
	}
	begun, err := conn.array()
	switch {
	case err != nil:
		return fmt.Errorf("IDEM.BEGIN: %w", err)
	case len(begun) != 3 || begun[0] != "begun":
		return fmt.Errorf("IDEM.BEGIN answered %q", begun)
	}
	if _, v, err := conn.do("IDEM.COMPLETE", "bench", key, begun[1], result); err != nil || v != "OK" {
		return fmt.Errorf("IDEM.COMPLETE: %q %v", v, err)
	}
	return nil
}

// array reads an array reply of bulk strings and integers (nil elements
// as "").
func (c *respConn) array() ([]string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if len(line) < 3 || line[0] != '*' {
		if len(line) > 0 && line[0] == '-' {
			return nil, errors.New(strings.TrimSpace(line[1:]))
		}
		return nil, fmt.Errorf("not an array: %q", line)
	}
	n, err := strconv.Atoi(line[1 : len(line)-2])
	if err != nil || n < 0 || n > 16 {
		return nil, fmt.Errorf("array of %q", line)
	}
	out := make([]string, n)
	for i := range out {
		_, v, err := c.reply()
		if err != nil && !errors.Is(err, errNilReply) {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}
