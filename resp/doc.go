// Package resp is the Redis-protocol listener: RESP2 and RESP3 (HELLO) over
// TCP, so redis-cli, redis-benchmark and every Redis client library work
// as idemgate clients. It serves the KV keyspace (the one /v1/kv serves)
// and form tokens with Redis 7's reply shapes and error strings, on the
// store's Go API: writes go through Raft, reads are linearizable (read
// index) unless the connection sent READONLY.
//
// It owns the wire (reader.go parses, writer.go answers), the commands
// (commands*.go), the order of a connection's pipeline (pipeline.go:
// replies in request order, effects in request order, the writes of a
// pipeline handed to the leader together), transactions
// (commands_multi.go: MULTI/EXEC as one state machine command), Lua
// scripts (commands_script.go, script_call.go: run here, on package
// script's VM, against the store's reads in a sandbox the store makes;
// what a script wrote is one command), the connections and their
// limits (server.go) and its metrics. It never reaches below the store's
// interface into Raft or the state machine, and it never imports the
// HTTP listeners: authorization comes in as a function (Config.Auth).
package resp
