package api

import (
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// readers are the operations (ids of the route table) whose handlers, or
// the services they call, answer a code themselves, and how.
type readers struct{ ops, how string }

// readByHandlers are the codes the API's operations answer in words of
// their own, beside the store's errors storeapi.Answers answers over HTTP.
var readByHandlers = map[command.Code]readers{
	command.CodeExists: {"kvPut issueToken beginOnce acquireLock", "PUT nx: 409 with the current value and its version; " +
		"a begin: the claim's holder answers (409 in-progress, or 200 completed); an acquire: 409 locked; " +
		"an issue: a 122-bit random token taken already, answered 500 internal (httpx.IssueToken) as a node's fault"},
	command.CodeNotFound: {"kvPut kvDelete recordRelease consumeToken acquireLock", "PUT: only SET XX answers it, and PUT " +
		"never sends XX; DELETE, a record's release: 404 not-found; a consume: 409 token-used (tokens.ErrUsed); " +
		"an acquire: the leave of a wait given up, which finds nothing to give back (locks)"},
	command.CodeVersionMismatch: {"kvPut kvDelete", "412 version-mismatch (If-Match), or value-mismatch (If-Value)"},
	command.CodeNotInteger:      {"kvIncr", "409 not-integer"},
	command.CodeOverflow:        {"kvIncr", "409 out-of-range: the sum would overflow"},
	command.CodeOutOfRange:      {"kvIncr", "409 out-of-range: the sum would leave [min, max]"},
	command.CodeFenceMismatch: {"recordRelease renewOnce completeOnce releaseOnce renewLock releaseLock", "a record's " +
		"release sends fence 0, an operator's, which no fence refuses; once's and locks' holders: 409 stale-fence " +
		"(once.ErrStaleFence, locks.ErrStaleFence)"},
	command.CodeWrongState: {"recordRelease renewOnce completeOnce releaseOnce", "a record's release: only an owner's " +
		"fence is refused so; once's holders: 409 stale-fence, the claim is completed"},
	command.CodeKeyReuse:  {"beginOnce", "422 key-reuse"},
	command.CodeQueueFull: {"acquireLock", "429 too-many-requests"},
}

// TestEveryCodeAnswered: every code a store operation of an API route may
// answer (its row's Op.Codes) is a success, has an HTTP answer in
// storeapi.Answers, or is one the route's handler answers itself
// (readByHandlers): a code a row gains is answered on purpose, not by
// accident as 500 internal. The twin of package resp's test.
func TestEveryCodeAnswered(t *testing.T) {
	users := map[command.Code][]string{} // code -> ids of the operations that may meet it
	for _, r := range (&handlers{}).routes() {
		for _, o := range r.ops {
			for _, typ := range o.stores {
				for code := range typ.Op().Codes.All() {
					if !slices.Contains(users[code], o.id) {
						users[code] = append(users[code], o.id)
					}
				}
			}
		}
	}
	if len(users) == 0 {
		t.Fatal("no route of the API declares a store operation: the table is not read")
	}
	for code, ids := range users {
		err := (&command.Result{Code: code}).Err()
		if err == nil || storeapi.ProblemOf(err).Status != 0 {
			continue
		}
		sort.Strings(ids)
		for _, id := range ids {
			if !slices.Contains(strings.Fields(readByHandlers[code].ops), id) {
				t.Errorf("code %d (%v) of %s: no HTTP answer in storeapi.Answers, and its handler does not read it", code, err, id)
			}
		}
	}
	for code, r := range readByHandlers {
		for _, id := range strings.Fields(r.ops) {
			if !slices.Contains(users[code], id) {
				t.Errorf("code %d is no code of %s's store operations: drop it from readByHandlers", code, id)
			}
		}
	}
}

// TestStorageAnswered: a failure of the state machine's storage is a 500
// internal over HTTP, said as is, and "ERR" and the store's text over
// RESP: one row of storeapi.Answers, not each face's fallback.
func TestStorageAnswered(t *testing.T) {
	a, ok := storeapi.AnswerFor((&command.Result{Code: command.CodeStorage}).Err())
	if !ok || a.HTTP != (storeapi.Problem{Status: 500, Slug: "internal", Title: "Internal error"}) || a.RESP != "" {
		t.Errorf("CodeStorage: row %+v (found %v), want a 500 internal and ERR with the store's text", a, ok)
	}
}
