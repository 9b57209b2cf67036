// Package node wires one idemgate node from a cluster file: the replicated
// store (raftstore), form tokens, the proxy (gateway), the JSON API (api)
// and the Redis face (resp) with their API tokens (auth), metrics,
// TLS material and tokens (reloaded on SIGHUP), each configured from its
// package's defaults and what the file sets. `idemgate serve` runs one
// node; the demo and the bench start several in one process
// (internal/democluster). It adds no behaviour of its own: the packages it
// wires own it.
package node
