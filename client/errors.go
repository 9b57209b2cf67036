package client

import (
	"errors"
	"fmt"
)

// ProblemBase prefixes the type of every problem document idemgate
// answers with.
const ProblemBase = "https://idemgate.dev/problems/"

// Sentinel errors, matched with errors.Is against an *Error of that
// problem type.
var (
	// ErrKeyReuse: the key was used with another request (422): a bug in
	// the caller, never retried.
	ErrKeyReuse = errors.New("client: idempotency key used with another request")
	// ErrTokenUsed: the form token was consumed already, or is unknown or
	// expired (409).
	ErrTokenUsed = errors.New("client: form token already used")
	// ErrOutcomeUnknown: the first request with this key may or may not
	// have been carried out (409): check before sending a new request.
	ErrOutcomeUnknown = errors.New("client: outcome of the key's request unknown")
	// ErrInProgress: the key's first request was still running when the
	// retries ran out.
	ErrInProgress = errors.New("client: the key's request is still in progress")
	// ErrUnavailable: no node could serve the request (503, or none
	// reachable) when the retries ran out.
	ErrUnavailable = errors.New("client: idemgate unavailable")
	// ErrNotFound: no such KV key (404).
	ErrNotFound = errors.New("client: not found")
	// ErrExists: SETNX found the key set (409).
	ErrExists = errors.New("client: key exists")
	// ErrVersionMismatch: compare-and-set or compare-and-delete found the
	// key at another version, or absent (412).
	ErrVersionMismatch = errors.New("client: version mismatch")
)

// problemErrors maps a problem type to its sentinel.
var problemErrors = map[string]error{
	"key-reuse":        ErrKeyReuse,
	"token-used":       ErrTokenUsed,
	"outcome-unknown":  ErrOutcomeUnknown,
	"in-progress":      ErrInProgress,
	"unavailable":      ErrUnavailable,
	"not-ready":        ErrUnavailable,
	"not-found":        ErrNotFound,
	"version-mismatch": ErrVersionMismatch,
}

// Error is an answer of idemgate's own (a problem document, RFC 9457), or
// the last failure when retries ran out.
type Error struct {
	Status int    // the HTTP status; 0 when no node answered
	Type   string // the problem type's slug: "key-reuse", "in-progress", ...
	Detail string
	Key    string // the idempotency key, for Do
	// Attempts is how many requests were sent.
	Attempts int
	// Err is the transport error, when no node answered.
	Err error
}

func (e *Error) Error() string {
	switch {
	case e.Err != nil:
		return fmt.Sprintf("client: %d attempts, no answer: %v", e.Attempts, e.Err)
	case e.Detail != "":
		return fmt.Sprintf("client: %d %s: %s", e.Status, e.Type, e.Detail)
	}
	return fmt.Sprintf("client: %d %s", e.Status, e.Type)
}

// Is matches the sentinel of e's problem type.
func (e *Error) Is(target error) bool {
	if s, ok := problemErrors[e.Type]; ok && s == target {
		return true
	}
	return target == ErrUnavailable && e.Status == 0
}

func (e *Error) Unwrap() error { return e.Err }
