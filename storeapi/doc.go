// Package storeapi is what the replicated store shares with the listeners
// that call it, beyond the commands themselves (package command): the
// errors a call can come back with (and which of them mean
// "unavailable"), what each face answers for every store error
// (answers.go), request ids and the context that carries them, the
// reserved-key rule, the outcome of a pipelined command, the views of a
// node and of the cluster, and a node's backup and snapshot as it hands
// them out (backup.go; the backup file's format is package backup's).
//
// Package raftstore implements the store in these terms; gateway, api and
// resp declare the Store interface each needs in them (and in package
// command's), so none of them imports raftstore or the state machine. It
// holds no state beyond the process's source of fresh request ids, and
// imports only package command.
package storeapi
