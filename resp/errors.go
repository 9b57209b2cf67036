package resp

import (
	"github.com/idemgate/idemgate/command"
	"github.com/idemgate/idemgate/storeapi"
)

// Replies of Redis that clients and scripts depend on, word for word.
const (
	msgSyntax       = "ERR syntax error"
	msgNoAuth       = "NOAUTH Authentication required."
	msgWrongPass    = "WRONGPASS invalid username-password pair or user is disabled."
	msgNoPassword   = "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?"
	msgDBRange      = "ERR DB index is out of range"
	msgSameObject   = "ERR source and destination objects are the same"
	msgIntRange     = "ERR value is out of range, value must between -2147483648 and 2147483647"
	msgNoProto      = "NOPROTO unsupported protocol version"
	msgMaxClients   = "ERR max number of clients reached"
	msgNotSupported = "ERR %s is not supported by idemgate: use MULTI/EXEC (with WATCH), SET NX, SET ... GET, GETDEL, INCR or IDEM.CONSUME for atomic steps"
)

// Replies the store's errors are answered with (storeapi.Answers), which
// commands also answer before anything reaches the store.
var (
	msgNotInteger = errorReply(command.ErrNotInteger)
	msgOverflow   = errorReply(command.ErrOverflow)
	msgNotFloat   = errorReply(command.ErrNotFloat)
	msgWrongType  = errorReply(command.ErrWrongType)
)

// errorReply is the reply line (without '-') for an error of the store:
// its row of the store's answers (storeapi.Answers, which the HTTP faces
// read too), else "ERR " and its text.
func errorReply(err error) string {
	if a, ok := storeapi.AnswerFor(err); ok && a.RESP != "" {
		return a.RESP
	}
	return "ERR " + err.Error()
}
