// Package node wires one idemgate node from a cluster file: the replicated
// store (raftstore), form tokens, the gateway and API listeners, metrics,
// TLS material and API tokens (reloaded on SIGHUP), each configured from its
// package's defaults and what the file sets. `idemgate serve` runs one node;
// the demo and the bench start several in one process (StartLocal). It adds
// no behaviour of its own: the packages it wires own it.
package node
