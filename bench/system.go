package bench

import (
	"fmt"
	"time"
)

// System is a running system the kv, contention and flash-sale scenarios
// load the same way: idemgate (a Target) or a baseline (*Redis, *Etcd).
type System interface {
	// System names it in results: "idemgate", "redis", "etcd".
	System() string
	// newLocker connects clients lock clients; ttl bounds how long a lock
	// outlives a client that never releases it, run how long the run lasts.
	newLocker(clients int, ttl, run time.Duration) (locker, error)
	// newShop connects clients consumers of one-shot tokens.
	newShop(clients int) (shop, error)
	// newOncer connects clients holders of once claims for a run of run;
	// errNoOnce when the system has no once protocol the bench measures.
	newOncer(clients int, run time.Duration) (oncer, error)
	// kv measures SETNX on fresh keys, then GETDEL of them.
	kv(cfg RunConfig) []Stats
	// serverPIDs are its server processes apart from the bench's (none
	// for a cluster the bench runs in its own process).
	serverPIDs() []int
}

// System is "idemgate", or the name the target was given (a TLS run's).
func (t Target) System() string {
	if t.Name != "" {
		return t.Name
	}
	return "idemgate"
}

func (t Target) kv(cfg RunConfig) []Stats { return KV(t, cfg) }

// System is "redis".
func (r *Redis) System() string { return "redis" }

func (r *Redis) kv(cfg RunConfig) []Stats { return RedisKV(r, cfg) }

// System is "etcd".
func (e *Etcd) System() string { return "etcd" }

func (e *Etcd) kv(cfg RunConfig) []Stats { return EtcdKV(e, cfg) }

// resultName names a scenario's result on sys: plain for idemgate, with
// the system and "(baseline)" for the others; baseline says which.
func resultName(sys System, scenario string) (name string, baseline bool) {
	if _, ok := sys.(Target); ok {
		return scenario, false
	}
	return fmt.Sprintf("%s %s (baseline)", sys.System(), scenario), true
}

// Tag marks results with the system and scenario they measured.
func Tag(results []Stats, system, scenario string) []Stats {
	for i := range results {
		results[i].System, results[i].Scenario = system, scenario
	}
	return results
}

// RunOn runs one of the scenarios every System offers (kv, contention,
// flashsale, once) on sys; kv gives SETNX then GETDEL.
func RunOn(sys System, scenario string, cfg RunConfig, lc LockConfig) []Stats {
	var out []Stats
	switch scenario {
	case "kv":
		out = sys.kv(cfg)
	case "contention":
		out = []Stats{Contention(sys, cfg, lc)}
	case "flashsale":
		out = []Stats{FlashSale(sys, cfg)}
	case "once":
		out = []Stats{Once(sys, cfg)}
		if t, ok := sys.(Target); ok {
			out = append(out, OnceRESP(t, cfg))
		}
	default:
		panic("bench: RunOn of " + scenario)
	}
	return Tag(out, sys.System(), scenario)
}
