// Package command is the vocabulary the replicated store and its faces
// speak: the state machine's commands (one table, table.go: each command's
// type, name, fields, rules and the properties every face derives its own
// table from, Op), their constructors and compact binary encoding, the
// results they answer, the errors a result carries and what each face
// answers for it (answer.go), and the values a read returns (a KV entry, a
// record, a claim).
//
// It holds no state and imports no storage: package fsm applies these
// commands to bbolt, attaching its apply functions to the table's rows by
// Type; package raftstore proposes them; gateway, api and resp build them
// and read their results, and none of them needs the engine's package for
// it. The encodings are the Raft log's and a forwarded result's wire
// format: Type and Code values are never renumbered, and a change of
// layout is a new encoding version that still decodes the old.
package command
