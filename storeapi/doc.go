// Package storeapi is the vocabulary the replicated store shares with the
// listeners that call it: the errors a call can come back with (and which
// of them mean "unavailable"), request ids and the context that carries
// them, the reserved-key rule, the outcome of a pipelined command, and the
// views of a node and of the cluster.
//
// Package raftstore implements the store in these terms; gateway, api and
// resp declare the Store interface each needs in them (and in package
// fsm's), so none of them imports raftstore. It holds no state beyond the
// process's source of fresh request ids, and imports only package fsm.
package storeapi
