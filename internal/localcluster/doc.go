// Package localcluster runs n nodes of a Raft cluster in one process, on
// loopback, with their files in a test's temporary directory: it starts,
// stops and restarts them and waits for a leader or for the replicas to
// agree. It knows nodes only through Node and Spec, so raftstore's own
// tests can use it as well as the tests of the packages above (through
// internal/testcluster). Only tests import it.
package localcluster
