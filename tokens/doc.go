// Package tokens owns one-shot form tokens: generation (uuid v4), format
// checks, and issue/consume over the replicated store. Consume is GETDEL:
// exactly one consume of a live token succeeds, cluster-wide.
//
// It speaks no HTTP; package gateway turns its errors into answers.
package tokens
