// Package history holds what the reliability tests (docs/reliability.md) check
// histories with: the porcupine model of idemgate's operations — KV SETNX,
// SET, CAS, GET, GETDEL, DELETE, form tokens, and records (begin, complete
// with fencing) — all with TTLs, partitioned by key.
//
// It imports nothing of idemgate: it describes what clients may observe,
// not how the store works.
package history
