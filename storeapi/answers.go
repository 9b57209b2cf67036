package storeapi

import (
	"errors"
	"net/http"

	"github.com/idemgate/idemgate/command"
)

// Answer is what the faces answer for one error of the store: the HTTP
// faces a problem document (internal/httpx), the Redis face an error
// reply (package resp). Every face reads Answers, so an error the store
// gains is answered on every face from one row.
type Answer struct {
	Err error
	// HTTP is the problem answered over HTTP; the zero Problem: none (the
	// face answers it as an internal error, or maps it itself first).
	HTTP Problem
	// RESP is the reply line (without '-'); "": "ERR " and the error's own
	// text (it says what was wrong).
	RESP string
}

// Problem is an HTTP problem answer: its status, its type's slug and its
// title (RFC 9457).
type Problem struct {
	Status int
	Slug   string
	Title  string
}

// Replies shared by several rows of Answers.
const (
	respNoLeader = "CLUSTERDOWN no leader: the cluster has no quorum or is electing one; retry"
)

// The problems of the store's errors.
var (
	problemUnavailable = Problem{http.StatusServiceUnavailable, "unavailable", "Store unavailable"}
	problemNotReady    = Problem{http.StatusServiceUnavailable, "not-ready", "Node not ready"}
)

// Answers is the one table from the store's errors to the faces' answers:
// the first row whose Err the error is (errors.Is) wins. Unavailability
// (Unavailable) is a 503 with Retry-After over HTTP; over RESP it is
// CLUSTERDOWN when nothing was done (clients may retry), but a timeout
// leaves a write's fate unknown and must not be retried blindly: it is a
// plain ERR. A removed node answers over HTTP as its readyz does.
var Answers = []Answer{
	{ErrRemoved, problemNotReady, "ERR this node was removed from the cluster; use another"},
	{ErrNoLeader, problemUnavailable, respNoLeader},
	{ErrNotLeader, problemUnavailable, respNoLeader},
	{ErrTimeout, problemUnavailable, "ERR timeout: the command may or may not have been applied"},
	{ErrShutdown, problemUnavailable, "ERR this node is shutting down; use another"},
	{ErrDiskFull, problemUnavailable, "ERR disk nearly full: writes are refused until space is freed"},
	{ErrClockJump, problemUnavailable, "CLUSTERDOWN the leader's clock jumped ahead; a new leader is being chosen; retry"},
	{ErrTooLarge, Problem{http.StatusRequestEntityTooLarge, "body-too-large", "Request body too large"},
		"ERR command too large for the store"},
	{ErrReservedKey, Problem{http.StatusBadRequest, "invalid-key", "Invalid key"}, ""}, // its own text: which keys are reserved
	{command.ErrNotInteger, Problem{}, "ERR value is not an integer or out of range"},
	{command.ErrWrongType, Problem{http.StatusConflict, "wrong-type", "Wrong kind of value"},
		"WRONGTYPE Operation against a key holding the wrong kind of value"},
	{command.ErrOverflow, Problem{}, "ERR increment or decrement would overflow"},
	{command.ErrTooLong, Problem{}, "ERR string exceeds maximum allowed size (proto-max-bulk-len)"},
	{command.ErrNotFloat, Problem{}, "ERR value is not a valid float"},
	{command.ErrNotFinite, Problem{}, "ERR increment would produce NaN or Infinity"},
	{command.ErrBadCommand, Problem{http.StatusBadRequest, "bad-request", "Bad request"}, ""}, // its own text: what was wrong with the key or value
	// The state machine could not read or write its state: a node's
	// fault, said as is on both faces.
	{command.ErrStorage, Problem{http.StatusInternalServerError, "internal", "Internal error"}, ""},
}

// AnswerFor is the row of Answers for err; false when none matches.
func AnswerFor(err error) (Answer, bool) {
	for _, a := range Answers {
		if errors.Is(err, a.Err) {
			return a, true
		}
	}
	return Answer{}, false
}

// ProblemOf is the HTTP problem of err's row (its own: the table's answer
// for that error alone); the zero Problem when it has none.
func ProblemOf(err error) Problem {
	a, _ := AnswerFor(err)
	return a.HTTP
}
