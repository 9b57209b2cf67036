// Package faults injects network faults for the reliability tests: one TCP
// proxy per directed link between two nodes (the Raft transport's address
// provider sends a node's dials to its proxies), which can pass traffic,
// blackhole it, delay it, or reset its connections. Blackholing the links
// from A to B but not from B to A is a one-way partition. Loopback only.
package faults
