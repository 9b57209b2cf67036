package bench

// Locks and one-shot tokens on the Redis baseline, as Redis users write them.

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// redisRelease is the compare-and-delete of Redis's lock recipe: delete the
// key only if it still holds the caller's random value.
const redisRelease = `if redis.call("get", KEYS[1]) == ARGV[1] then return redis.call("del", KEYS[1]) else return 0 end`

// redisLocker takes a lock with SET key val NX PX ttl and gives it back
// with redisRelease. Redis has no fencing token: the value is checked at
// release only.
type redisLocker struct {
	conns []*respConn
	sha   string
	px    string
}

func (r *Redis) newLocker(clients int, ttl, _ time.Duration) (locker, error) {
	conns, err := dialRESPs(r.addr, clients)
	if err != nil {
		return nil, err
	}
	_, sha, err := conns[0].do("SCRIPT", "LOAD", redisRelease)
	if err != nil {
		closeAll(conns)
		return nil, fmt.Errorf("SCRIPT LOAD: %w", err)
	}
	return &redisLocker{conns: conns, sha: sha, px: strconv.FormatInt(ttl.Milliseconds(), 10)}, nil
}

func (l *redisLocker) close() { closeAll(l.conns) }

func (l *redisLocker) acquire(c int, key, val string) (bool, uint64, error) {
	_, v, err := l.conns[c].do("SET", key, val, "NX", "PX", l.px)
	switch {
	case errors.Is(err, errNilReply):
		return false, 0, nil
	case err != nil:
		return false, 0, err
	case v != "OK":
		return false, 0, fmt.Errorf("SET NX answered %q", v)
	}
	return true, 0, nil
}

func (l *redisLocker) release(c int, key, val string, _ uint64) (bool, uint64, error) {
	_, v, err := l.conns[c].do("EVALSHA", l.sha, "1", key, val)
	if err != nil {
		return false, 0, err
	}
	return v == "1", 0, nil
}

// redisShop is one-shot tokens as Redis users keep them: SET to issue,
// GETDEL to consume. A lost answer cannot be settled: a retry of GETDEL
// would find the token gone whoever took it.
type redisShop struct{ conns []*respConn }

func (r *Redis) newShop(clients int) (shop, error) {
	conns, err := dialRESPs(r.addr, clients)
	if err != nil {
		return nil, err
	}
	return redisShop{conns}, nil
}

func (s redisShop) close() { closeAll(s.conns) }

func (s redisShop) issue(n int) ([]string, error) {
	id := runID()
	toks := make([]string, n)
	for i := range toks {
		toks[i] = fmt.Sprintf("tok-%s-%d", id, i)
		if _, _, err := s.conns[0].do("SET", toks[i], "1", "PX", "600000"); err != nil {
			return nil, fmt.Errorf("issuing tokens: %w", err)
		}
	}
	return toks, nil
}

func (s redisShop) consume(c int, tok, _ string) (int, bool, string) {
	_, v, err := s.conns[c].do("GETDEL", tok)
	switch {
	case errors.Is(err, errNilReply):
		return 409, false, ""
	case err != nil:
		return 0, false, err.Error()
	case v != "1":
		return 0, false, fmt.Sprintf("GETDEL returned %q", v)
	}
	return 200, false, ""
}
